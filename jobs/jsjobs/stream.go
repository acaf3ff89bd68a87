package jsjobs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/natsjs/natsotel"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jobStream is the jobs' stream: a job waiting is its message there
// (message), a job due later its schedule (scheduled), and how far the
// consumer has delivered tells a job taken from one waiting (delivered).
// publish stores a job's message.
type jobStream struct {
	js           jetstream.JetStream
	jobs         jetstream.Stream
	cons         jetstream.Consumer
	layout       layout
	storeTimeout time.Duration
	schedules    bool    // the stream allows message schedules
	leader       lastMsg // reads a message from the stream's leader (leaderLast)
	reads        *hedger // the store's reads' hedging (hedged)

	mu     sync.Mutex             // guards queues
	queues map[string]*queueState // the queues known here, by name: their consumers and how far each has delivered
}

// queueState is what the stream knows of one queue: its lanes, a
// consumer a priority, and how far each has delivered.
type queueState struct {
	mu         sync.Mutex
	byPriority [jobs.MaxPriority + 1]laneState // by priority; [0] unused
}

// laneState is one priority's consumer of a queue (nil until looked up)
// and how far it has delivered (read at most every deliveredEvery).
type laneState struct {
	cons         jetstream.Consumer
	deliveredSeq uint64
	deliveredAt  time.Time
	failedAt     time.Time // the last cached read that got no answer
}

// waiting reads a job that has no record yet from its message, or from its
// schedule when it has no message (yet), and returns that message's stream
// sequence.
func (r *jobStream) waiting(ctx context.Context, id string) (jobs.Record, uint64, error) {
	rec, seq, err := r.message(ctx, id, r.anyReplica)
	if errors.Is(err, jobs.ErrNotFound) {
		return r.scheduled(ctx, id, r.anyReplica)
	}
	return rec, seq, err
}

// anyReplica reads a subject's last message from whichever of the
// stream's replicas answers first (a direct get, hedged).
func (r *jobStream) anyReplica(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	return hedged(ctx, r.reads, func(ctx context.Context) (*jetstream.RawStreamMsg, error) {
		return r.jobs.GetLastMsgForSubject(ctx, subject)
	})
}

// message reads a job that has no record yet from its message in the
// stream, and returns that message's stream sequence: a job waiting there
// is queued, one delivered running (its first run writes its record at
// its end).
func (r *jobStream) message(ctx context.Context, id string, last lastMsg) (jobs.Record, uint64, error) {
	lastOf := func(subject string) (*jetstream.RawStreamMsg, error) {
		ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
		defer cancel()
		return last(ctx, subject)
	}
	var m *jetstream.RawStreamMsg
	var err error = jetstream.ErrMsgNotFound
	for _, subject := range r.layout.waitingAt(id) {
		if m, err = lastOf(subject); !errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return jobs.Record{}, 0, jobs.ErrNotFound
	}
	if err != nil {
		return jobs.Record{}, 0, storeError(err)
	}
	var spec jobs.Spec
	_ = json.Unmarshal(m.Data, &spec) // a bad spec is still a job, failed at its run
	q := r.layout.queueOf(m.Subject)
	spec.Submitter = m.Header.Get(headerSubmitter)
	rec := jobs.Record{ID: id, Kind: spec.Kind, Queue: queueName(q), State: jobs.Queued, Created: created(m.Header, m.Time), Submitter: spec.Submitter, Spec: &spec}
	if r.delivered(ctx, q, spec.Priority) >= m.Sequence {
		// Delivered and not acked, and no record yet: taken by a runner,
		// in its first run (which writes nothing before its end) or held
		// for a free worker, which the store cannot tell apart. No run is
		// recorded as started: Attempts stays 0 until the record is
		// written.
		rec.State, rec.Deliveries = jobs.Running, 1
	}
	return rec, m.Sequence, nil
}

