package crew

import (
	"errors"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
)

// ErrGoexit completes a task whose function called runtime.Goexit (as
// t.FailNow does in a test). The worker it ran on is replaced.
var ErrGoexit = errors.New("crew: task function called runtime.Goexit")

// spinRounds is how many times an idle worker yields and looks at the queue
// again before it parks: long enough to catch the next task of a busy
// stream without a wake-up, short enough to cost nothing when idle.
const spinRounds = 4

type worker struct {
	p        *Pool
	wake     chan struct{} // one token per wake-up from the idle stack
	parkedAt time.Duration // since the pool's epoch; guarded by p.mu
	retired  bool          // set by the reaper before its token; guarded by p.mu
	mark     time.Duration // the observer's last clock reading, at a task's end
	fresh    bool          // the worker went straight on since mark
	timer    *time.Timer   // the running task's timeout, reused
	fired    chan struct{} // the timeout callback has finished
	current  atomic.Pointer[Task]
	group    atomic.Pointer[Group] // the group whose function is running
	counts   counters
}

func newWorker(p *Pool) *worker {
	return &worker{p: p, wake: make(chan struct{}, 1)}
}

func (w *worker) loop() {
	normal := false
	defer func() {
		if !normal {
			w.goexit()
		}
		w.exit()
	}()
	var it item // reused: pop writes each task over the last
	for {
		if !w.next(&it) {
			normal = true
			return
		}
		w.run(&it)
	}
}

// next takes the next task to run into *it, or returns false when the
// worker must exit, in which case it has already given up its slot in ctl.
func (w *worker) next(it *item) bool {
	p := w.p
	idle := false
	for {
		if p.alive() > p.max.Load() && w.retireSurplus() {
			return false
		}
		if !p.paused.Load() {
			if p.q.pop(it) {
				if p.waiting.Load() > 0 {
					p.wakeSubmitter()
				}
				// Submitters that saw this worker idle relied on it, but it
				// takes only one task: hand the rest on, as the Go
				// scheduler's spinning threads do.
				if idle && p.q.ready() {
					p.signal()
				}
				return true
			}
		}
		if p.level.Load() != levelOpen && p.q.len() == 0 {
			p.ctl.Add(^uint64(0))
			return false
		}
		idle = true
		w.fresh = false
		*it = item{} // an idle worker must not keep its last task alive
		if w.spin() {
			continue
		}
		if !w.park() {
			return false
		}
	}
}

// hasWork reports whether an idle worker has something to look at.
func (w *worker) hasWork() bool {
	p := w.p
	return (!p.paused.Load() && p.q.ready()) || p.level.Load() != levelOpen || p.alive() > p.max.Load()
}

func (w *worker) spin() bool {
	p := w.p
	p.spinning.Add(1)
	found := false
	for range spinRounds {
		if w.hasWork() {
			found = true
			break
		}
		runtime.Gosched()
	}
	p.spinning.Add(-1)
	return found
}

// park puts the worker on the idle stack until it is woken, or retired by
// the reaper once it has been idle for the idle timeout. It returns false
// when the worker must exit.
func (w *worker) park() bool {
	p := w.p
	p.mu.Lock()
	w.parkedAt = time.Since(p.epoch)
	w.retired = false
	p.idle = append(p.idle, w)
	p.parked.Add(1)
	if !p.reaping {
		p.armReaper(p.cfg.idleTimeout)
	}
	p.mu.Unlock()
	if w.hasWork() && w.unpark() {
		return true
	}
	<-w.wake // whoever took us off the stack sends a token
	if !w.retired {
		return true
	}
	p.ctl.Add(^uint64(0))
	return w.reclaim()
}

// unpark takes the worker off the idle stack; false means a waker already
// did and a token is on its way.
func (w *worker) unpark() bool {
	p := w.p
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.idle) - 1; i >= 0; i-- {
		if p.idle[i] == w {
			p.idle = slices.Delete(p.idle, i, i+1)
			p.parked.Add(-1)
			return true
		}
	}
	return false
}

// retireSurplus gives up the worker's slot when the pool has more workers
// than its bound; false means it is not surplus after all.
func (w *worker) retireSurplus() bool {
	p := w.p
	for {
		c := p.ctl.Load()
		if int64(c&^terminatedBit) <= p.max.Load() {
			return false
		}
		if p.ctl.CompareAndSwap(c, c-1) {
			return !w.reclaim()
		}
	}
}

