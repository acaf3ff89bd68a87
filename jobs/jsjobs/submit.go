package jsjobs

import (
	"context"
	"fmt"
	"time"

	"github.com/crew-go/crew/jobs"
)

// Submit implements Runner: the job is published, and accepted once the
// stream has stored it; its record follows from the message (Get reads a
// waiting job from it, and the first run writes the record). The message
// id is the job's, so that a publish retried by the client library is
// stored once.
func (r *Runner) Submit(ctx context.Context, spec jobs.Spec) (jobs.Record, error) {
	if err := r.parentsKnown(ctx, spec.WaitsFor()); err != nil {
		return jobs.Record{}, err
	}
	return r.submit(ctx, spec, r.connected)
}

// submit is Submit, its parents known (parentsKnown), with ready saying
// whether to try the store at all: a
// Runner's own Submit refuses at once while its store is known to be out
// (connected); a Partitioned's tries the stream whatever its bucket's
// health says (streamReachable), within its Failover, since a submit
// writes the stream alone.
func (r *Runner) submit(ctx context.Context, spec jobs.Spec, ready func() error) (jobs.Record, error) {
	job, err := r.kinds.Prepare(spec, r.defaultTimeout, r.maxTimeout)
	if err != nil {
		return jobs.Record{}, err
	}
	if err := ready(); err != nil {
		return jobs.Record{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	if err := r.acceptable(ctx, job); err != nil {
		return jobs.Record{}, err
	}
	if len(job.After) > 0 {
		return r.submitWaiting(ctx, spec, job)
	}
	rec := accepted(r.newID(), spec.Kind, time.Now(), job)
	if _, err := r.store.publish(ctx, rec.ID, job, 0, 0); err != nil {
		return jobs.Record{}, storeError(err)
	}
	return rec, nil
}

// accepted is the record of a job just accepted: queued, or scheduled.
func accepted(id, kind string, created time.Time, job jobs.Prepared) jobs.Record {
	rec := jobs.Record{ID: id, Kind: kind, Queue: queueName(job.Queue), State: jobs.Queued, Created: created, Submitter: job.Submitter}
	if !job.RunAt.IsZero() {
		rec.State, rec.RunAt = jobs.Scheduled, job.RunAt
	}
	return rec
}

// acceptable refuses a job the store cannot take: too big, not
// schedulable, or in a queue whose consumer cannot be made.
func (r *Runner) acceptable(ctx context.Context, job jobs.Prepared) error {
	if err := sized(job, maxMessage(r.js.Conn())); err != nil {
		return err
	}
	if err := r.schedulable(job); err != nil {
		return err
	}
	return r.queueKnown(ctx, job.Queue)
}

// schedulable refuses a job due later than MaxDelay, or later at all on a
// stream that does not allow message schedules.
func (r *Runner) schedulable(job jobs.Prepared) error {
	if job.RunAt.IsZero() {
		return nil
	}
	if err := job.Within(r.maxDelay); err != nil {
		return err
	}
	if !r.store.schedules {
		return fmt.Errorf("%w: the jobs' stream does not allow message schedules (it was made without them, with discard new)", jobs.ErrUnavailable)
	}
	return nil
}
