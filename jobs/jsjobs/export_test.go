package jsjobs

import (
	"encoding/json"

	"context"
	"github.com/crew-go/crew/jobs"
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

// Revision reads the revision of job id's record.
func (r *Runner) Revision(ctx context.Context, id string) (uint64, error) {
	_, rev, err := r.load(ctx, id)
	return rev, err
}

// HandleRetryDelivery runs Handle's logic on a delivery (the first if
// first) of a Retry's message of job id, naming record revision retryOf.
func (r *Runner) HandleRetryDelivery(ctx context.Context, id string, retryOf uint64, spec *jobs.Spec, first bool) error {
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return r.handle(ctx, delivery{subject: r.subject + id, data: data, published: time.Now(), attempt: map[bool]int{true: 1, false: 2}[first], retryOf: retryOf})
}

// SetBetweenReads has f called between find's read of a job's record and
// its read of the job's message.
func (r *Runner) SetBetweenReads(f func(id string)) { r.betweenReads = f }
