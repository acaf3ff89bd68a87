package crew

import "time"

// How a worker runs the task it took (worker.take): a short task inline, a
// long task with its context and timeout, a group's function through its
// group; each counted once, reported to the observer, its panic recovered.
// A task dropped by a soft stop never runs.

// run runs the task in it, or drops it if the pool has begun a soft stop.
func (w *worker) run(it *item) {
	p := w.p
	if p.level.Load() >= levelSoft {
		w.owed = false // drop counts it before the observer hears of it
		p.drop(it, &w.counts)
		return
	}
	// Until the task is counted, a runtime.Goexit (in its function, or in
	// a hook called before the count: the panic handler) leaves it to
	// goexit; after, a Goexit in the observer must not count it again.
	w.owed = true
	switch {
	case it.t != nil:
		w.runTask(it)
	case it.g != nil:
		w.runGroup(it)
	default:
		w.runShort(it)
	}
}

func (w *worker) runShort(it *item) {
	p := w.p
	if p.cfg.observer != nil {
		w.began = w.clockStart(it.enq)
	}
	pe := callShort(it.fn, it.name)
	state := Succeeded
	if pe != nil {
		state = Panicked
		p.panicked(pe)
		w.counts.count(state)
	} else if w.unflushed++; w.unflushed == flushEvery || p.cfg.observer != nil {
		// With an observer, counted before it is observed: what an
		// observation reports, Stats already shows. Its clock readings
		// cost more than the add.
		w.flush()
	}
	w.owed = false // counted (unflushed counts: flush runs before exit)
	if p.cfg.observer != nil {
		end := w.clockEnd()
		p.observe(Observation{Name: it.name, Wait: w.began - it.enq, Run: end - w.began, State: state})
	}
}

// clockStart is the start of a task queued at enq, for the observer: the
// end of the previous task when the worker went straight on to this one
// (one clock reading per task instead of two), else a fresh reading. It is
// never before enq.
func (w *worker) clockStart(enq time.Duration) time.Duration {
	if w.fresh {
		return max(w.mark, enq)
	}
	return time.Since(w.p.epoch)
}

// clockEnd reads the clock at a task's end and keeps the reading for the
// next task's start.
func (w *worker) clockEnd() time.Duration {
	w.mark = time.Since(w.p.epoch)
	w.fresh = true
	return w.mark
}

func callShort(fn func(), name string) (pe *PanicError) {
	defer catch(name, &pe)
	fn()
	return nil
}

func (w *worker) runTask(it *item) {
	p := w.p
	t := it.t
	t.start()
	// One monotonic clock read serves the deadline and the observer.
	switch {
	case p.cfg.observer != nil:
		w.began = w.clockStart(it.enq)
		t.began = w.began
	case t.timeout > 0:
		t.began = time.Since(p.epoch)
	}
	w.current.Store(t)
	// A hard stop sets the level, then looks at current; we store current,
	// then look at the level. One of the two sees the other.
	if p.level.Load() >= levelHard {
		w.current.Store(nil)
		w.completeTask(t, Canceled, ErrCanceled, it, false)
		return
	}
	if t.timeout > 0 {
		w.arm(t)
	}
	err, pe := callTask(t)
	t.fn = nil // a handle kept by the caller does not keep the closure alive
	if t.timeout > 0 {
		w.disarm()
	}
	w.current.Store(nil)
	state := Succeeded
	switch {
	case pe != nil:
		state, err = Panicked, pe
		p.panicked(pe)
	case err != nil:
		state = Failed
	}
	w.completeTask(t, state, err, it, true)
}

// completeTask completes a running task as to, counts it if this call won
// (a timeout or a hard stop may have completed it first), and reports the
// task's real terminal state to the observer.
func (w *worker) completeTask(t *Task, to State, err error, it *item, ran bool) {
	p := w.p
	t.complete(Running, to, err, &w.counts)
	w.owed = false
	if p.cfg.observer == nil {
		return
	}
	end := w.clockEnd()
	o := Observation{Name: t.name, Wait: w.began - it.enq, State: t.settled()}
	if ran {
		o.Run = end - w.began
	}
	p.observe(o)
}

func callTask(t *Task) (err error, pe *PanicError) {
	defer catch(t.name, &pe)
	return t.fn(t.context()), nil
}

