package natsjs

import (
	"math"
	"time"
)

// The window: how many unstarted messages a Source may hold beyond the
// pool's free slots (rule 1 of pull.go). Without WithWindow it adapts. The
// rules, in one place:
//
//  1. Grown by starvation. A pull decision that finds slots of the pool
//     free and none of our messages waiting for them, while the stream has
//     a backlog (the last pull came back full), means the window was too
//     small to hide the time from a pull to its messages starting: it grows
//     by the slots found free. Without a backlog free slots say nothing
//     about the window, and it is left as it is.
//  2. Shrunk by plenty. An interval of rateInterval without starvation
//     takes a sixteenth off: the window settles a little above where the
//     pool starves, and starves it about once an interval at most. A
//     handler that slows down, or other work that takes the pool's slots,
//     leaves the pool fed, and the window shrinks.
//  3. Bounded. Never below MinWindow (what hides a pull's round trip
//     before anything is learned) and never above MaxWindowFactor times the
//     pool's bound (Consume's default prefetch holds 500 whatever the
//     pool), nor above the starts of a tenth of AckWait at the rate of
//     starts measured (over intervals of at least rateInterval, smoothed
//     by a half): a message held unstarted waits far less than its lease,
//     and the stall rule of lease.go still takes the
//     window away when no handler starts for an AckWait.
//
// A window is used by pull decisions only, under the Source's mu.
type window struct {
	fixed  int           // WithWindow's; -1: adaptive
	cur    int           // the adaptive window
	rate   float64       // smoothed starts per second
	count  uint64        // starts at the last rate sample
	since  time.Time     // the last rate sample
	hungry bool          // starved since then
	ackCap time.Duration // a tenth of AckWait
}

const (
	// MinWindow is the adaptive window's floor: what hides a round trip
	// before anything is learned, and all an idle Source holds.
	MinWindow = 2
	// MaxWindowFactor bounds the adaptive window: at most this many times
	// the pool's bound.
	MaxWindowFactor = 4
	// rateInterval is the shortest interval a rate of starts is measured
	// over.
	rateInterval = 50 * time.Millisecond
)

func newWindow(fixed int, ackWait time.Duration) *window {
	return &window{fixed: fixed, cur: MinWindow, ackCap: ackWait / 10}
}

// decide is the window for a pull decision that finds free slots of a
// pool of the given bound free and unstarted messages waiting, after
// started starts in all; backlog says whether the last pull came back full.
func (w *window) decide(now time.Time, started uint64, bound, free, unstarted int, backlog bool) int {
	if w.fixed >= 0 {
		return w.fixed
	}
	if backlog && free > 0 && unstarted == 0 {
		w.cur += free
		w.hungry = true
	}
	if w.since.IsZero() {
		w.since, w.count = now, started
	} else if dt := now.Sub(w.since); dt >= rateInterval {
		r := float64(started-w.count) / dt.Seconds()
		w.rate += (r - w.rate) / 2
		if !w.hungry {
			w.cur -= (w.cur + 15) / 16
		}
		w.since, w.count, w.hungry = now, started, false
	}
	limit := min(MaxWindowFactor*bound, int(math.Ceil(w.rate*w.ackCap.Seconds())))
	w.cur = max(MinWindow, min(w.cur, limit))
	return w.cur
}
