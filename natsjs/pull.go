package natsjs

import (
	"context"
	"errors"
	"time"

	"github.com/crew-go/crew"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// How a Source pulls. The rules, in one place:
//
//  1. Credit. Messages held and not started, plus messages asked for and not
//     yet received, never exceed the pool's free slots plus the window;
//     messages resting after an outage (settle.go, runAgain) do not count
//     until there are more of them than MaxWindowFactor times the bound.
//     Free slots are the pool's bound less its busy workers and less the
//     tasks queued by others, read from one Stats snapshot per decision: the
//     pool is shared (crewd's HTTP batches run on it too), so a Source takes
//     only the room left. A message that arrives does not wait in a client
//     buffer aging against AckWait (as messages prefetched by Consume's
//     default 500-message buffer do): whatever is received is a task on
//     the pool at once, and a slot is free for it or soon will be.
//  2. Batching. A pull asks for all the credit there is, and another pull is
//     only sent while one is in flight when the credit reaches half the
//     pool's bound plus the window: few requests under load, no request
//     storm when slots free one at a time.
//  3. Stop. A stop sends no more pulls and lets those in flight run out,
//     then naks what waits (reclaim). Not cancelled: a pull the client
//     cancels drops what the server has already sent it, and those
//     messages wait out AckWait before anyone gets them; what a pull
//     brings during the stop is held and handed back with the rest. Not
//     naked before: a nak sent while one of our pulls still waited on the
//     server would let the server hand the message straight back to us, at
//     the cost of a delivery attempt each round. Shutdown then waits for
//     every held message to be settled: it never returns with work still
//     in flight. Each pull waits on the server for at most the pull expiry,
//     which bounds how long a pull lost in a server restart goes
//     unnoticed, and an idle lane's watch (rule 5) the server's heartbeat
//     likewise; a stop waits for it at most maxPullWait, then cancels it
//     (an idle lane's watch, which waits longer, is cancelled at once: a
//     message the server sends it in that instant waits out AckWait).
//  4. Errors. A pull that fails waits a moment before the next; a closed
//     connection stops the Source with its error.
//  5. Priorities (WithLanes: lanes.go). A Source over several consumers
//     takes, with the credit of rule 1, what waits now in the first, then
//     in the next with what credit is left, and so on, a sweep sent as
//     rule 2 sends a pull: a message waiting in a consumer starts before
//     any waiting in the ones after it, once the messages already held
//     (or asked for by a sweep in flight) have started.
//     A consumer a sweep found drained gets a pull of one message waiting
//     on the server (a watch, for idleWatch with heartbeats: lanes.go),
//     sent again each time it runs out empty, and
//     no sweep asks it while it waits: under load a sweep asks only the
//     consumers that have messages, and an idle Source keeps one watch a
//     consumer. A watch's message is taken beyond the credit, so a Source
//     holds at most one message a consumer more than rule 1 says. A watch
//     of a consumer that shares its rank with others (WithLaneGroups)
//     asks, besides, for up to maxWatch-1 more within the credit its sweep
//     left unused, for at most watchGather (lanes.go): such a consumer holds
//     a share of its rank's messages, and would otherwise cost a watch a
//     message under a light load; up to that many of its messages may start
//     before a message of an earlier rank that came meanwhile.

// maxPullWait bounds how long a stop lets a pull run out before it
// cancels it (rule 3): the default pull expiry.
const maxPullWait = DefaultPullExpiry

// pullRetry is the pause after a failed pull: a server restart or a
// reconnect is not hammered with requests.
const pullRetry = 250 * time.Millisecond

// pull sends a pull request when the credit allows. Called by Run only.
func (s *Source) pull() {
	if s.o.conn != nil && !s.o.conn.IsConnected() {
		if s.o.conn.IsClosed() {
			// Closed for good (by its owner, or by the server with an
			// error, after which nats.go does not reconnect): no pull
			// will ever fail to tell, so stop here with its error.
			s.mu.Lock()
			if s.fatal == nil {
				s.fatal = nats.ErrConnectionClosed
			}
			s.mu.Unlock()
			s.beginStop()
			s.signal()
		}
		return // Run's tick tries again
	}
	st := s.pool.Stats()
	s.afterMax.Store(int64(st.MaxWorkers))
	if st.Closed {
		// The pool stopped under the Source: its queued tasks may be
		// dropped without running, so hand back what has not started.
		s.beginStop()
		return
	}
	unstarted := int(s.unstarted.Load())
	free := 0
	if !st.Paused {
		others := max(0, st.Queued-unstarted)
		free = max(0, st.MaxWorkers-st.Busy-others)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.stopping || (!s.retryAt.IsZero() && now.Before(s.retryAt)) {
		return
	}
	size := s.window.decide(now, s.started.Load(), st.MaxWorkers, free, unstarted, s.backlog)
	if s.stalled.Load() {
		size = 0 // see renewLeases
	}
	s.lastWindow = size
	// Messages resting after an outage hold no slot: beyond a bound of
	// them, though, they count, so that an outage of what every message
	// needs does not have the Source take in the whole stream.
	resting := int(s.resting.Load())
	credit := free + size - unstarted - s.requested - max(0, resting-MaxWindowFactor*st.MaxWorkers)
	threshold := max(1, (st.MaxWorkers+size)/2)
	s.freed, s.threshold = 0, threshold
	if len(s.lanes) > 1 {
		s.pullLanes(credit+s.watching, threshold) // rule 5
		return
	}
	if credit <= 0 || (s.requested > 0 && credit < threshold) {
		return
	}
	if s.maxBatch > 0 && credit > s.maxBatch {
		// The rest goes in the next pulls, one per decision.
		credit = s.maxBatch
	}
	s.requested += credit
	s.fetches++
	go s.fetch(credit)
}

// fetch runs one pull request for n messages to its end.
func (s *Source) fetch(n int) {
	ctx, cancel := context.WithTimeout(s.fetchCtx, s.o.pullExpiry)
	defer cancel()
	got, err := s.take(s.cons, n, ctx)
	s.mu.Lock()
	s.requested -= n - got
	s.backlog = got == n // a full batch: the stream had more (window.go)
	s.fetched(got, err)
	s.mu.Unlock()
	s.signal()
}

// take pulls up to n messages from c and receives them: with ctx, a pull
// that waits on the server until ctx ends; without, one that takes only
// what waits now (no-wait).
func (s *Source) take(c jetstream.Consumer, n int, ctx context.Context, opts ...jetstream.FetchOpt) (int, error) {
	var batch jetstream.MessageBatch
	var err error
	s.c.pulls.Add(1)
	if ctx != nil {
		batch, err = c.Fetch(n, append(opts, jetstream.FetchContext(ctx))...)
	} else {
		batch, err = c.FetchNoWait(n)
	}
	if err != nil {
		return 0, err
	}
	got := 0
	for jm := range batch.Messages() {
		got++
		s.receive(jm)
	}
	return got, batch.Error()
}

// fetched ends a pull request that received got messages and ended with
// err (rules 3 and 4). Called with s.mu held; it may release it and
// stop the Source, and holds it again when it returns.
func (s *Source) fetched(got int, err error) {
	s.fetches--
	if s.stopping && s.fetches == 0 {
		s.endPulls.Do(func() { close(s.pullsEnded) })
	}
	switch {
	case err == nil, errors.Is(err, context.Canceled):
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout), errors.Is(err, jetstream.ErrNoMessages):
		if got == 0 && errors.Is(err, context.DeadlineExceeded) {
			// The server did not even answer: disconnected, or restarting.
			s.retryAt = time.Now().Add(pullRetry)
		}
	case isConnClosed(err):
		if s.fatal == nil {
			s.fatal = err
		}
		s.mu.Unlock()
		s.beginStop()
		s.mu.Lock()
	default:
		s.retryAt = time.Now().Add(pullRetry)
		if s.o.logger != nil {
			s.o.logger.Warn("natsjs: pull failed", "stream", s.stream, "consumer", s.consumer, "error", err)
		}
	}
}

// receive takes a delivered message: holds it, and makes it a task on the
// pool, or hands it back at once when the Source is stopping.
func (s *Source) receive(jm jetstream.Msg) {
	m := &Msg{raw: jm, src: s}
	md, err := jm.Metadata()
	if err != nil {
		// Not a JetStream delivery: nothing to run, nothing to redeliver.
		s.mu.Lock()
		s.requested--
		s.mu.Unlock()
		_ = jm.Term()
		s.c.termed.Add(1)
		return
	}
	m.attempt = int(md.NumDelivered)
	m.seq = md.Sequence.Stream
	s.c.received.Add(1)
	if m.attempt > 1 {
		s.c.redelivered.Add(1)
	}
	now := time.Now()
	s.unstarted.Add(1)
	s.mu.Lock()
	s.requested--
	m.received, m.leased = now, now
	s.link(m)
	if s.journal != nil {
		s.noteJournal('+', jm.Reply(), jm.Subject())
	}
	stopping, ctx := s.stopping, s.submitCtx
	s.mu.Unlock()
	s.submit(m, stopping, ctx)
}

// submit makes a waiting m a task on the pool, or leaves it waiting for
// reclaim to hand back when the Source is stopping (stopping and ctx read
// under s.mu).
func (s *Source) submit(m *Msg, stopping bool, ctx context.Context) {
	if stopping || m.state.Load() != waiting {
		return // reclaim hands it back, or it is settled
	}
	task, err := s.pool.Submit(ctx, m.run, crew.Named(s.o.taskName))
	switch {
	case err == nil:
		m.task.Store(task)
	case errors.Is(err, crew.ErrClosed), errors.Is(err, context.Canceled):
		// The pool stopped, or the Source is stopping: the message stays
		// held, waiting, and Run's reclaim hands it back.
		s.beginStop()
	default:
		s.handBack(m, "pool refused: "+err.Error())
	}
}