func (w *worker) runGroup(it *item) {
	p := w.p
	g := it.g
	if p.cfg.observer != nil {
		w.began = w.clockStart(it.enq)
	}
	// As in runTask: a hard stop sets the level, then cancels the groups of
	// running functions; we publish the group, then look at the level.
	w.group.Store(g)
	w.ranRunner = it.efn == nil // a runner of a Map or ForEach
	state, err, pe := g.run(it.efn, it.name, p.level.Load() >= levelHard)
	w.group.Store(nil)
	if pe != nil { // reported before the group's waiters are released
		p.panicked(pe)
	}
	g.complete(state, err, &w.counts)
	w.owed = false
	if p.cfg.observer != nil {
		o := Observation{Name: it.name, Wait: w.began - it.enq, State: state}
		if state != Canceled {
			o.Run = w.clockEnd() - w.began
		}
		p.observe(o)
	}
}

// goexit cleans up after runtime.Goexit was called on the worker: by a
// task function, or by a hook (the panic handler, the observer). A task
// not yet counted fails with ErrGoexit (and the observer hears so); one
// already counted, whose observer called it, is left as it is. Either way
// the slot is given up and a replacement is started if work is waiting.
func (w *worker) goexit(it *item) {
	p := w.p
	if t := w.current.Load(); t != nil {
		if t.timeout > 0 { // the timer is armed only while current is set
			w.disarm()
		}
		w.current.Store(nil)
	}
	w.group.Store(nil)
	if w.owed {
		w.owed = false
		name := it.name
		switch {
		case it.t != nil:
			// A timeout or a hard stop may have completed it first.
			it.t.complete(Running, Failed, ErrGoexit, &w.counts)
			name = it.t.name
		case it.g != nil:
			it.g.complete(Failed, ErrGoexit, &w.counts)
		default:
			w.counts.count(Failed) // a short task
		}
		if p.cfg.observer != nil {
			p.observe(Observation{Name: name, Wait: w.began - it.enq, Run: time.Since(p.epoch) - w.began, State: Failed})
		}
	}
	p.workers.giveUpSlot()
	p.workers.kick()
}

// panicked reports a recovered panic to the handler and the log. A panic in
// the handler itself is recovered and logged: it must not take the worker
// down.
func (p *Pool) panicked(pe *PanicError) {
	if l := p.cfg.logger; l != nil {
		l.Error("crew: task panicked", "pool", p.cfg.name, "task", pe.Task, "panic", pe.Value, "stack", string(pe.Stack))
	}
	if h := p.cfg.onPanic; h != nil {
		defer p.hookPanicked("panic handler")
		h(pe)
	}
}

// observe hands o to the observer. A panic in the observer is recovered and
// logged: it must not take the worker down, nor leave the task uncounted.
func (p *Pool) observe(o Observation) {
	defer p.hookPanicked("observer")
	p.cfg.observer(o)
}

// hookPanicked is deferred around the calls of the user's hooks.
func (p *Pool) hookPanicked(hook string) {
	if v := recover(); v != nil {
		if l := p.cfg.logger; l != nil {
			l.Error("crew: "+hook+" panicked", "pool", p.cfg.name, "panic", v)
		}
	}
}

// A long task's timeout runs on its worker's timer, made once per worker and
// reused: arm before the function starts, disarm after it returns. At the
// timeout the task completes with ErrTimeout and its context ends, while the
// worker stays taken until the function returns (invariant 2).

// arm starts the worker's timer for t's timeout.
func (w *worker) arm(t *Task) {
	if w.timer == nil {
		w.fired = make(chan struct{}, 1)
		w.timer = time.AfterFunc(t.timeout, w.onTimeout)
		return
	}
	w.timer.Reset(t.timeout)
}

// disarm stops the timer; if it already fired, it waits for the callback to
// finish so that the callback never sees the worker's next task.
func (w *worker) disarm() {
	if !w.timer.Stop() {
		<-w.fired
	}
}

// onTimeout runs when the current task's timeout passes: its waiters learn
// ErrTimeout now, its context is cancelled, and the worker stays taken until
// the function returns.
func (w *worker) onTimeout() {
	if t := w.current.Load(); t != nil {
		t.complete(Running, TimedOut, ErrTimeout, &w.counts)
	}
	w.fired <- struct{}{}
}
