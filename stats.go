package crew

import (
	"fmt"
	"log/slog"
	"sync/atomic"
)

// Stats is a snapshot of a pool's state and counts. The counts only grow;
// for any snapshot
//
//	Submitted == Succeeded + Failed + Panicked + TimedOut + Canceled + Dropped + Rejected + InFlight()
//
// holds, where InFlight is the number of accepted tasks not yet terminal:
// load shed at submission (Rejected) and accepted work lost to shutdown
// (Dropped) are counted apart.
type Stats struct {
	// Workers is the number of live workers; Busy of those running a task.
	Workers, Busy int
	// MaxWorkers is the bound set by WithWorkers or Resize.
	MaxWorkers int
	// Queued is the number of tasks waiting for a worker, never more than
	// QueueCapacity, the most that may wait.
	Queued, QueueCapacity int
	// Waiting is the number of submitters blocked for room in the queue.
	Waiting int
	// Paused reports whether Pause is in effect; Closed whether shutdown has
	// begun.
	Paused, Closed bool

	// Submitted counts tasks submitted: accepted or refused.
	Submitted uint64
	// Succeeded, Failed, Panicked, TimedOut and Canceled count tasks that
	// reached that state.
	Succeeded, Failed, Panicked, TimedOut, Canceled uint64
	// Dropped counts accepted tasks that shutdown removed from the queue
	// without running them (ErrNotRun).
	Dropped uint64
	// Rejected counts tasks refused at submission, never accepted: queue
	// full, pool closed, context ended while waiting for room.
	Rejected uint64
}

// InFlight is the number of accepted tasks not yet terminal: queued or
// running. A worker busy with a stream of short tasks adds the ones that
// succeeded to Succeeded in batches of up to 64, and whenever it finds the
// queue empty: until then they count as in flight (with WithObserver, each
// is added before it is observed). The counts of an idle or stopped pool
// are exact.
func (s Stats) InFlight() uint64 {
	return s.Submitted - s.Succeeded - s.Failed - s.Panicked - s.TimedOut - s.Canceled - s.Dropped - s.Rejected
}

// String formats the snapshot for a log line or a test failure.
func (s Stats) String() string {
	return fmt.Sprintf("workers %d/%d busy %d queued %d/%d waiting %d paused %v closed %v | submitted %d succeeded %d failed %d panicked %d timed_out %d canceled %d dropped %d rejected %d in_flight %d",
		s.Workers, s.MaxWorkers, s.Busy, s.Queued, s.QueueCapacity, s.Waiting, s.Paused, s.Closed,
		s.Submitted, s.Succeeded, s.Failed, s.Panicked, s.TimedOut, s.Canceled, s.Dropped, s.Rejected, s.InFlight())
}

// LogValue makes a snapshot a group of named fields in log/slog.
func (s Stats) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int("workers", s.Workers), slog.Int("busy", s.Busy), slog.Int("max_workers", s.MaxWorkers),
		slog.Int("queued", s.Queued), slog.Int("queue_capacity", s.QueueCapacity), slog.Int("waiting", s.Waiting),
		slog.Bool("paused", s.Paused), slog.Bool("closed", s.Closed),
		slog.Uint64("submitted", s.Submitted), slog.Uint64("succeeded", s.Succeeded), slog.Uint64("failed", s.Failed),
		slog.Uint64("panicked", s.Panicked), slog.Uint64("timed_out", s.TimedOut), slog.Uint64("canceled", s.Canceled),
		slog.Uint64("dropped", s.Dropped), slog.Uint64("rejected", s.Rejected), slog.Uint64("in_flight", s.InFlight()),
	)
}

// Stats returns a snapshot of the pool. It takes the worker set's lock once
// and reads a few counters per live worker: cheap enough for every scrape.
func (p *Pool) Stats() Stats {
	var s Stats
	// Outcomes are read before submissions: every outcome follows its
	// submission, so the snapshot never shows more finished than submitted.
	parked := p.workers.addCounts(&s)
	p.counts.addTo(&s)
	s.Rejected = p.counts.refused.Load()
	s.Submitted = p.q.pushes() + s.Rejected + p.helped.Load()

	s.Workers = int(p.workers.alive())
	s.Busy = max(0, s.Workers-parked-int(p.workers.spinning.Load()))
	s.MaxWorkers = int(p.workers.max.Load())
	s.Queued = p.q.len()
	s.QueueCapacity = int(p.q.size)
	s.Waiting = int(p.submitters.count.Load())
	s.Paused = p.paused.Load()
	s.Closed = p.level.Load() != levelOpen
	return s
}

// counters are outcome counts. Each worker has its own, so that the hot path
// adds to a cache line no other worker writes; Stats sums them.
type counters struct {
	succeeded atomic.Uint64
	failed    atomic.Uint64
	panicked  atomic.Uint64
	timedOut  atomic.Uint64
	canceled  atomic.Uint64
	dropped   atomic.Uint64 // accepted, then dropped by shutdown
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
	case Dropped:
		c.dropped.Add(1)
	}
}

func (c *counters) addTo(s *Stats) {
	s.Succeeded += c.succeeded.Load()
	s.Failed += c.failed.Load()
	s.Panicked += c.panicked.Load()
	s.TimedOut += c.timedOut.Load()
	s.Canceled += c.canceled.Load()
	s.Dropped += c.dropped.Load()
}

func (c *counters) fold(from *counters) {
	c.succeeded.Add(from.succeeded.Load())
	c.failed.Add(from.failed.Load())
	c.panicked.Add(from.panicked.Load())
	c.timedOut.Add(from.timedOut.Load())
	c.canceled.Add(from.canceled.Load())
	c.dropped.Add(from.dropped.Load())
}
