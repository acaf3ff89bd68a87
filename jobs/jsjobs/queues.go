package jsjobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go/jetstream"
)

// Queues. A job waits in its queue (Spec.Queue; the default queue when it
// names none): its message is under the queue's subject, read by the
// queue's own consumer (layout.go), so that a burst in one queue delays no
// other. A process serves the queues it chooses, each through a Source of
// its own on a pool of its own (QueueSource): its pool's bound is the
// queue's bound in that process. A queue's Limit bounds its jobs running
// at once across every process: it is its consumer's MaxAckPending, which
// the server enforces (a job held for a free worker counts, as it holds a
// delivery). Pause and resume are the consumer's own, kept by the server
// for every process and across restarts: the server delivers none of its
// jobs from the pause on (one a process already holds for a free worker
// may still start). A queue costs no write a job; an idle one costs what
// an idle Source does (its loop wakes to renew leases, and a pull waits
// on the server a second at a time).
//
// A queue exists once SetQueue or a QueueSource has made its consumer,
// which a program or an operator does, never a request: a job or a pause
// naming a queue that does not exist is refused (errNoQueue), so that
// requests cannot make consumers (each a replicated group on the
// servers) without bound. A queue made and not yet served keeps its jobs
// waiting there.

// queueKnown refuses a job of a queue that does not exist, naming it.
func (r *Runner) queueKnown(ctx context.Context, q string) error {
	if _, err := r.queueCons(ctx, q); errors.Is(err, errNoQueue) {
		return &jobs.InvalidError{Reason: fmt.Sprintf(`"queue" %q: %v`, q, err)}
	} else if err != nil {
		return err
	}
	return nil
}

// makeQueue creates queue q's consumer (its default priority's lane) with
// q's limit and rate, or, when it exists, sets those on it, its other
// settings (its pause among them) left as they are; a queue as it is is
// left untouched.
func (r *Runner) makeQueue(ctx context.Context, q jobs.Queue) (jetstream.Consumer, error) {
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	def := r.store.cons.CachedInfo().Config
	cc := jetstream.ConsumerConfig{
		Durable:       consumerOf(def.Durable, q.Name, jobs.DefaultPriority),
		Description:   "the job runners of queue " + q.Name,
		FilterSubject: r.layout.laneJobs(q.Name, jobs.DefaultPriority),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       def.AckWait,
		MaxDeliver:    -1, // as the default queue's: Handle bounds the runs
		MaxAckPending: limitOf(q),
		Metadata:      rateMetadata(q),
	}
	cur, err := r.store.jobs.Consumer(ctx, cc.Durable)
	switch {
	case err == nil && queueSettled(cur.CachedInfo().Config, q):
		return cur, nil
	case err == nil:
		old := cur.CachedInfo().Config
		old.MaxAckPending, old.Metadata = cc.MaxAckPending, cc.Metadata
		cc = old
	case !errors.Is(err, jetstream.ErrConsumerNotFound):
		return nil, storeError(err)
	}
	cons, err := r.store.jobs.CreateOrUpdateConsumer(ctx, cc)
	if err != nil {
		return nil, storeError(err)
	}
	return cons, nil
}

// limitOf is q's Limit as a consumer's MaxAckPending: -1 for none.
func limitOf(q jobs.Queue) int {
	if q.Limit > 0 {
		return q.Limit
	}
	return -1
}

// queueSettled says whether a lane's config holds q's limit and rate.
func queueSettled(cc jetstream.ConsumerConfig, q jobs.Queue) bool {
	n, per := rateOf(cc.Metadata)
	want, wantPer := rateOf(rateMetadata(q))
	return max(-1, cc.MaxAckPending) == limitOf(q) && n == want && per == wantPer
}

// SetQueue sets queue q's settings for every process: its limit across
// them all (0: none), on each of its priorities' lanes (lanes.go), and
// its rate (rate.go). A queue set again as it is is left as it is.
func (r *Runner) SetQueue(ctx context.Context, q jobs.Queue) error {
	if err := q.Validate(); err != nil {
		return err
	}
	if q.Name == jobs.DefaultQueue && (q.Limit > 0 || q.Rate > 0) {
		return &jobs.InvalidError{Reason: `"limit" and "rate": the default queue has neither; name a queue for the jobs to bound`}
	}
	if err := r.connected(); err != nil {
		return err
	}
	if q.Name == jobs.DefaultQueue {
		return nil
	}
	cons, err := r.makeQueue(ctx, q)
	if err != nil {
		return err
	}
	qu := r.store.queue(q.Name)
	qu.mu.Lock()
	qu.byPriority[jobs.DefaultPriority].cons = cons
	qu.mu.Unlock()
	// Its limit on every lane (the rate is the default lane's alone).
	limit := limitOf(q)
	return r.eachLane(ctx, q.Name, func(c jetstream.Consumer) error {
		cc := c.CachedInfo().Config
		if max(-1, cc.MaxAckPending) == limit {
			return nil
		}
		cc.MaxAckPending = limit
		uctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
		defer cancel()
		if _, err := r.store.jobs.UpdateConsumer(uctx, cc); err != nil {
			return storeError(err)
		}
		return nil
	})
}

