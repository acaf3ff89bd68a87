package crew

import (
	"runtime"
	"sync/atomic"
	"time"
)

// spinRounds is how many times an idle worker yields and looks at the queue
// again before it parks: long enough to catch the next task of a busy
// stream without a wake-up, short enough to cost nothing when idle.
const spinRounds = 4

// worker is one worker goroutine: it takes tasks from the queue and runs
// them, following the rules of workerSet.
type worker struct {
	p        *Pool
	wake     chan struct{} // one token per wake-up from the idle stack
	parkedAt time.Duration // since the pool's epoch; guarded by workerSet.mu
	retired  bool          // set by the reaper before its token; guarded by workerSet.mu
	looking  bool          // counted in workerSet.spinning: a looker (rule 3)
	looker   bool          // woken as a looker; guarded by workerSet.mu
	mark     time.Duration // the observer's last clock reading, at a task's end
	fresh    bool          // the worker went straight on since mark
	began    time.Duration // the running task's start, for the observer
	timer    *time.Timer   // the running task's timeout, reused
	fired    chan struct{} // the timeout callback has finished
	current  atomic.Pointer[Task]
	group    atomic.Pointer[Group] // the group whose function is running
	counts   counters
	done     uint64 // short tasks succeeded, not yet added to counts (flush)
}

// flushEvery bounds how many succeeded short tasks a busy worker keeps to
// itself before adding them to its counters: one atomic add per batch
// instead of one per task, so Stats may lag a busy worker by that many.
const flushEvery = 64

// flush adds the short tasks counted locally to the worker's counters:
// before it looks for work with an empty queue, and before it exits.
func (w *worker) flush() {
	if w.done > 0 {
		w.counts.succeeded.Add(w.done)
		w.done = 0
	}
}

func (w *worker) loop() {
	normal := false
	var it item // reused: take writes each task over the last
	defer func() {
		if !normal {
			w.goexit(&it)
		}
		w.exit()
	}()
	for {
		if !w.take(&it) {
			normal = true
			return
		}
		w.run(&it)
	}
}

// take takes the next task to run into *it, or returns false when the
// worker must exit, in which case it has already given up its slot.
func (w *worker) take(it *item) bool {
	p := w.p
	ws := &p.workers
	for {
		if ws.alive() > ws.max.Load() {
			w.stopLooking()
			if ws.retireSurplus() {
				return false
			}
		}
		if !p.paused.Load() && p.q.pop(it) {
			yieldpoint()
			if w.looking {
				w.stopLooking()
				yieldpoint()
				if p.q.ready() {
					ws.notify(true) // rule 3: hand on
				}
			}
			if p.submitters.count.Load() > 0 {
				p.submitters.wakeOne()
			}
			return true
		}
		if p.level.Load() != levelOpen && p.q.len() == 0 {
			w.stopLooking()
			ws.giveUpSlot()
			return false
		}
		w.fresh = false
		w.flush()
		*it = item{} // an idle worker must not keep its last task alive
		if w.spin() {
			continue
		}
		if !w.park() {
			return false
		}
	}
}

// startLooking counts the worker as a looker again: it found work on a
// look made after it stopped counting (rules 3, 4 and 5).
func (w *worker) startLooking() {
	if !w.looking {
		w.looking = true
		w.p.workers.spinning.Add(1)
	}
}

// stopLooking takes the worker out of the spinning count (rule 4).
func (w *worker) stopLooking() {
	if w.looking {
		w.looking = false
		w.p.workers.spinning.Add(-1)
	}
}

// hasWork reports whether an idle worker has something to look at.
func (w *worker) hasWork() bool {
	p := w.p
	return (!p.paused.Load() && p.q.ready()) || p.level.Load() != levelOpen || p.workers.alive() > p.workers.max.Load()
}

// spin looks at the queue a few times, yielding in between, counted as
// spinning (rule 4). It returns true, still counted, when there is
// something to look at.
func (w *worker) spin() bool {
	ws := &w.p.workers
	if !w.looking {
		// Enough lookers already: more would only take the CPU from the
		// workers that run tasks (a burst's end set 64 workers yielding to
		// each other while the last tasks waited for a turn).
		if ws.spinning.Load() >= ws.maxSpinning {
			return false
		}
		w.looking = true
		ws.spinning.Add(1)
	}
	for range spinRounds {
		if w.hasWork() {
			return true
		}
		runtime.Gosched()
	}
	yieldpoint()
	w.stopLooking()
	yieldpoint()
	return false
}

// park waits on the idle stack until the worker is woken, or retired by
// the reaper once it has been idle for the idle timeout. It returns false
// when the worker must exit.
func (w *worker) park() bool {
	ws := &w.p.workers
	ws.park(w)
	yieldpoint()
	// Rule 4: publish, then look. Work seen now may be that of pushes that
	// relied on us while we counted as a looker, so we take it as a looker
	// (rule 3), whether we take ourselves off the stack or a waker did.
	seen := w.hasWork()
	if seen && ws.unpark(w) {
		w.startLooking()
		return true
	}
	// Whoever took us off the stack sends a token, and counted us in
	// spinning if it woke us as a looker.
	<-w.wake
	w.looking = w.looker
	if !w.retired {
		if seen {
			w.startLooking()
		}
		return true
	}
	w.stopLooking()
	ws.giveUpSlot()
	yieldpoint()
	if !ws.reclaim() { // rule 5
		return false
	}
	w.startLooking()
	return true
}

func (w *worker) run(it *item) {
	p := w.p
	if p.level.Load() >= levelSoft {
		p.drop(it, &w.counts)
		return
	}
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
	} else if w.done++; w.done == flushEvery {
		w.flush()
	}
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
	state, err, pe := g.run(it.efn, it.name, p.level.Load() >= levelHard)
	w.group.Store(nil)
	if pe != nil { // reported before the group's waiters are released
		p.panicked(pe)
	}
	g.complete(state, err, &w.counts)
	if p.cfg.observer != nil {
		o := Observation{Name: it.name, Wait: w.began - it.enq, State: state}
		if state != Canceled {
			o.Run = w.clockEnd() - w.began
		}
		p.observe(o)
	}
}

func callGroup(fn func() error, name string) (err error, pe *PanicError) {
	defer catch(name, &pe)
	return fn(), nil
}

// goexit cleans up after a task function called runtime.Goexit: the task
// fails with ErrGoexit (and the observer hears so), the slot is given up
// and a replacement is started if work is waiting.
func (w *worker) goexit(it *item) {
	p := w.p
	name := it.name
	if t := w.current.Load(); t != nil {
		if t.timeout > 0 { // the timer is armed only for a task with a timeout
			w.disarm()
		}
		w.current.Store(nil)
		t.complete(Running, Failed, ErrGoexit, &w.counts)
		name = t.name
	} else if g := w.group.Load(); g != nil {
		w.group.Store(nil)
		g.complete(Failed, ErrGoexit, &w.counts)
	} else {
		w.counts.count(Failed) // a short task
	}
	if p.cfg.observer != nil {
		p.observe(Observation{Name: name, Wait: w.began - it.enq, Run: time.Since(p.epoch) - w.began, State: Failed})
	}
	p.workers.giveUpSlot()
	p.workers.kick()
}

func (w *worker) exit() {
	p := w.p
	w.flush()
	if w.timer != nil {
		w.timer.Stop()
	}
	if p.workers.removed(w) {
		p.tryTerminate()
	}
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

// settled waits out the short window in which another finisher has won but
// not yet written the terminal state.
func (t *Task) settled() State {
	for {
		if s := State(t.state.Load()); s != completing {
			return s
		}
		runtime.Gosched()
	}
}