// reclaim is called after the worker gave up its slot. A submitter that
// pushed a task just before may have found the pool at its bound and started
// no one, so the worker looks at the queue once more and takes a slot back
// if there is work and room for it.
func (w *worker) reclaim() bool {
	p := w.p
	if p.paused.Load() || p.q.len() == 0 {
		return false
	}
	for {
		c := p.ctl.Load()
		if c&terminatedBit != 0 || int64(c) >= p.max.Load() {
			return false
		}
		if p.ctl.CompareAndSwap(c, c+1) {
			return true
		}
	}
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
	var start time.Duration
	if p.cfg.observer != nil {
		start = w.clockStart(it.enq)
	}
	pe := callShort(it.fn, it.name)
	state := Succeeded
	if pe != nil {
		state = Panicked
		p.panicked(pe)
	}
	w.counts.count(state)
	if p.cfg.observer != nil {
		end := w.clockEnd()
		p.cfg.observer(Observation{Name: it.name, Wait: start - it.enq, Run: end - start, State: state})
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
	defer func() {
		if v := recover(); v != nil {
			pe = newPanicError(name, v)
		}
	}()
	fn()
	return nil
}

func (w *worker) runTask(it *item) {
	p := w.p
	t := it.t
	t.start()
	// One monotonic clock read serves the deadline and the observer.
	var start time.Duration
	switch {
	case p.cfg.observer != nil:
		start = w.clockStart(it.enq)
		t.began = start
	case t.timeout > 0:
		start = time.Since(p.epoch)
		t.began = start
	}
	w.current.Store(t)
	// A hard stop sets the level, then looks at current; we store current,
	// then look at the level. One of the two sees the other.
	if p.level.Load() >= levelHard {
		w.current.Store(nil)
		w.finish(t, Canceled, ErrCanceled, it, start, false)
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
	w.finish(t, state, err, it, start, true)
}

// finish completes a running task as to, counts it if this call won, and
// reports the task's real terminal state to the observer.
func (w *worker) finish(t *Task, to State, err error, it *item, start time.Duration, ran bool) {
	p := w.p
	t.finish(Running, to, err, &w.counts)
	if p.cfg.observer == nil {
		return
	}
	end := w.clockEnd()
	o := Observation{Name: t.name, Wait: start - it.enq, State: t.settled()}
	if ran {
		o.Run = end - start
	}
	p.cfg.observer(o)
}

func callTask(t *Task) (err error, pe *PanicError) {
	defer func() {
		if v := recover(); v != nil {
			pe = newPanicError(t.name, v)
		}
	}()
	return t.fn(t.context()), nil
}

// arm starts the worker's timer for t's timeout. The timer and its
// callback are made once per worker and reused.
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
		t.finish(Running, TimedOut, ErrTimeout, &w.counts)
	}
	w.fired <- struct{}{}
}

func (w *worker) runGroup(it *item) {
	p := w.p
	g := it.g
	var start time.Duration
	if p.cfg.observer != nil {
		start = w.clockStart(it.enq)
	}
	// As in runTask: a hard stop sets the level, then cancels the groups of
	// running functions; we publish the group, then look at the level.
	w.group.Store(g)
	state, err := g.run(it.efn, p.level.Load() >= levelHard)
	w.group.Store(nil)
	g.finished(state, err, &w.counts)
	if state == Panicked {
		p.panicked(err.(*PanicError))
	}
	if p.cfg.observer != nil {
		o := Observation{Name: it.name, Wait: start - it.enq, State: state}
		if state != Canceled {
			o.Run = w.clockEnd() - start
		}
		p.cfg.observer(o)
	}
}

func callGroup(fn func() error) (err error, pe *PanicError) {
	defer func() {
		if v := recover(); v != nil {
			pe = newPanicError("", v)
		}
	}()
	return fn(), nil
}

// goexit cleans up after a task function called runtime.Goexit: the task
// fails with ErrGoexit, the slot is given up and a replacement is started
// if work is waiting.
func (w *worker) goexit() {
	p := w.p
	if t := w.current.Load(); t != nil {
		if t.timeout > 0 { // the timer is armed only for a task with a timeout
			w.disarm()
		}
		w.current.Store(nil)
		t.finish(Running, Failed, ErrGoexit, &w.counts)
	} else if g := w.group.Load(); g != nil {
		w.group.Store(nil)
		g.finished(Failed, ErrGoexit, &w.counts)
	} else {
		w.counts.count(Failed) // a short task
	}
	p.ctl.Add(^uint64(0))
	p.kick()
}

func (w *worker) exit() {
	p := w.p
	if w.timer != nil {
		w.timer.Stop()
	}
	p.mu.Lock()
	delete(p.workers, w)
	p.retired.fold(&w.counts)
	p.mu.Unlock()
	if p.goroutines.Add(-1) == 0 {
		p.tryTerminate()
	}
}

// panicked reports a recovered panic to the handler and the log.
func (p *Pool) panicked(pe *PanicError) {
	if l := p.cfg.logger; l != nil {
		l.Error("crew: task panicked", "pool", p.cfg.name, "task", pe.Task, "panic", pe.Value, "stack", string(pe.Stack))
	}
	if h := p.cfg.onPanic; h != nil {
		h(pe)
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
