package jsjobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crew-go/crew/jobs"
)

// attempts is the most runs job may take: its spec's or kind's bound, else
// the runner's.
func (r *Runner) attempts(job jobs.Prepared) int {
	if job.MaxAttempts > 0 {
		return job.MaxAttempts
	}
	return r.maxAttempts
}

// marking is what mark found: the record marked running at rev, or the
// delivery settled (err nil: ack; else nak) without a run that counts.
type marking struct {
	rec     jobs.Record
	rev     uint64
	settled bool
	err     error
}

// mark reads the job's record and writes it running, one more attempt
// (unless it is a first delivery's of a job without a record: its run
// writes nothing before its end):
// unless it already ended (acked, not run), the spec is bad (says why)
// or its runs were all interrupted as often as allowed (failed, acked), or
// the store cannot be reached (run again later, no attempt counted). The write
// is made only over the record read, so a run of the same job elsewhere
// (a redelivery after a lost lease) that ended meanwhile is not undone; a
// write refused is decided again on the record the leader holds since.
func (r *Runner) mark(ctx context.Context, d delivery, j decoded, first bool) marking {
	id, maxAttempts := j.id, r.attempts(j.job)
	settle := func(err error) marking { return marking{settled: true, err: err} }
	// The record's writes outlive a job cancelled by a hard stop.
	wctx := context.WithoutCancel(ctx)
	rec, rev, err := r.store.load(ctx, id)
	if err == nil || errors.Is(err, jobs.ErrNotFound) {
		r.health.ok()
	}
	for refusals := 0; ; refusals++ {
		write := true
		switch {
		case errors.Is(err, jobs.ErrNotFound):
			// The message is the job; a first run writes nothing before
			// its end.
			rec = jobs.Record{ID: id, State: jobs.Queued, Created: d.published}
			write = !first
		case err != nil:
			return settle(r.unavailable(err))
		case rec.State == jobs.Waiting && d.retryOf != rev:
			// A waiting job runs only from its release, named by its
			// waiting revision: this one's was grown (AddAfter) after a
			// release was published, and waits for its new parents.
			r.logWarn("a job's release from before it took more parents: acked, not run", "job", id, "rev", rev, "retry_of", d.retryOf)
			r.instruments.skipped()
			return settle(nil)
		case !rec.State.Terminal() && d.before(rec):
			// A message of a run before the job's latest Retry (handed
			// back with a backoff, then the job canceled and retried): the
			// Retry's own message runs it.
			r.logWarn("a job's message from before its latest retry: acked, not run", "job", id, "retries", rec.Retries, "retry_of", d.retryOf)
			r.instruments.skipped()
			return settle(nil)
		case rec.State.Terminal() && (d.retryOf == 0 || d.retryOf != rev):
			if d.retryOf != 0 {
				// Rare: a Retry that gave way to another; said, so that a
				// retried job that does not run can be traced.
				r.logWarn("a retry's message finds its job ended otherwise: acked, not run", "job", id, "state", string(rec.State), "rev", rev, "retry_of", d.retryOf)
			}
			r.instruments.skipped()
			return settle(nil)
		case rec.State.Terminal():
			// The message of a Retry of this very record, delivered before
			// the Retry wrote it queued.
			rec = queuedAgain(rec)
		}
		if j.spec != nil {
			rec.Spec = j.spec
		}
		if d.submitter != "" {
			rec.Submitter = d.submitter
		}
		rec.Queue = queueName(r.layout.queueOf(d.subject))
		if j.kind != "" {
			rec.Kind = j.kind
		}
		if j.bad != "" {
			return settle(r.finish(ctx, rev, rec, jobs.Failed, nil, j.bad))
		}
		if rec.Attempts >= maxAttempts {
			// Its attempts are spent, the last interrupted: a job that kills
			// its process would otherwise run for ever.
			return settle(r.finish(ctx, rev, rec, jobs.Failed, nil, fmt.Sprintf("given up: %d runs started, the last one interrupted", rec.Attempts)))
		}
		rec.State, rec.Attempts, rec.Error, rec.NextRun = jobs.Running, rec.Attempts+1, "", time.Time{}
		if d.attempt > 0 {
			rec.Deliveries = d.attempt
		}
		rec.Trace = r.instruments.runTrace(ctx, rec)
		if !write {
			return marking{rec: rec, rev: rev}
		}
		var wrote uint64
		wrote, err = r.store.swap(wctx, rec, rev)
		switch {
		case err == nil:
			return marking{rec: rec, rev: wrote}
		case !errors.Is(err, errChanged):
			return settle(r.unavailable(err)) // no attempt spent
		case refusals == maxRefusals:
			return settle(r.unavailable(fmt.Errorf("%w: job %s's record keeps changing", jobs.ErrUnavailable, id)))
		}
		rec, rev, err = r.store.leaderRecordAfter(ctx, id, rev)
	}
}

// maxRefusals bounds how often a write of a record, refused because it
// changed, is decided again on what it changed to.
const maxRefusals = 5