// scheduled reads a job due later from its schedule's message.
func (r *jobStream) scheduled(ctx context.Context, id string, last lastMsg) (jobs.Record, uint64, error) {
	if !r.schedules {
		return jobs.Record{}, 0, jobs.ErrNotFound
	}
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	m, err := last(ctx, r.layout.due(id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return jobs.Record{}, 0, jobs.ErrNotFound
	}
	if err != nil {
		return jobs.Record{}, 0, storeError(err)
	}
	var spec jobs.Spec
	_ = json.Unmarshal(m.Data, &spec)
	spec.Submitter = m.Header.Get(headerSubmitter)
	rec := jobs.Record{ID: id, Kind: spec.Kind, State: jobs.Scheduled, Created: m.Time, Submitter: spec.Submitter, Spec: &spec}
	if at, ok := strings.CutPrefix(m.Header.Get(headerSchedule), "@at "); ok {
		rec.RunAt, _ = time.Parse(time.RFC3339Nano, at)
	}
	return rec, m.Sequence, nil
}

// delivered is the stream sequence the consumer of queue q's jobs of
// priority p has delivered up to, read at most every deliveredEvery: a
// job of q and p whose message is at or below it has been taken. 0 when
// it cannot be read.
func (r *jobStream) delivered(ctx context.Context, q string, p int) uint64 {
	return r.deliveredWithin(ctx, q, p, deliveredEvery)
}

// deliveredWithin is delivered read at most age ago (0: now).
func (r *jobStream) deliveredWithin(ctx context.Context, q string, p int, age time.Duration) uint64 {
	qu := r.queue(q)
	qu.mu.Lock()
	defer qu.mu.Unlock()
	ln := &qu.byPriority[cmp.Or(p, jobs.DefaultPriority)]
	if age > 0 && (time.Since(ln.deliveredAt) < age || time.Since(ln.failedAt) < deliveredRetry) {
		return ln.deliveredSeq
	}
	// A failed read is cached like a good one: while the store is out,
	// Gets waiting on the lock must not each spend a store timeout in turn.
	// The consumer's leader answers alone, and may be cut off: a cached
	// view (age > 0, Get's) waits for it at most deliveredTimeout, then says
	// what it last knew, and after a wait that got no answer, says so
	// without asking for deliveredRetry.
	ln.deliveredAt = time.Now()
	if age > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, deliveredTimeout)
		defer cancel()
	}
	failed := func(err error) {
		if age > 0 && timedOut(err) {
			ln.failedAt = time.Now()
		}
	}
	if ln.cons == nil {
		cons, err := r.jobs.Consumer(ctx, consumerOf(r.consumer(), q, p))
		if err != nil {
			failed(err)
			return ln.deliveredSeq
		}
		ln.cons = cons
	}
	info, err := ln.cons.Info(ctx)
	if err != nil {
		failed(err)
		return ln.deliveredSeq
	}
	ln.deliveredSeq = info.Delivered.Stream
	return ln.deliveredSeq
}

// queue is what the stream knows of queue q, made at the first ask.
func (r *jobStream) queue(q string) *queueState {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.queues == nil {
		r.queues = map[string]*queueState{jobs.DefaultQueue: {}}
		r.queues[jobs.DefaultQueue].byPriority[jobs.DefaultPriority].cons = r.cons
	}
	qu, ok := r.queues[q]
	if !ok {
		qu = &queueState{}
		r.queues[q] = qu
	}
	return qu
}

// consumer is the default queue's consumer's name.
func (r *jobStream) consumer() string { return r.cons.CachedInfo().Name }

// deliveredEvery bounds how often Get asks the consumer how far it has
// delivered: a job that just started may read queued that long.
const deliveredEvery = 250 * time.Millisecond

// deliveredTimeout bounds a read of how far a consumer has delivered: a
// Get of a waiting job shows it queued rather than wait longer.
const deliveredTimeout = 250 * time.Millisecond

// deliveredRetry is how long Get goes on with what it last knew of how far
// a consumer has delivered after a read of it got no answer in
// deliveredTimeout (its leader cut off, or electing).
const deliveredRetry = 2 * time.Second

// publish publishes a job's message inside a producer span, its trace
// context in the headers, its id as the message id; a Retry's message
// names the revision of the record it retries (retryOf), and has a
// message id of its own. dup says the stream already held a message of
// that id, so this one was not stored again.
func (r *jobStream) publish(ctx context.Context, id string, job jobs.Prepared, retryOf uint64, retries int) (dup bool, err error) {
	msg := &nats.Msg{Subject: r.layout.in(job.Queue, job.Priority, id), Data: job.Body, Header: nats.Header{}}
	msgID := id
	if job.Submitter != "" {
		msg.Header.Set(headerSubmitter, job.Submitter)
	}
	if retryOf != 0 {
		msgID = id + ".retry." + strconv.FormatUint(retryOf, 10)
		msg.Header.Set(headerRetryOf, strconv.FormatUint(retryOf, 10))
		msg.Header.Set(headerRetries, strconv.Itoa(retries))
	}
	if !job.RunAt.IsZero() {
		// The server publishes it to its queue's subject when it is due; until
		// then it waits under <stream>-at.<id>, which no consumer reads.
		// The message it publishes then is stamped with that time, and
		// carries the headers, so the job's own time travels in one.
		msg.Header.Set(headerCreated, time.Now().UTC().Format(time.RFC3339Nano))
		msg.Subject = r.layout.due(id)
		msg.Header.Set(headerSchedule, "@at "+job.RunAt.UTC().Format(time.RFC3339Nano))
		msg.Header.Set(headerScheduleTarget, r.layout.in(job.Queue, job.Priority, id))
	}
	ack, err := natsotel.Publish(ctx, r.js, msg, jetstream.WithMsgID(msgID))
	if err != nil {
		return false, err
	}
	return ack.Duplicate, nil
}

// created is when the job of a message with headers h, stored at t, was
// accepted: t, unless the server published it at its due time.
func created(h nats.Header, t time.Time) time.Time {
	if c, err := time.Parse(time.RFC3339Nano, h.Get(headerCreated)); err == nil {
		return c
	}
	return t
}
