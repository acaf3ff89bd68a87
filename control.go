package crew

// Pause stops workers from taking tasks; running tasks go on, and submits
// still queue (and block or fail once the queue is full). It returns
// ErrClosed after shutdown has begun.
func (p *Pool) Pause() error {
	p.mu.Lock()
	if p.level.Load() != levelOpen {
		p.mu.Unlock()
		return ErrClosed
	}
	p.paused.Store(true)
	p.mu.Unlock()
	p.logEvent("crew: paused")
	return nil
}

// Resume undoes Pause: workers are woken or started for the queued tasks.
// It returns ErrClosed after shutdown has begun.
func (p *Pool) Resume() error {
	p.mu.Lock()
	if p.level.Load() != levelOpen {
		p.mu.Unlock()
		return ErrClosed
	}
	p.paused.Store(false)
	p.mu.Unlock()
	p.workers.kick()
	p.logEvent("crew: resumed")
	return nil
}

// Resize sets the bound on workers to n, which must be at least 1. Growing
// starts workers for queued tasks at once, which frees room for blocked
// submitters; shrinking retires surplus workers as they finish their current
// task. It returns ErrClosed after shutdown has begun.
func (p *Pool) Resize(n int) error {
	if n < 1 {
		return invalid("workers %d, want >= 1", n)
	}
	p.mu.Lock()
	if p.level.Load() != levelOpen {
		p.mu.Unlock()
		return ErrClosed
	}
	old := p.workers.max.Swap(int64(n))
	p.mu.Unlock()
	if int64(n) > old {
		p.workers.kick()
	} else {
		p.workers.wakeAll()
	}
	p.logEvent("crew: resized", "from", old, "to", n)
	return nil
}

// limitAboveBound warns, once per pool, that a group's Limit cannot raise
// the parallelism above the pool's bound.
func (p *Pool) limitAboveBound(limit int64) {
	if p.cfg.logger != nil && !p.warnedLimit.Swap(true) {
		p.cfg.logger.Warn("crew: group limit above the pool's bound; the bound wins", "pool", p.cfg.name,
			"limit", limit, "bound", p.workers.max.Load())
	}
}

func (p *Pool) logEvent(msg string, args ...any) {
	if l := p.cfg.logger; l != nil {
		l.Info(msg, append([]any{"pool", p.cfg.name}, args...)...)
	}
}
