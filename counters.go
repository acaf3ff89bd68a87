package crew

import "sync/atomic"

// counters are outcome counts. Each worker has its own, so that the hot path
// adds to a cache line no other worker writes; Stats sums them.
type counters struct {
	succeeded atomic.Uint64
	failed    atomic.Uint64
	panicked  atomic.Uint64
	timedOut  atomic.Uint64
	canceled  atomic.Uint64
	rejected  atomic.Uint64 // accepted, then dropped by shutdown
	refused   atomic.Uint64 // refused at submission: full, closed, ctx ended
	_         [8]byte
}

func (c *counters) count(s State) {
	switch s {
	case Succeeded:
		c.succeeded.Add(1)
	case Failed:
		c.failed.Add(1)
	case Panicked:
		c.panicked.Add(1)
	case TimedOut:
		c.timedOut.Add(1)
	case Canceled:
		c.canceled.Add(1)
	case Rejected:
		c.rejected.Add(1)
	}
}

func (c *counters) addTo(s *Stats) {
	s.Succeeded += c.succeeded.Load()
	s.Failed += c.failed.Load()
	s.Panicked += c.panicked.Load()
	s.TimedOut += c.timedOut.Load()
	s.Canceled += c.canceled.Load()
	s.Rejected += c.rejected.Load()
}

func (c *counters) fold(from *counters) {
	c.succeeded.Add(from.succeeded.Load())
	c.failed.Add(from.failed.Load())
	c.panicked.Add(from.panicked.Load())
	c.timedOut.Add(from.timedOut.Load())
	c.canceled.Add(from.canceled.Load())
	c.rejected.Add(from.rejected.Load())
}
