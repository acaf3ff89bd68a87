package natsjs

import (
	"fmt"
	"sync/atomic"
)

// Stats is a snapshot of a Source's counts. The counts only grow. Every
// received message ends in exactly one of Acked, Naked, Termed, HandedBack,
// LeasesLost, or an ack that failed (logged), or is still InFlight.
type Stats struct {
	// Received counts messages delivered to the Source; Redelivered those of
	// them delivered before (attempt > 1).
	Received, Redelivered uint64
	// Acked counts messages whose handler succeeded and whose ack was sent
	// (confirmed, with WithDoubleAck).
	Acked uint64
	// Naked counts failures naked with backoff for a later attempt.
	Naked uint64
	// Termed counts messages termed after their last attempt;
	// DeadLettered those of them published to the dead-letter subject.
	Termed, DeadLettered uint64
	// HandedBack counts messages naked without delay, not started (a stop)
	// or cancelled by the pool's hard stop: another consumer gets them now.
	HandedBack uint64
	// Recovered counts the deliveries a killed process left noted held in
	// the journal (WithJournal), handed back when Run began; Unrecovered
	// those left to wait out their lease, noted too long ago to hand back
	// safely.
	Recovered, Unrecovered uint64
	// Unavailable counts the runs whose handler reported an outage
	// (Unavailable): each message ran again after the unavailable delay.
	Unavailable uint64
	// Heartbeats counts lease renewals (InProgress) sent.
	Heartbeats uint64
	// Pulls counts pull requests sent: a sweep's, one a lane it asks, and
	// the watches of drained lanes (lanes.go). In a cluster each costs the
	// consumer's raft group two writes (the request's coming and going),
	// so Received over Pulls is worth keeping high.
	Pulls uint64
	// LeasesLost counts messages whose lease could not be renewed for a
	// whole AckWait, or that a stop that gave up let go (Shutdown).
	LeasesLost uint64
	// InFlight is the number of messages held now: received and not yet
	// settled; Unstarted of those not yet started, waiting for a slot;
	// Resting of those waiting out an outage's delay before they run again.
	InFlight, Unstarted, Resting int
	// Window is the window of the last pull decision: unstarted messages
	// the Source may hold beyond the pool's free slots (window.go).
	Window int
}

// String formats the snapshot for a log line or a test failure.
func (s Stats) String() string {
	return fmt.Sprintf("received=%d redelivered=%d acked=%d naked=%d termed=%d dead_lettered=%d handed_back=%d unavailable=%d heartbeats=%d pulls=%d leases_lost=%d recovered=%d in_flight=%d unstarted=%d resting=%d",
		s.Received, s.Redelivered, s.Acked, s.Naked, s.Termed, s.DeadLettered, s.HandedBack, s.Unavailable, s.Heartbeats, s.Pulls, s.LeasesLost, s.Recovered, s.InFlight, s.Unstarted, s.Resting)
}

type counters struct {
	received, redelivered, acked, naked, termed, deadLettered atomic.Uint64
	handedBack, unavailable, heartbeats, leasesLost, pulls    atomic.Uint64
	recovered, unrecovered                                    atomic.Uint64
}

// Stats returns a snapshot of the Source's counts. Consumer lag, which needs
// a request to the server, is Lag.
func (s *Source) Stats() Stats {
	st := Stats{
		Received:     s.c.received.Load(),
		Redelivered:  s.c.redelivered.Load(),
		Acked:        s.c.acked.Load(),
		Naked:        s.c.naked.Load(),
		Termed:       s.c.termed.Load(),
		DeadLettered: s.c.deadLettered.Load(),
		HandedBack:   s.c.handedBack.Load(),
		Unavailable:  s.c.unavailable.Load(),
		Heartbeats:   s.c.heartbeats.Load(),
		Pulls:        s.c.pulls.Load(),
		LeasesLost:   s.c.leasesLost.Load(),
		Recovered:    s.c.recovered.Load(),
		Unrecovered:  s.c.unrecovered.Load(),
		Unstarted:    int(max(0, s.unstarted.Load())),
		Resting:      int(max(0, s.resting.Load())),
	}
	s.mu.Lock()
	st.InFlight, st.Window = s.held, s.lastWindow
	s.mu.Unlock()
	return st
}
