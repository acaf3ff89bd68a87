package natsjs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/crew-go/crew"
	"github.com/nats-io/nats.go"
)

// Headers of a dead letter, beside the original message's own (those whose
// names begin with "Nats-" are left out: a message id or an expected
// sequence would make the dead-letter stream refuse it).
const (
	HeaderReason    = "Crew-Reason"     // the error of the last attempt
	HeaderAttempts  = "Crew-Attempts"   // deliveries made
	HeaderStream    = "Crew-Stream"     // the stream it came from
	HeaderStreamSeq = "Crew-Stream-Seq" // its sequence there
	HeaderSubject   = "Crew-Subject"    // the subject it was published to
	HeaderConsumer  = "Crew-Consumer"   // the consumer that gave up on it
)

// maxReason bounds the reason given to Term and to the dead letter.
const maxReason = 512

// run is the pool task of one message. It returns the handler's error (a
// panic as a *crew.PanicError), so that the pool counts the task as failed.
func (m *Msg) run(ctx context.Context) (err error) {
	s := m.src
	if !m.state.CompareAndSwap(waiting, started) {
		return nil // handed back by a stop, or by a stalled pool
	}
	if s.journal != nil {
		// After the state: a rewrite before this note reads it started.
		if err := s.journal.note('s', m.raw.Reply()); err != nil && s.o.logger != nil && !s.journal.warned.Swap(true) {
			s.o.logger.Warn("natsjs: journal note failed", "error", err)
		}
	}
	s.unwait(m)
	s.started.Add(1)
	m.runs.Add(1)
	s.lastStart.Store(time.Now().UnixNano())
	if s.stalled.Load() {
		s.stalled.Store(false)
		s.signal()
	}
	mc := &msgContext{Context: ctx, src: s}
	m.ctx.Store(mc)

	returned := false
	defer func() {
		if returned {
			return
		}
		pe := s.panicked(m, recover(), "the handler")
		mc.release()
		s.settle(m, mc, ctx, pe)
		err = pe
	}()
	off, err := s.then(m, mc, s.h(mc, m))
	returned = true
	mc.release()
	if off {
		return nil // settled by what the handler left (then.go)
	}
	s.settle(m, mc, ctx, err)
	return err
}

// panicked is the error of a panic in what ran for m (who), r what recover
// returned: nil for runtime.Goexit, after which the goroutine goes on
// exiting. It is logged.
func (s *Source) panicked(m *Msg, r any, who string) *crew.PanicError {
	pe := &crew.PanicError{Task: s.o.taskName, Value: r, Stack: debug.Stack()}
	if r == nil {
		pe.Value = "runtime.Goexit called by " + who
	}
	if s.o.logger != nil {
		s.o.logger.Error("natsjs: "+who+" panicked", "stream_seq", m.seq, "attempt", m.attempt,
			"panic", pe.Value, "stack", string(pe.Stack))
	}
	return pe
}

// settle acks, naks, hands back or terms a message whose handler returned,
// or keeps it to run again after an outage.
func (s *Source) settle(m *Msg, mc *msgContext, taskCtx context.Context, err error) {
	if err == nil && s.o.doubleAck {
		// The confirmation is awaited off the pool's slot, which the next
		// message may take at once; m stays held (counted, and waited for
		// by Run and Shutdown) until it comes.
		go s.confirmAck(m)
		return
	}
	held := false // still held: released later by what holds it
	defer func() {
		if !held {
			s.release(m)
		}
	}()
	switch {
	case err == nil:
		if aerr := m.raw.Ack(); aerr != nil {
			s.logWarn("ack failed; the message will be redelivered", m, aerr)
			return
		}
		s.c.acked.Add(1)
	case errors.Is(mc.cause(), ErrLeaseLost):
		// The server may have given it to another consumer already: a nak
		// now would only add a delivery. It comes back after AckWait.
		s.logWarn("lease lost; not acked", m, err)
	case errors.Is(taskCtx.Err(), context.Canceled) && s.lastDelivery(m):
		// Handed back, it would never come again.
		held = !s.deadLetter(m, fmt.Errorf("natsjs: cancelled by the pool's hard stop at the message's last delivery: %w", err))
	case errors.Is(taskCtx.Err(), context.Canceled):
		// The pool's hard stop cancelled it: not a failure of the message,
		// so no backoff; hand it back now, once our own pulls have ended,
		// lest the server give it straight back to one of them (pull.go,
		// rule 3).
		s.beginStop()
		select {
		case <-s.pullsEnded:
		case <-time.After(time.Second):
		}
		if nerr := m.raw.NakWithDelay(handBackDelay); nerr != nil {
			s.logWarn("hand back failed", m, nerr)
			return
		}
		s.c.handedBack.Add(1)
	case errors.Is(err, ErrUnavailable):
		// Not the message's failure: it runs again here, on the same
		// delivery, so that the outage spends no attempt, neither the
		// server's (MaxDeliver) nor ours (WithMaxDeliver).
		s.c.unavailable.Add(1)
		held = s.runAgain(m)
	case s.maxDeliver > 0 && m.attempt >= s.maxDeliver:
		held = !s.deadLetter(m, err)
	default:
		s.nakLater(m, err)
	}
}

