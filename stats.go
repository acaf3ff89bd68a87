package crew

// Stats is a snapshot of a pool's state and counts. The counts only grow;
// for any snapshot
//
//	Submitted == Succeeded + Failed + Panicked + TimedOut + Canceled + Rejected + InFlight()
//
// holds, where InFlight is the number of accepted tasks not yet terminal.
type Stats struct {
	// Workers is the number of live workers; Busy of those running a task.
	Workers, Busy int
	// MaxWorkers is the bound set by WithWorkers or Resize.
	MaxWorkers int
	// Queued is the number of tasks waiting for a worker; QueueCapacity the
	// most that may wait.
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
	// Rejected counts tasks refused at submission (queue full, pool closed,
	// context ended while waiting) and queued tasks dropped by shutdown.
	Rejected uint64
}

// InFlight is the number of accepted tasks not yet terminal: queued or
// running.
func (s Stats) InFlight() uint64 {
	return s.Submitted - s.Succeeded - s.Failed - s.Panicked - s.TimedOut - s.Canceled - s.Rejected
}

// Stats returns a snapshot of the pool. It takes the pool's lock once and
// reads a few counters per live worker: cheap enough for every scrape.
func (p *Pool) Stats() Stats {
	var s Stats
	// Outcomes are read before submissions: every outcome follows its
	// submission, so the snapshot never shows more finished than submitted.
	p.mu.Lock()
	p.retired.addTo(&s)
	for w := range p.workers {
		w.counts.addTo(&s)
	}
	parked := len(p.idle)
	s.Waiting = len(p.waiters)
	p.mu.Unlock()
	p.counts.addTo(&s)
	refused := p.counts.refused.Load()
	s.Rejected += refused
	s.Submitted = p.q.pushes() + refused

	s.Workers = int(p.alive())
	s.Busy = max(0, s.Workers-parked-int(p.spinning.Load()))
	s.MaxWorkers = int(p.max.Load())
	s.Queued = p.q.len()
	s.QueueCapacity = int(p.q.size)
	s.Paused = p.paused.Load()
	s.Closed = p.level.Load() != levelOpen
	return s
}
