package jsjobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go/jetstream"
)

// A queue's lanes: a consumer a priority (layout.go), so that a job of a
// higher priority waiting is delivered before any of a lower one: a
// queue's Source reads them in order (natsjs.WithLanes, which
// takes from a lane only what waits when those before it are empty). The
// default priority's lane is the queue's own consumer, which says that
// the queue exists and holds its rate (rate.go); every lane holds the
// queue's limit and pause, set on all of them at once. The other lanes
// are made when a process serves the queue, or sets or pauses it, with
// the settings of the default priority's.
//
// What a lane costs: a consumer on the servers (a replicated group of its
// own in a cluster), and, while its queue is idle, one pull a second
// waiting on the server from each process serving it. A queue's limit is
// its lanes' MaxAckPending: the server bounds each lane, so a queue whose
// jobs come in k priorities may run k times its limit at once.

// errNoQueue is a queue's name that names no queue.
var errNoQueue = errors.New("no such queue: a queue exists once a process serves it or sets it")

// queueCons is queue q's consumer, looked up once here: errNoQueue when
// it does not exist.
func (r *Runner) queueCons(ctx context.Context, q string) (jetstream.Consumer, error) {
	if q == "" || q == jobs.DefaultQueue {
		return r.store.cons, nil
	}
	qu := r.store.queue(q)
	qu.mu.Lock()
	defer qu.mu.Unlock()
	ln := &qu.byPriority[jobs.DefaultPriority]
	if ln.cons != nil {
		return ln.cons, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	cons, err := r.store.jobs.Consumer(ctx, consumerOf(r.store.consumer(), q, jobs.DefaultPriority))
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return nil, errNoQueue
	case err != nil:
		return nil, storeError(err)
	}
	ln.cons = cons
	return cons, nil
}

// priorities are the lanes' priorities, the first taken first.
var priorities = [...]int{1, 2, 3, 4}

// recordPriority is a record's priority.
func recordPriority(rec jobs.Record) int {
	if rec.Spec != nil {
		return cmp.Or(rec.Spec.Priority, jobs.DefaultPriority)
	}
	return jobs.DefaultPriority
}

// lanes are queue q's consumers in priority order, cons its default
// priority's; the lanes missing are made with cons's settings as the
// server holds them now (its limit and its pause).
func (r *Runner) lanes(ctx context.Context, q string, cons jetstream.Consumer) ([]jetstream.Consumer, error) {
	qu := r.store.queue(q)
	qu.mu.Lock()
	defer qu.mu.Unlock()
	var base *jetstream.ConsumerInfo
	out := make([]jetstream.Consumer, 0, len(priorities))
	for _, p := range priorities {
		ln := &qu.byPriority[p]
		if p == jobs.DefaultPriority {
			ln.cons = cons
		}
		if ln.cons != nil {
			out = append(out, ln.cons)
			continue
		}
		if base == nil {
			var err error
			if base, err = r.consInfo(ctx, cons); err != nil {
				return nil, err
			}
		}
		cc := r.laneConfig(base.Config, q, p)
		cctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
		c, err := findOrCreate(cctx,
			func() (jetstream.Consumer, error) { return r.store.jobs.CreateConsumer(cctx, cc) },
			func() (jetstream.Consumer, error) { return r.store.jobs.Consumer(cctx, cc.Durable) },
			jetstream.ErrConsumerExists)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("queue %q, priority %d: %w", q, p, storeError(err))
		}
		ln.cons = c
		out = append(out, c)
	}
	return out, nil
}

// consInfo reads cons's info from the server.
func (r *Runner) consInfo(ctx context.Context, cons jetstream.Consumer) (*jetstream.ConsumerInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, storeError(err)
	}
	return info, nil
}

// laneConfig is the config of queue q's lane of priority p, with the
// limit and the pause of base, its default priority's.
func (r *Runner) laneConfig(base jetstream.ConsumerConfig, q string, p int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       consumerOf(r.store.consumer(), q, p),
		Description:   fmt.Sprintf("the job runners of queue %s, its jobs of priority %d", q, p),
		FilterSubject: r.layout.laneJobs(q, p),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       base.AckWait,
		MaxDeliver:    -1, // Handle bounds the runs
		MaxAckPending: cmp.Or(base.MaxAckPending, -1),
		PauseUntil:    base.PauseUntil,
	}
}

// eachLane applies set to each of queue q's lanes, made if missing.
func (r *Runner) eachLane(ctx context.Context, q string, set func(jetstream.Consumer) error) error {
	cons, err := r.queueCons(ctx, q)
	if errors.Is(err, errNoQueue) {
		return fmt.Errorf("%w: queue %q: %v", jobs.ErrNotFound, q, err)
	} else if err != nil {
		return err
	}
	lanes, err := r.lanes(ctx, q, cons)
	if err != nil {
		return err
	}
	for _, c := range lanes {
		if err := set(c); err != nil {
			return err
		}
	}
	return nil
}
