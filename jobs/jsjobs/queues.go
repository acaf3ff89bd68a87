package jsjobs

import (
	"context"
	"errors"
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
// for every process and across restarts. A queue costs no write a job;
// an idle one costs what an idle Source does (its loop wakes every 100 ms
// to renew leases, and a pull waits on the server a second at a time):
// eight idle queues took about 0.3 % of a core more in crewd.
//
// A queue is made when it is first used, with no limit: a job submitted
// to a queue that no process serves yet is accepted and waits there, as
// backlog of that queue, until one does.

// queueKnown makes queue q's consumer, unless it is the default queue's or
// already known here.
func (r *Runner) queueKnown(ctx context.Context, q string) error {
	if q == "" || q == jobs.DefaultQueue {
		return nil
	}
	qu := r.store.queue(q)
	qu.mu.Lock()
	defer qu.mu.Unlock()
	if qu.cons != nil {
		return nil
	}
	cons, err := r.makeQueue(ctx, jobs.Queue{Name: q}, false)
	if err != nil {
		return err
	}
	qu.cons = cons
	return nil
}

// makeQueue creates queue q's consumer, or finds it as it is (set: or
// updates its limit to q's).
func (r *Runner) makeQueue(ctx context.Context, q jobs.Queue, set bool) (jetstream.Consumer, error) {
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	def := r.store.cons.CachedInfo().Config
	cc := jetstream.ConsumerConfig{
		Durable:       consumerOf(def.Durable, q.Name),
		Description:   "the job runners of queue " + q.Name,
		FilterSubject: r.layout.queueJobs(q.Name),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       def.AckWait,
		MaxDeliver:    -1, // as the default queue's: Handle bounds the runs
		MaxAckPending: -1, // no limit
	}
	if q.Limit > 0 {
		cc.MaxAckPending = q.Limit
	}
	if set {
		// Its limit changed, the rest kept as it is: an update with the
		// config made here would resume a paused queue (every process
		// sets its queues at its start).
		cur, err := r.store.jobs.Consumer(ctx, cc.Durable)
		switch {
		case err == nil && cur.CachedInfo().Config.MaxAckPending == cc.MaxAckPending:
			return cur, nil
		case err == nil:
			old := cur.CachedInfo().Config
			old.MaxAckPending = cc.MaxAckPending
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
	cons, err := r.store.jobs.CreateConsumer(ctx, cc)
	if errors.Is(err, jetstream.ErrConsumerExists) {
		cons, err = r.store.jobs.Consumer(ctx, cc.Durable)
	}
	if err != nil {
		return nil, storeError(err)
	}
	return cons, nil
}

// SetQueue sets queue q's settings for every process: its limit across
// them all (0: none). A queue set again as it is is left as it is.
func (r *Runner) SetQueue(ctx context.Context, q jobs.Queue) error {
	if err := q.Validate(); err != nil {
		return err
	}
	if q.Name == jobs.DefaultQueue && q.Limit > 0 {
		return &jobs.InvalidError{Reason: `"limit": the default queue has none; name a queue for the jobs to bound`}
	}
	if err := r.connected(); err != nil {
		return err
	}
	if q.Name == jobs.DefaultQueue {
		return nil
	}
	cons, err := r.makeQueue(ctx, q, true)
	if err != nil {
		return err
	}
	qu := r.store.queue(q.Name)
	qu.mu.Lock()
	qu.cons = cons
	qu.mu.Unlock()
	return nil
}

// queueConsumer is queue q's consumer, made if missing.
func (r *Runner) queueConsumer(ctx context.Context, q string) (jetstream.Consumer, error) {
	if err := jobs.CheckQueue(q); err != nil {
		return nil, err
	}
	if q == jobs.DefaultQueue {
		return r.store.cons, nil
	}
	if err := r.queueKnown(ctx, q); err != nil {
		return nil, err
	}
	qu := r.store.queue(q)
	qu.mu.Lock()
	defer qu.mu.Unlock()
	return qu.cons, nil
}

// PauseQueue stops every process from starting queue q's jobs until
// ResumeQueue (or until, if not zero): the server delivers none meanwhile,
// whatever the processes, their restarts or the servers'; jobs running
// go on, and jobs submitted meanwhile are accepted and wait. Pausing the
// default queue pauses the periodic jobs' ticks too, which share its
// consumer.
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
	cons, err := r.queueConsumer(ctx, q)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	name := cons.CachedInfo().Name
	if until.IsZero() {
		_, err = r.js.ResumeConsumer(ctx, r.layout.stream, name)
	} else {
		_, err = r.js.PauseConsumer(ctx, r.layout.stream, name, until)
	}
	if err != nil {
		return storeError(err)
	}
	return nil
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
	var out []jobs.QueueInfo
	infos := r.store.jobs.ListConsumers(ctx)
	for ci := range infos.Info() {
		var name string
		switch {
		case ci.Name == def:
			name = jobs.DefaultQueue
		case strings.HasPrefix(ci.Name, def+"-q-"):
			name = strings.TrimPrefix(ci.Name, def+"-q-")
		default:
			continue // not a queue of these jobs
		}
		qi := jobs.QueueInfo{Queue: jobs.Queue{Name: name}, Waiting: int(ci.NumPending), Taken: ci.NumAckPending, Paused: ci.Paused}
		if ci.Config.MaxAckPending > 0 && name != jobs.DefaultQueue {
			qi.Limit = ci.Config.MaxAckPending
		}
		out = append(out, qi)
	}
	if err := infos.Err(); err != nil {
		return nil, storeError(err)
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
