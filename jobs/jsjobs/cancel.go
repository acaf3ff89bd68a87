package jsjobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go"
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

// errJobCanceled is the cause of a run's context ended by a cancel.
var errJobCanceled = errors.New("job canceled")

// runs are the jobs running here, by id, with what cancels each: one job
// may have two runs here at once (its message redelivered after a lost
// lease while the first run ends, or a Retry's message beside it), and a
// cancel reaches both.
//
// They also keep the ids of the last maxNoticed cancels heard, running
// here or not: a job delivered here but not started (held for a free slot
// of the pool) was counted running by its cancel, which kept its message,
// and when it starts it must not run. Its first delivery, which would run
// it while its record is read, reads the record first instead (handle).
// A cancel missed (this runner cut off, or more than maxNoticed cancels
// since) leaves it to that read, which cancels the run as it starts.
type runs struct {
	mu      sync.Mutex
	byID    map[string][]*run
	noticed map[string]struct{}
	order   []string // noticed, a ring: next is the oldest once it is full
	next    int
	sub     *nats.Subscription
}

// maxNoticed bounds the cancels remembered (about 64 bytes each).
const maxNoticed = 4096

// run is one run registered in runs.
type run struct{ cancel context.CancelCauseFunc }

// listen subscribes to the cancels of the jobs of l.
func (rs *runs) listen(nc *nats.Conn, l layout) error {
	sub, err := nc.Subscribe(l.cancels(), func(m *nats.Msg) {
		rs.cancel(m.Subject[strings.LastIndexByte(m.Subject, '.')+1:])
	})
	rs.sub = sub
	return err
}

// cancel ends the context of every run of job id here, and notes that
// the job was canceled.
func (rs *runs) cancel(id string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.byID[id] {
		r.cancel(errJobCanceled)
	}
	if _, ok := rs.noticed[id]; ok {
		return
	}
	if rs.noticed == nil {
		rs.noticed = make(map[string]struct{})
	}
	rs.noticed[id] = struct{}{}
	if len(rs.order) < maxNoticed {
		rs.order = append(rs.order, id)
		return
	}
	delete(rs.noticed, rs.order[rs.next])
	rs.order[rs.next] = id
	rs.next = (rs.next + 1) % maxNoticed
}

// start registers a run of job id, cancelled by a cancel of the job, until
// the func it returns is called; canceled reports whether a cancel of the
// job was heard here already.
func (rs *runs) start(ctx context.Context, id string) (_ context.Context, done func(), canceled bool) {
	ctx, cancel := context.WithCancelCause(ctx)
	r := &run{cancel: cancel}
	rs.mu.Lock()
	if rs.byID == nil {
		rs.byID = make(map[string][]*run)
	}
	rs.byID[id] = append(rs.byID[id], r)
	_, canceled = rs.noticed[id]
	rs.mu.Unlock()
	return ctx, func() {
		rs.mu.Lock()
		others := slices.DeleteFunc(rs.byID[id], func(o *run) bool { return o == r })
		if len(others) == 0 {
			delete(rs.byID, id)
		} else {
			rs.byID[id] = others
		}
		rs.mu.Unlock()
		cancel(nil)
	}, canceled
}

// Close stops listing jobs (List and Counts then answer ErrUnavailable)
// and listening for cancels; the jobs running here can then be cancelled only
// through their records, and drops the ends of runs not yet written
// after their lease was lost (late.go): those jobs run again. A second
// Close does nothing.
func (r *Runner) Close() error {
	r.closing.Do(func() {
		r.closed.Store(true)
		r.listing.Do(func() {}) // none starts after this
		if r.listed != nil {
			r.listed.close()
		}
		if r.running.sub != nil {
			r.closeErr = r.running.sub.Unsubscribe()
		}
		r.closeLate()
	})
	return r.closeErr
}

// Cancel implements jobs.Canceler.
func (r *Runner) Cancel(ctx context.Context, id string) (jobs.Record, jobs.State, error) {
	if !jobs.ValidID(id) {
		return jobs.Record{}, "", jobs.ErrNotFound
	}
	if err := r.connected(); err != nil {
		return jobs.Record{}, "", err
	}
	find := r.find
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
			if info, err := r.cons.Info(ctx); err == nil && info.Delivered.Stream >= seq {
				was = jobs.Running
			}
		}
		rec.State, rec.Finished, rec.NextRun = jobs.Canceled, time.Now(), time.Time{}
		rec.Error, rec.CanceledWhile = "canceled while "+string(was), was
		if _, err := r.swap(ctx, rec, rev); errors.Is(err, errChanged) {
			find = r.findAfter(rev) // an end or another cancel came first: read it again, fresh
			continue
		} else if err != nil {
			return jobs.Record{}, "", err
		}
		r.instruments.canceled(was)
		if seq != 0 && was != jobs.Running {
			// Never delivered: gone from the stream, it cannot run even
			// once its record has expired. A failure leaves it to be acked
			// unrun when delivered, as the record says canceled.
			_ = r.jobs.DeleteMsg(context.WithoutCancel(ctx), seq)
		}
		// Told to every runner whatever the state read: a job read as
		// queued may have just started.
		_ = r.js.Conn().Publish(r.layout.cancel(id), nil)
		return rec, was, nil
	}
	return jobs.Record{}, "", fmt.Errorf("%w: job %s's record keeps changing", jobs.ErrUnavailable, id)
}
