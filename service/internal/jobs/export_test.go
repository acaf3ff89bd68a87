package jobs

import (
	"context"
	"time"
)

// SetClock lets tests age records.
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// HandleDelivery runs Handle's logic on a delivery made up by a test.
func (r *JetStreamRunner) HandleDelivery(ctx context.Context, subject string, data []byte) error {
	return r.handle(ctx, delivery{subject: subject, data: data, published: time.Now()})
}

// HandleProbe records a probe's outcome, as WatchStore does.
func (r *JetStreamRunner) HandleProbe(err error) { r.health.probed(err) }