// runAgain makes m wait out the unavailable delay, resting: its lease
// renewed, counted apart from the messages waiting for a slot (so that it
// neither stops the pulls for other messages, up to a bound, nor counts as
// stuck for the stall rule), then submits it again (endRest). A stop
// meanwhile hands it back as any waiting message (reclaim), or at its
// server's last delivery runs it after its delay all the same, unless the
// pool stopped. It reports false, m left to be released, when m's lease
// was lost while its handler returned.
func (s *Source) runAgain(m *Msg) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.lost {
		return false
	}
	m.ctx.Store(nil)
	m.task.Store(nil)
	m.resting.Store(true)
	s.resting.Add(1)
	m.state.Store(waiting)
	m.again = time.AfterFunc(s.o.unavailable, func() { s.endRest(m) })
	return true
}

// endRest submits m again once its rest is over, unless it left waiting
// meanwhile (handed back, its lease lost). For the stall rule it waits for
// a slot from now on.
func (s *Source) endRest(m *Msg) {
	s.unstarted.Add(1)
	if !m.resting.CompareAndSwap(true, false) {
		s.unstarted.Add(-1) // counted out by whoever took it out of waiting
		return
	}
	s.resting.Add(-1)
	s.mu.Lock()
	m.received = time.Now()
	stopping, ctx := s.stopping, s.submitCtx
	s.mu.Unlock()
	s.submit(m, stopping, ctx)
}

// confirmAck acks m and waits for the server's confirmation (WithDoubleAck),
// then releases it.
func (s *Source) confirmAck(m *Msg) {
	defer s.release(m)
	ctx, cancel := context.WithTimeout(context.Background(), s.ackWait)
	defer cancel()
	if err := m.raw.DoubleAck(ctx); err != nil {
		s.logWarn("ack failed; the message will be redelivered", m, err)
		return
	}
	s.c.acked.Add(1)
}

// nakLater naks a failed message with the backoff of its attempt, or the
// delay its handler asked for (RetryAfter).
func (s *Source) nakLater(m *Msg, cause error) {
	delay := backoff(s.o.backoffBase, s.o.backoffMax, m.attempt)
	var later *retryAfterError
	if errors.As(cause, &later) {
		delay = max(later.d, 0)
	}
	if err := m.raw.NakWithDelay(delay); err != nil {
		s.logWarn("nak failed; the message will be redelivered after AckWait", m, err)
		return
	}
	s.c.naked.Add(1)
	if s.o.logger != nil {
		s.o.logger.Info("natsjs: handler failed; retry later", "stream_seq", m.seq, "attempt", m.attempt,
			"delay", delay, "error", cause)
	}
}

// backoff is base·2^(attempt-1) capped at max, less up to half at random.
func backoff(base, max time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	half := d / 2
	return d - half + rand.N(half+1)
}

