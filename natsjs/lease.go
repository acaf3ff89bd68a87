package natsjs

import (
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Leases. A held message, waiting or running, is renewed with InProgress
// once its lease is older than the heartbeat fraction of AckWait, and then
// once per such fraction: one renewal per message per period, sent by Run's
// loop from one scan of the held list, with no timer per message. A slow
// handler therefore costs a heartbeat every few seconds, not a storm of
// them, and a message waiting for a slot never ages out unnoticed, unless
// no handler started for a whole AckWait
// (handBackStalled). A handler whose context the pool cancelled
// gets no more renewals: ignoring its context cannot hold a message for
// ever. When renewals fail for a whole AckWait the
// lease is lost: a waiting message is dropped without a nak (the server
// gives it out again), a running one has its handler's context cancelled
// with ErrLeaseLost.

// handBackStalled hands back the messages that have waited a whole
// AckWait while no handler of this Source started and none runs on the
// pool with its lease held: the pool is stuck (its workers taken by
// handlers that ignore their cancellation) or taken by other work, and
// renewing would hold them for ever. A handback costs a delivery, so while
// one of our handlers runs healthily, however long, the pool is busy, not
// stuck, and the waiting messages are renewed instead. Until a handler
// starts again the Source pulls without a window, so that it does not take
// them straight back.
func (s *Source) handBackStalled(now time.Time) {
	if now.Sub(time.Unix(0, s.lastStart.Load())) < s.ackWait || s.anyOnPool() {
		return
	}
	s.mu.Lock()
	var back []*Msg
	for m := s.head; m != nil; m = m.next {
		// One waiting out an outage's delay is not waiting for a slot.
		if m.state.Load() == waiting && !m.resting.Load() && now.Sub(m.received) >= s.ackWait && !s.lastDelivery(m) {
			back = append(back, m)
		}
	}
	s.mu.Unlock()
	if len(back) == 0 {
		return
	}
	s.stalled.Store(true)
	for _, m := range back {
		s.handBack(m, "no handler started for an AckWait")
	}
}

// onPool reports whether m's handler runs on the pool with its lease held:
// its context, which ends when the handler returns, neither ended nor one
// of what runs off the pool. s.mu must be held.
func (m *Msg) onPool() bool {
	mc := m.ctx.Load()
	return !m.lost && mc != nil && !mc.off && mc.Err() == nil
}

// anyOnPool reports whether a handler of s runs on the pool with its lease
// held.
func (s *Source) anyOnPool() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for m := s.head; m != nil; m = m.next {
		if m.state.Load() == started && m.onPool() {
			return true
		}
	}
	return false
}

var errDisconnected = errors.New("natsjs: disconnected")

// renewLeases renews every held message whose lease is due. Called by Run
// only.
func (s *Source) renewLeases(now time.Time) {
	s.handBackStalled(now)
	if s.journal != nil {
		s.beatJournal(now)
	}
	if s.gaveUp.Load() && s.pool.Stats().Closed && !s.anyOnPool() {
		// The stop gave up, and the pool has stopped: no handler of ours
		// runs on it but those it cancelled.
		s.letGo()
	}
	s.mu.Lock()
	due := s.scratch[:0]
	for m := s.head; m != nil; m = m.next {
		if m.lost || now.Sub(m.leased) < s.renewAfter {
			continue
		}
		if mc := m.ctx.Load(); mc != nil && mc.Err() != nil {
			// The pool cancelled it (timeout, hard stop) and the handler
			// has not returned: its lease is left to lapse, so that a
			// handler ignoring its context does not hold the message (and
			// its job) for ever.
			continue
		}
		due = append(due, m)
	}
	s.mu.Unlock()
	for _, m := range due {
		if m.state.Load() == handedBack {
			continue
		}
		err := m.raw.InProgress()
		if err == nil && s.o.conn != nil && !s.o.conn.IsConnected() {
			err = errDisconnected // buffered, not sent: the lease is not renewed
		}
		if errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			continue // settled meanwhile
		}
		s.mu.Lock()
		lost := false
		if err == nil {
			m.leased = now
		} else if now.Sub(m.leased) >= s.ackWait {
			lost = true
			m.lost = true
		}
		s.mu.Unlock()
		if err == nil {
			s.c.heartbeats.Add(1)
			continue
		}
		if !lost {
			continue
		}
		if m.state.CompareAndSwap(waiting, handedBack) {
			s.unwait(m)
			s.c.leasesLost.Add(1)
			s.logWarn("lease lost while waiting; dropped", m, err)
			s.release(m)
		} else if mc := m.ctx.Load(); mc != nil {
			if mc.cancelWith(ErrLeaseLost) {
				s.c.leasesLost.Add(1)
			}
		}
	}
	clear(due)
	s.scratch = due[:0]
}
