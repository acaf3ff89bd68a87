package jsjobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/natsjs"
)

// ended records how a marked run ended: its end (succeeded, or failed or
// timed_out with its attempts spent or a permanent error), the job
// retrying after a backoff (or a snooze, which counts no attempt), or,
// interrupted by ctx (a hard stop, a lost lease), the job queued again and
// handed back to run again. An end or a retry is written off the run's
// slot (natsjs.Then), which the next job may take meanwhile: the run is
// over, and its message stays held, its lease kept, until the write is
// stored and the message settled on it.
func (r *Runner) ended(ctx context.Context, m marking, j decoded, run jobRun) error {
	rec := m.rec
	outcome := string(jobs.Failed)
	switch {
	case run.err == nil && !run.timedOut:
		// A run that ignored its context and returned past its timeout
		// timed out, whatever it returned (as memjobs records it).
		outcome = string(jobs.Succeeded)
	case errors.Is(context.Cause(ctx), errJobCanceled):
		outcome = string(jobs.Canceled)
	case ctx.Err() != nil:
		outcome = interrupted
	case run.timedOut:
		outcome = string(jobs.TimedOut)
	}
	r.instruments.ran(ctx, j.kind, outcome, run.took)
	switch outcome {
	case string(jobs.Succeeded):
		return natsjs.Then(func(ctx context.Context) error {
			return r.finish(ctx, m.rev, rec, jobs.Succeeded, run.value, "")
		})
	case string(jobs.Canceled):
		// Its record says so already, written by the cancel.
		r.instruments.spanOutcome(ctx, string(jobs.Canceled))
		return nil
	case interrupted:
		// Interrupted, not failed: queued again, to run again here or
		// elsewhere.
		why := context.Cause(ctx)
		if why == nil { // a context that keeps no cause (a lost lease)
			why = ctx.Err()
		}
		rec.State, rec.Error = jobs.Queued, "interrupted ("+why.Error()+"), to run again"
		// Unless another run has written it since (the lease lost, the job
		// redelivered); if this fails, the record says running until the
		// next run.
		_, _ = r.store.swap(context.WithoutCancel(ctx), rec, m.rev)
		r.instruments.requeued(ctx)
		return fmt.Errorf("job %s interrupted: %w", rec.ID, why)
	}
	if d, ok := jobs.SnoozedFor(run.err); ok {
		rec.Attempts-- // a snoozed run is no attempt
		return natsjs.Then(func(ctx context.Context) error {
			return r.retry(ctx, m.rev, rec, d, "snoozed")
		})
	}
	st, msg := jobs.TimedOut, fmt.Sprintf("job timed out after %v", j.job.Timeout)
	if outcome != string(jobs.TimedOut) {
		st, msg = jobs.Failed, run.err.Error()
	}
	rec.AddError(msg, time.Now())
	if jobs.IsPermanent(run.err) || rec.Attempts >= r.attempts(j.job) {
		return natsjs.Then(func(ctx context.Context) error {
			return r.finish(ctx, m.rev, rec, st, nil, rec.Error) // msg as AddError clipped it
		})
	}
	d := r.backoff(rec.Attempts)
	return natsjs.Then(func(ctx context.Context) error {
		return r.retry(ctx, m.rev, rec, d, string(st))
	})
}