// servedCons is queue q's consumer for a process that serves it, made
// with no limit when it does not exist.
func (r *Runner) servedCons(ctx context.Context, q string) (jetstream.Consumer, error) {
	if err := jobs.CheckQueue(q); err != nil {
		return nil, err
	}
	cons, err := r.queueCons(ctx, q)
	if !errors.Is(err, errNoQueue) {
		return cons, err
	}
	cons, err = r.makeQueue(ctx, jobs.Queue{Name: q})
	if err != nil {
		return nil, err
	}
	qu := r.store.queue(q)
	qu.mu.Lock()
	qu.byPriority[jobs.DefaultPriority].cons = cons
	qu.mu.Unlock()
	return cons, nil
}

// PauseQueue stops every process from starting queue q's jobs until
// ResumeQueue (or until, if not zero): the server delivers none meanwhile,
// whatever the processes, their restarts or the servers'; jobs running
// go on, and jobs submitted meanwhile are accepted and wait. Pausing the
// default queue pauses the periodic jobs' ticks too, which share its
// consumer. A queue that does not exist is jobs.ErrNotFound.
func (r *Runner) PauseQueue(ctx context.Context, q string, until time.Time) error {
	if until.IsZero() {
		until = time.Now().AddDate(100, 0, 0)
	}
	return r.pause(ctx, q, until)
}

// ResumeQueue undoes PauseQueue.
func (r *Runner) ResumeQueue(ctx context.Context, q string) error {
	return r.pause(ctx, q, time.Time{})
}

func (r *Runner) pause(ctx context.Context, q string, until time.Time) error {
	if err := r.connected(); err != nil {
		return err
	}
	if err := jobs.CheckQueue(q); err != nil {
		return err
	}
	return r.eachLane(ctx, q, func(c jetstream.Consumer) error {
		ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
		defer cancel()
		var err error
		if until.IsZero() {
			_, err = r.js.ResumeConsumer(ctx, r.layout.stream, c.CachedInfo().Name)
		} else {
			_, err = r.js.PauseConsumer(ctx, r.layout.stream, c.CachedInfo().Name, until)
		}
		if err != nil {
			return storeError(err)
		}
		return nil
	})
}

// Queues reads every queue as the server holds it now: the default queue
// first, then the others by name, each with its limit, its backlog, its
// jobs taken (running, or held for a free worker) and whether it is
// paused.
func (r *Runner) Queues(ctx context.Context) ([]jobs.QueueInfo, error) {
	if err := r.connected(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	def := r.store.cons.CachedInfo().Name
	byName := map[string]*jobs.QueueInfo{}
	infos := r.store.jobs.ListConsumers(ctx)
	for ci := range infos.Info() {
		name, p, ok := laneOf(def, ci.Name)
		if !ok {
			continue // not a queue of these jobs
		}
		qi := byName[name]
		if qi == nil {
			qi = &jobs.QueueInfo{Queue: jobs.Queue{Name: name}}
			byName[name] = qi
		}
		qi.Waiting += int(ci.NumPending)
		qi.Taken += ci.NumAckPending
		if ci.NumPending > 0 {
			if t := r.oldestWaiting(ctx, name, p, ci.Delivered.Stream); !t.IsZero() && (qi.OldestWaiting.IsZero() || t.Before(qi.OldestWaiting)) {
				qi.OldestWaiting = t
			}
		}
		if p != jobs.DefaultPriority {
			continue
		}
		// The queue's settings, as its own consumer holds them.
		qi.Paused = ci.Paused
		if ci.Config.MaxAckPending > 0 && name != jobs.DefaultQueue {
			qi.Limit = ci.Config.MaxAckPending
		}
		qi.Rate, qi.Per = rateOf(ci.Config.Metadata)
	}
	if err := infos.Err(); err != nil {
		return nil, storeError(err)
	}
	out := make([]jobs.QueueInfo, 0, len(byName))
	for _, qi := range byName {
		out = append(out, *qi)
	}
	slices.SortFunc(out, func(a, b jobs.QueueInfo) int {
		switch {
		case a.Name == b.Name:
			return 0
		case a.Name == jobs.DefaultQueue:
			return -1
		case b.Name == jobs.DefaultQueue:
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// oldestWaiting is when queue q's oldest waiting job of priority p was
// published (a job due later: at its time), read as the first of the
// lane's messages after the stream sequence its consumer has delivered up
// to: one request. Zero when it cannot be read (the queue's length still
// says there is work).
func (r *Runner) oldestWaiting(ctx context.Context, q string, p int, delivered uint64) time.Time {
	m, err := r.store.jobs.GetMsg(ctx, delivered+1, jetstream.WithGetMsgSubject(r.layout.laneJobs(q, p)))
	if err != nil {
		return time.Time{}
	}
	return m.Time
}
