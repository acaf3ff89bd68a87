package jsstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/crew-go/crew/natsjs"
	"github.com/crew-go/crew/service/internal/jobs"
	"go.opentelemetry.io/otel/trace"
)

// errTimedOut ends a job's context at its own timeout, to tell it from the
// end of the task's context (a hard stop, a lost lease).
var errTimedOut = errors.New("job timed out")

// Handle is the natsjs.Handler of the jobs' stream: it runs one delivered
// job and keeps its record. Returning nil acks the message, an error naks
// it for a later run. It is idempotent: a job whose record is already
// terminal is acked without running again. A run that ends, whatever its
// outcome (succeeded, failed, timed_out), is recorded and acked: a job is
// run again only when its run was interrupted, never for failing, and at
// most MaxAttempts runs are started. An outage of the store is not the
// job's failure: before the run the job is handed back (natsjs.Unavailable)
// with no attempt counted; after it, the record of its end is written again
// while the job's lease holds, rather than run the job again.
func (r *Runner) Handle(ctx context.Context, m *natsjs.Msg) error {
	var published time.Time
	if md, err := m.Raw().Metadata(); err == nil {
		published = md.Timestamp
	}
	return r.handle(ctx, delivery{subject: m.Subject(), data: m.Data(), published: published})
}

// delivery is what handle needs of a message.
type delivery struct {
	subject   string
	data      []byte
	published time.Time
}

func (r *Runner) handle(ctx context.Context, d delivery) error {
	id, ok := strings.CutPrefix(d.subject, r.subject)
	if !ok || !jobs.ValidID(id) {
		r.logWarn("not a job: acked without running", "subject", d.subject)
		return nil
	}
	// The record's writes outlive a job cancelled by a hard stop.
	wctx := context.WithoutCancel(ctx)
	rec, rev, err := r.load(ctx, id)
	if err == nil || errors.Is(err, jobs.ErrNotFound) {
		r.health.ok()
	}
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		// Expired while the job waited (or the answer to its publish was
		// lost and Submit deleted it): the message is the job.
		rec = jobs.Record{ID: id, State: jobs.Queued, Created: d.published}
	case err != nil:
		return r.unavailable(err)
	case rec.State.Terminal():
		r.counts.skipped.Add(1)
		return nil
	}
	var spec jobs.Spec
	dec := json.NewDecoder(bytes.NewReader(d.data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return r.finish(ctx, rec, jobs.Failed, nil, "undecodable job: "+err.Error())
	}
	rec.Kind = spec.Kind
	timeout, err := spec.Validate(r.defaultTimeout, r.maxTimeout)
	if err != nil {
		return r.finish(ctx, rec, jobs.Failed, nil, err.Error())
	}
	if r.maxAttempts > 0 && rec.Attempts >= r.maxAttempts {
		// Its runs were all interrupted: a job that kills its process would
		// otherwise be retried for ever.
		return r.finish(ctx, rec, jobs.Failed, nil, fmt.Sprintf("given up: %d runs started, none finished", rec.Attempts))
	}
	rec.State, rec.Attempts, rec.Error = jobs.Running, rec.Attempts+1, ""
	rec.Trace = runTrace(ctx, rec)
	// Only over the record just read: a run of the same job elsewhere (a
	// redelivery after a lost lease) that ended meanwhile is not undone.
	rev, err = r.swap(wctx, rec, rev)
	if errors.Is(err, errChanged) {
		if again, _, lerr := r.load(ctx, id); lerr == nil && again.State.Terminal() {
			r.counts.skipped.Add(1)
			return nil
		}
		rev, err = r.put(wctx, rec)
	}
	if err != nil {
		return r.unavailable(err) // not run: no attempt spent
	}

	jctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimedOut)
	started := time.Now()
	v, err := spec.Run(jctx)
	ran := time.Since(started)
	timedOut := errors.Is(context.Cause(jctx), errTimedOut)
	cancel()
	outcome := string(jobs.Failed)
	switch {
	case err == nil:
		outcome = string(jobs.Succeeded)
	case ctx.Err() != nil:
		outcome = interrupted
	case timedOut:
		outcome = string(jobs.TimedOut)
	}
	r.observeRun(ctx, spec.Kind, outcome, ran)
	switch outcome {
	case string(jobs.Succeeded):
		return r.finish(ctx, rec, jobs.Succeeded, v, "")
	case interrupted:
		// Interrupted, not failed: queued again, to run again here or
		// elsewhere.
		why := context.Cause(ctx)
		if why == nil { // a context that keeps no cause (a lost lease)
			why = ctx.Err()
		}
		rec.State, rec.Error = jobs.Queued, "interrupted ("+why.Error()+"), to run again"
		trace.SpanFromContext(ctx).SetAttributes(AttrJobOutcome.String(interrupted))
		// Unless another run has written it since (the lease lost, the job
		// redelivered); if this fails, the record says running until the
		// next run.
		_, _ = r.swap(wctx, rec, rev)
		r.counts.requeued.Add(1)
		return fmt.Errorf("job %s interrupted: %w", id, why)
	case string(jobs.TimedOut):
		return r.finish(ctx, rec, jobs.TimedOut, nil, fmt.Sprintf("job timed out after %v", timeout))
	default:
		return r.finish(ctx, rec, jobs.Failed, nil, err.Error())
	}
}

// finish records a job's end. While the store is out, the write is tried
// again, the job's lease kept, until it succeeds or ctx ends (a hard stop,
// the lease lost): an outage of a few seconds (a leader elected again)
// costs the job no second run. If the record cannot be written at all the
// job is handed back and runs again: at-least-once.
func (r *Runner) finish(ctx context.Context, rec jobs.Record, st jobs.State, result any, msg string) error {
	rec.State, rec.Result, rec.Error, rec.Finished = st, result, msg, time.Now()
	runOutcome(ctx, st)
	wctx := context.WithoutCancel(ctx)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		_, err := r.put(wctx, rec)
		if err == nil {
			r.health.ok()
			break
		}
		if !errors.Is(err, jobs.ErrUnavailable) {
			return err
		}
		r.health.outage(err)
		select {
		case <-ctx.Done():
			return r.unavailable(err)
		case <-time.After(wait):
		}
	}
	switch st {
	case jobs.Succeeded:
		r.counts.succeeded.Add(1)
	case jobs.TimedOut:
		r.counts.timedOut.Add(1)
	default:
		r.counts.failed.Add(1)
	}
	return nil
}

func (r *Runner) logWarn(msg string, args ...any) {
	if r.log != nil {
		r.log.Warn(msg, args...)
	}
}

// Outcomes counts what this process's Handle did with the jobs delivered
// to it.
type Outcomes struct {
	Succeeded, Failed, TimedOut uint64 // runs ended, recorded and acked
	Requeued                    uint64 // runs interrupted, handed back to run again
	Skipped                     uint64 // redeliveries of jobs already finished: acked, not run
}

type outcomeCounts struct {
	succeeded, failed, timedOut, requeued, skipped atomic.Uint64
}

// Outcomes returns the counts so far.
func (r *Runner) Outcomes() Outcomes {
	return Outcomes{
		Succeeded: r.counts.succeeded.Load(), Failed: r.counts.failed.Load(), TimedOut: r.counts.timedOut.Load(),
		Requeued: r.counts.requeued.Load(), Skipped: r.counts.skipped.Load(),
	}
}
