package jsjobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crew-go/crew/jobs"
)

// Cancelling a job. The rule that keeps one terminal state, whoever writes
// last: a job's end, its cancel and its retries are all written over the
// revision of the record they read (swap), so of a cancel and an end that
// race, the second finds the record changed, reads it ended, and gives way
// (the end is acked without a write; the cancel answers the end's state).
//
// A job waiting (queued or scheduled) has its message deleted from the
// stream, so that it never runs even past its record's retention; a
// running job has its context cancelled on whichever process runs it,
// told by a plain NATS message on <stream>-cancel.<id> that every runner
// listens to (no store write: a runner that misses it, cut off, finds the
// record canceled when it writes its end, and gives way).

// Cancel implements jobs.Canceler.
func (r *Runner) Cancel(ctx context.Context, id string) (jobs.Record, jobs.State, error) {
	if !jobs.ValidID(id) {
		return jobs.Record{}, "", jobs.ErrNotFound
	}
	if err := r.connected(); err != nil {
		return jobs.Record{}, "", err
	}
	find := r.store.find
	for range 5 {
		// seq: the waiting job's message, deleted once canceled.
		rec, rev, seq, err := find(ctx, id)
		if err != nil {
			return jobs.Record{}, "", err
		}
		switch {
		case rec.State == jobs.Canceled:
			return rec, rec.State, nil
		case rec.State.Terminal():
			return rec, rec.State, &jobs.EndedError{State: rec.State}
		}
		was := rec.State
		if was == jobs.Queued && seq != 0 {
			// Get's view of delivery is cached: a cancel asks the consumer
			// now, so that a first run just started is cancelled as running.
			if r.store.deliveredWithin(ctx, cmp.Or(rec.Queue, jobs.DefaultQueue), recordPriority(rec), 0) >= seq {
				was = jobs.Running
			}
		}
		rec.State, rec.Finished, rec.NextRun = jobs.Canceled, time.Now(), time.Time{}
		rec.Error, rec.CanceledWhile = "canceled while "+string(was), was
		if _, err := r.store.swap(ctx, rec, rev); errors.Is(err, errChanged) {
			find = r.store.findAfter(rev) // an end or another cancel came first: read it again, fresh
			continue
		} else if err != nil {
			return jobs.Record{}, "", err
		}
		r.instruments.canceled(was)
		if seq != 0 && was != jobs.Running {
			// Never delivered: gone from the stream, it cannot run even
			// once its record has expired. A failure leaves it to be acked
			// unrun when delivered, as the record says canceled.
			_ = r.store.jobs.DeleteMsg(context.WithoutCancel(ctx), seq)
		}
		// Told to every runner whatever the state read: a job read as
		// queued may have just started.
		_ = r.js.Conn().Publish(r.layout.cancel(id), nil)
		return rec, was, nil
	}
	return jobs.Record{}, "", fmt.Errorf("%w: job %s's record keeps changing", jobs.ErrUnavailable, id)
}
