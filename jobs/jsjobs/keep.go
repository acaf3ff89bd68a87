package jsjobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/natsjs"
)

// writeLate writes a kept end once; ErrUnavailable while the store is out.
// Written or given way, the end is counted as finish counts it.
func (r *Runner) writeLate(ctx context.Context, e lateEnd) error {
	var err error
	if e.rev == 0 {
		// A first run's end, over no record. Its job's message, acked once
		// the job is settled elsewhere (ended, canceled), must still be in
		// the stream: else the job's own record may have expired since, and
		// the end would make up a record of a job that ended otherwise.
		_, _, err = r.store.message(ctx, e.rec.ID, r.store.anyReplica)
		if errors.Is(err, jobs.ErrNotFound) {
			err = errEnded
		}
	}
	if err == nil {
		_, err = r.keepOnce(ctx, e.rev, e.rec)
	}
	switch {
	case err == nil:
		r.health.ok()
		r.instruments.ended(e.rec.State, true)
	case errors.Is(err, errEnded):
		r.instruments.skipped()
		return nil
	case errors.Is(err, jobs.ErrUnavailable):
		r.health.outage(err)
	default:
		r.logWarn("a job's late end could not be written; it will run again", "job", e.rec.ID, "error", err)
		return nil
	}
	return err
}

// retry records the job retrying, due after d, and has the Source hand it
// back with that delay. The record is kept as finish keeps an end, while
// the store is out and the lease holds.
func (r *Runner) retry(ctx context.Context, rev uint64, rec jobs.Record, d time.Duration, why string) error {
	rec.State, rec.NextRun = jobs.Retrying, time.Now().Add(d)
	if err := r.keep(ctx, rev, rec); err != nil {
		return r.gaveWay(err)
	}
	r.instruments.backedOff(ctx, rec.Kind, why)
	return natsjs.RetryAfter(fmt.Errorf("job %s %s: next run in %v", rec.ID, why, d.Round(time.Millisecond)), d)
}

// finish records a job's end. If the record cannot be written at all the
// job is handed back and runs again: at-least-once.
func (r *Runner) finish(ctx context.Context, rev uint64, rec jobs.Record, st jobs.State, result json.RawMessage, msg string) error {
	rec.State, rec.Result, rec.Error, rec.Finished, rec.NextRun = st, result, msg, time.Now(), time.Time{}
	if st == jobs.Succeeded {
		rec.Spec = nil // kept only for a Retry, of a job that did not succeed
	}
	r.instruments.spanOutcome(ctx, string(st))
	return r.writeEnd(ctx, rev, rec, false)
}

// writeEnd writes a run's end over revision rev (keep) and counts it
// (late: an end kept after its lease was lost); an end the lease's loss
// left unwritten is kept to write later (late.go).
func (r *Runner) writeEnd(ctx context.Context, rev uint64, rec jobs.Record, late bool) error {
	if err := r.keep(ctx, rev, rec); err != nil {
		if ctx.Err() != nil && errors.Is(err, jobs.ErrUnavailable) {
			r.late.keep(rec, rev)
		}
		return r.gaveWay(err)
	}
	r.instruments.ended(rec.State, late)
	return nil
}

// keep writes a record after a run, over the revision its run read (0:
// none), so that an end and a cancel that race leave one terminal state:
// a record changed meanwhile is read again, and if it has ended (canceled,
// or ended by another run of the job), or ended and been retried by hand
// since, keep gives way with errEnded; a record changed but live (another
// run's start) is written over. While the
// store is out, the write is tried again, the job's lease kept, until it
// succeeds or ctx ends (the lease lost): an outage of a few seconds (a
// leader elected again) costs the job no second run. An end still
// unwritten then is kept to write later (late.go).
func (r *Runner) keep(ctx context.Context, rev uint64, rec jobs.Record) error {
	wctx := context.WithoutCancel(ctx)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		var err error
		rev, err = r.keepOnce(wctx, rev, rec)
		if err == nil {
			r.health.ok()
			return nil
		}
		if !errors.Is(err, jobs.ErrUnavailable) {
			return err
		}
		r.health.outage(err)
		select {
		case <-ctx.Done():
			// The lease lost or the run cancelled: the message is left to
			// come back or handed back, not run again here, so this is no
			// run put off (StoreHandBacks).
			return natsjs.Unavailable(err)
		case <-time.After(wait):
		}
	}
}

// keepOnce is one try of keep: nil once written, errEnded when the record
// has ended meanwhile (or ended and been retried by hand since),
// ErrUnavailable while the store is out; rev is the revision the next try
// writes over.
func (r *Runner) keepOnce(ctx context.Context, rev uint64, rec jobs.Record) (uint64, error) {
	for {
		_, err := r.store.swap(ctx, rec, rev)
		if !errors.Is(err, errChanged) {
			return rev, err
		}
		var now jobs.Record
		now, rev, err = r.store.leaderRecordAfter(ctx, rec.ID, rev) // not a replica's stale copy
		if err != nil {
			return rev, err
		}
		// A record of another Retries was ended and retried by hand
		// since this run read it: its queued or running record is the
		// Retry's, a life of the job after this run's, and an end of
		// this run written over it would undo the Retry (its message
		// would then find the job ended and not run it).
		if now.State.Terminal() || now.Retries != rec.Retries {
			return rev, errEnded
		}
	}
}

// gaveWay settles a run whose record write gave way: acked, counted
// skipped, when the job had ended meanwhile; err itself otherwise.
func (r *Runner) gaveWay(err error) error {
	if errors.Is(err, errEnded) {
		r.instruments.skipped()
		return nil
	}
	return err
}
