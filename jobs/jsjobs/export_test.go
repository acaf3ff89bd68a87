package jsjobs

import (
	"context"
	"time"
)

// HandleDelivery runs Handle's logic on a delivery made up by a test.
func (r *Runner) HandleDelivery(ctx context.Context, subject string, data []byte) error {
	return r.handle(ctx, delivery{subject: subject, data: data, published: time.Now()})
}

// HandleProbe records a probe's outcome, as WatchStore does.
func (r *Runner) HandleProbe(err error) { r.health.probed(err) }

// HandleFirstDelivery runs Handle's logic on a first delivery made up by a
// test: the run starts while its start is recorded.
func (r *Runner) HandleFirstDelivery(ctx context.Context, subject string, data []byte) error {
	return r.handle(ctx, delivery{subject: subject, data: data, published: time.Now(), attempt: 1})
}