// deadLetter publishes a message whose last attempt failed to the
// dead-letter subject, then terms it; it reports whether m is settled. Only
// the attempt equal to MaxDeliver gets here, so that retries are never
// skipped (a poison queue must not get a message before its retries are
// spent). A message is never termed without its copy: when the publish
// fails, a message the server will deliver again is naked; one at its
// server's last delivery, which a nak would leave to no one, stays held
// while the publish is tried again (deadLetterLater), and deadLetter
// reports false.
func (s *Source) deadLetter(m *Msg, cause error) bool {
	reason := cause.Error()
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	if s.o.deadJS == nil {
		s.term(m, reason, cause)
		return true
	}
	dl := nats.NewMsg(s.o.deadSubject)
	dl.Data = m.Data()
	for k, v := range m.Header() {
		if !strings.HasPrefix(k, "Nats-") {
			dl.Header[k] = v
		}
	}
	dl.Header.Set(HeaderReason, reason)
	dl.Header.Set(HeaderAttempts, strconv.Itoa(m.attempt))
	stream := s.stream // its lane's, which may be another stream's (lanes.go)
	if md, err := m.raw.Metadata(); err == nil {
		stream = md.Stream
	}
	dl.Header.Set(HeaderStream, stream)
	dl.Header.Set(HeaderStreamSeq, strconv.FormatUint(m.seq, 10))
	dl.Header.Set(HeaderSubject, m.Subject())
	dl.Header.Set(HeaderConsumer, s.consumer)
	err := s.publishDead(context.Background(), dl)
	switch {
	case err == nil:
		s.c.deadLettered.Add(1)
		s.term(m, reason, cause)
		return true
	case !s.lastDelivery(m):
		s.logDeadFailed("dead-letter publish failed; message naked, not termed", m, err)
		s.nakLater(m, cause)
		return true
	}
	s.logDeadFailed("dead-letter publish failed at the message's last delivery; held, and published again later", m, err)
	dc := &msgContext{Context: context.Background(), src: s, off: true}
	m.ctx.Store(dc)
	s.mu.Lock()
	lost := m.lost
	s.mu.Unlock()
	if lost {
		dc.cancelWith(ErrLeaseLost)
	}
	go s.deadLetterLater(m, dc, dl, reason, cause)
	return false
}

// deadLetterLater publishes dl again, after a delay that grows from the
// unavailable delay to the backoff's maximum, until a stream stores it,
// then terms m and releases it. m's lease is renewed meanwhile (dc is its
// context); when dc ends (the lease lost, or a stop that gave up) it gives
// up and lets m go: the server, past its last delivery, gives it to no one
// (logged as an error).
func (s *Source) deadLetterLater(m *Msg, dc *msgContext, dl *nats.Msg, reason string, cause error) {
	defer s.release(m)
	for try := 1; ; try++ {
		t := time.NewTimer(backoff(s.o.unavailable, max(s.o.unavailable, s.o.backoffMax), try))
		select {
		case <-dc.Done():
			t.Stop()
			if s.o.logger != nil {
				s.o.logger.Error("natsjs: dead-letter publish given up; the server will not deliver the message again",
					"stream", s.stream, "consumer", s.consumer, "stream_seq", m.seq, "attempt", m.attempt, "error", context.Cause(dc))
			}
			return
		case <-t.C:
		}
		err := s.publishDead(dc, dl)
		if err == nil {
			s.c.deadLettered.Add(1)
			s.term(m, reason, cause)
			return
		}
		s.logDeadFailed("dead-letter publish failed again", m, err)
	}
}

// publishDead publishes a dead letter, waiting for its stream's answer at
// most AckWait or 10 s.
func (s *Source) publishDead(ctx context.Context, dl *nats.Msg) error {
	ctx, cancel := context.WithTimeout(ctx, min(s.ackWait, 10*time.Second))
	defer cancel()
	_, err := s.o.deadJS.PublishMsg(ctx, dl)
	return err
}

func (s *Source) logDeadFailed(msg string, m *Msg, err error) {
	if s.o.logger != nil {
		s.o.logger.Error("natsjs: "+msg, "stream_seq", m.seq, "attempt", m.attempt, "subject", s.o.deadSubject, "error", err)
	}
}

// term terms m after its last attempt.
func (s *Source) term(m *Msg, reason string, cause error) {
	if err := m.raw.TermWithReason(reason); err != nil {
		s.logWarn("term failed", m, err)
		return
	}
	s.c.termed.Add(1)
	if s.o.logger != nil {
		s.o.logger.Warn("natsjs: message termed after its last attempt", "stream_seq", m.seq,
			"attempt", m.attempt, "dead_letter", s.o.deadSubject, "error", cause)
	}
}
