package crew

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// ShutdownMode says what Shutdown does with queued and running tasks. In
// every mode new submits fail with ErrClosed at once, and so do submitters
// already waiting for room.
//
// Which one fits: a service whose accepted work is a promise (it answered
// 202) drains until the deadline, DrainThenHard, the default; a service
// whose clients retry (synchronous handlers) stops taking queued work,
// SoftThenHard; a pool fed by a durable source may use either, since the
// source hands unstarted work back.
type ShutdownMode uint8

const (
	// DrainThenHard runs queued tasks and lets running ones finish until
	// shortly before the deadline of the context given to Shutdown (by the
	// stop grace, or half the time left if that is less), then stops hard:
	// what is still queued completes with ErrNotRun, running tasks are
	// cancelled, and Shutdown returns by the deadline. Without a deadline it
	// turns hard when the context ends. It is the zero value and the
	// default: nothing accepted is dropped while there is time to run it.
	DrainThenHard ShutdownMode = iota
	// Drain runs every queued task and lets running ones finish. A paused
	// pool is resumed.
	Drain
	// Soft completes queued tasks with ErrNotRun, without running them, and
	// lets running ones finish.
	Soft
	// SoftThenHard is Soft, then Hard as DrainThenHard turns hard.
	SoftThenHard
	// Hard completes queued tasks with ErrNotRun and cancels the contexts of
	// running tasks at once; their waiters learn ErrCanceled at once, while
	// each worker stays taken until its function returns.
	Hard
)

var modeNames = [...]string{"drain-then-hard", "drain", "soft", "soft-then-hard", "hard"}

// String returns the mode's name.
func (m ShutdownMode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("ShutdownMode(%d)", m)
}

// cancelSettle is how long a wait that must end (its context has ended)
// still gives functions cancelled just before to return, so that a function
// that returns at once on cancellation is not reported as stuck. It is
// capped by the stop grace.
const cancelSettle = 5 * time.Millisecond

// Shutdown stops the pool as mode says and waits for every worker to exit.
// It returns nil once they have. It returns by the deadline of ctx
// (invariant 8):
//
//   - Drain and Soft return ctx.Err() when ctx ends; the work goes on, and a
//     later Shutdown or Close waits again.
//   - DrainThenHard and SoftThenHard turn hard before the deadline, by the
//     stop grace or by half the time left if that is less, so that cancelled
//     functions have time to return; without a deadline they turn hard when
//     ctx ends and then wait up to the stop grace.
//   - Hard cancels at once and waits until the deadline, or up to the stop
//     grace without one.
//
// When the wait ends with task functions still running, the error wraps
// ctx.Err() (if ctx ended) and ErrStuck, and names them. A function
// cancelled less than a moment (5 ms) before the end is given that moment.
//
// Shutdown may be called more than once and concurrently with anything
// else; a stronger mode given later escalates a weaker one in progress.
// Called from a task of the pool itself, it begins the stop and returns
// ErrCalledFromTask rather than wait for its caller. A pool may not be
// reused after Shutdown.
func (p *Pool) Shutdown(ctx context.Context, mode ShutdownMode) error {
	if ctx == nil {
		return invalid("nil context")
	}
	lv, escalate := levelDrain, false
	switch mode {
	case DrainThenHard:
		escalate = true
	case Drain:
	case SoftThenHard:
		lv, escalate = levelSoft, true
	case Soft:
		lv = levelSoft
	case Hard:
		lv = levelHard
	default:
		return invalid("shutdown mode %d", mode)
	}
	p.stop(lv, mode.String())
	return p.await(ctx, escalate)
}

// Close stops the pool hard (see Hard) and waits up to the stop grace for
// the workers to exit. It returns nil, or an error wrapping ErrStuck that
// names the task functions still running.
func (p *Pool) Close() error {
	p.stop(levelHard, "close")
	return p.await(context.Background(), false)
}

// stop raises the stopping level to lv and does what it requires; why says
// what asked for it, in the log.
//
// The first stop closes the queue and lifts a pause before it publishes the
// level: whoever sees the pool stopping and its queue empty (a worker about
// to exit, tryTerminate) then knows that no push can follow and that no
// pause holds back what is queued. Published the other way round, the last
// worker could exit and the pool terminate in between, and the pushes that
// still got in stayed queued with no worker, while Shutdown returned nil.
func (p *Pool) stop(lv int32, why string) {
	var snap Stats
	if p.cfg.logger != nil && p.level.Load() == levelOpen {
		snap = p.Stats()
	}

	p.mu.Lock()
	prev := p.level.Load()
	if lv <= prev {
		p.mu.Unlock()
		return
	}
	if prev == levelOpen {
		p.q.close()
		p.paused.Store(false)
		close(p.closing)
		// A pool never given a task says nothing of its stop.
		p.stopLog = stopLog{start: snap, mode: why, quiet: snap.Submitted == 0}
		yieldpoint()
	}
	p.level.Store(lv)
	quiet := p.stopLog.quiet
	p.mu.Unlock()
	if l := p.cfg.logger; l != nil && !quiet {
		if prev == levelOpen {
			l.Info("crew: shutdown started", "pool", p.cfg.name, "mode", why, "stop_level", levelNames[lv],
				"queued", snap.Queued, "busy", snap.Busy)
		} else {
			s := p.Stats()
			l.Info("crew: shutdown escalated", "pool", p.cfg.name, "from", levelNames[prev], "to", levelNames[lv],
				"reason", why, "queued", s.Queued, "busy", s.Busy)
		}
	}
	if lv >= levelSoft {
		p.dropQueue()
	}
	if lv >= levelHard {
		p.cancelRunning()
	}
	p.workers.kick()
	p.workers.wakeAll()
	p.tryTerminate()
}

// stopLog is what the shutdown's log lines report: the mode asked for
// first and the counts when it began.
type stopLog struct {
	start Stats
	mode  string
	quiet bool // the pool was never given a task: its stop is not logged
}

// dropQueue completes every queued task with ErrNotRun. It counts as a
// worker goroutine meanwhile, so that the pool cannot terminate between a
// pop and its count.
func (p *Pool) dropQueue() {
	p.workers.goroutines.Add(1)
	defer func() {
		if p.workers.goroutines.Add(-1) == 0 {
			p.tryTerminate()
		}
	}()
	var it item
	for {
		if p.q.pop(&it) {
			p.drop(&it, &p.counts)
			continue
		}
		if p.q.len() == 0 {
			return
		}
		runtime.Gosched() // a push that won its slot is still writing it
	}
}

// drop completes a queued task without running it.
func (p *Pool) drop(it *item, c *counters) {
	name := it.name
	switch {
	case it.t != nil:
		it.t.complete(Queued, Dropped, ErrNotRun, c)
		name = it.t.name
	case it.g != nil:
		it.g.complete(Dropped, ErrNotRun, c)
	default:
		c.count(Dropped)
	}
	if p.cfg.observer != nil {
		p.observe(Observation{Name: name, Wait: time.Since(p.epoch) - it.enq, State: Dropped})
	}
}

// cancelRunning cancels the context of every running long task and
// completes it with ErrCanceled, and cancels the groups of running group
// functions; the workers stay taken until the functions return.
func (p *Pool) cancelRunning() {
	var running []*Task
	var groups []*Group
	p.workers.each(func(w *worker) {
		if t := w.current.Load(); t != nil {
			running = append(running, t)
		}
		if g := w.group.Load(); g != nil {
			groups = append(groups, g)
		}
	})
	p.workers.mu.Lock()
	groups = append(groups, p.workers.helpers...)
	p.workers.mu.Unlock()
	for _, g := range groups {
		g.cancel(ErrCanceled)
	}
	for _, t := range running {
		t.complete(Running, Canceled, ErrCanceled, &p.counts)
	}
}

// tryTerminate marks the pool terminated when it is stopping, its queue is
// empty and no worker goroutine is left, and then releases the waiters of
// Shutdown and Close.
func (p *Pool) tryTerminate() {
	if p.level.Load() == levelOpen || p.q.len() != 0 || p.workers.goroutines.Load() != 0 {
		return
	}
	if p.workers.terminate() {
		p.exitOnce.Do(func() {
			p.workers.stopReaper()
			close(p.exited)
		})
	}
}

// terminated reports whether the pool has terminated, and if so makes sure
// its end is logged.
func (p *Pool) terminated() bool {
	select {
	case <-p.exited:
		p.afterTerminate()
		return true
	default:
		return false
	}
}

// await waits for the pool to terminate, by the rules Shutdown documents;
// escalate says whether the stop turns hard near the deadline.
func (p *Pool) await(ctx context.Context, escalate bool) error {
	if p.terminated() {
		return nil
	}
	if p.calledFromTask() {
		return ErrCalledFromTask
	}
	var hardAt time.Time
	var turn, grace <-chan time.Time
	var graceTimer *time.Timer
	defer func() {
		if graceTimer != nil {
			graceTimer.Stop()
		}
	}()
	// Without a deadline, the stop grace bounds the hard stop's wait.
	startGrace := func() {
		graceTimer = time.NewTimer(p.cfg.stopGrace)
		grace = graceTimer.C
	}
	deadline, hasDeadline := ctx.Deadline()
	if p.level.Load() >= levelHard {
		hardAt = time.Now()
		if !hasDeadline {
			startGrace()
		}
	} else if escalate && hasDeadline {
		left := time.Until(deadline)
		t := time.NewTimer(left - min(p.cfg.stopGrace, left/2))
		defer t.Stop()
		turn = t.C
	}
	done := ctx.Done()
	for {
		select {
		case <-p.exited:
			p.afterTerminate()
			return nil
		case <-turn:
			turn = nil
			p.stop(levelHard, "deadline near")
			hardAt = time.Now()
		case <-grace:
			return p.stuck(ctx.Err())
		case <-done:
			if p.terminated() {
				return nil
			}
			if !escalate && hardAt.IsZero() {
				return p.unfinished(ctx.Err())
			}
			if hardAt.IsZero() {
				p.stop(levelHard, "context ended")
				hardAt = time.Now()
				if !hasDeadline {
					done = nil
					startGrace()
					continue
				}
			}
			p.settle(hardAt)
			return p.stuck(ctx.Err())
		}
	}
}

// settle gives the functions cancelled at hardAt the moment of cancelSettle
// to return, or less when the stop grace is shorter.
func (p *Pool) settle(hardAt time.Time) {
	d := min(cancelSettle, p.cfg.stopGrace) - time.Since(hardAt)
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
	}
}

// afterTerminate runs once the pool has terminated: it waits for the pool
// context's callback, if it started, and logs the end of the shutdown.
func (p *Pool) afterTerminate() {
	p.ctxOnce.Do(func() {
		if p.stopCtx != nil && !p.stopCtx() {
			<-p.ctxStopped
		}
		p.logEnd("crew: shutdown finished", nil)
	})
}

// unfinished is the error of a Drain or Soft wait whose context ended
// before the pool terminated; the work goes on.
func (p *Pool) unfinished(err error) error {
	p.logEnd("crew: shutdown wait ended, work goes on", err)
	return err
}

// stuck describes the task functions still running when a wait must end,
// joined with ctxErr. Nil if the pool terminated after all.
func (p *Pool) stuck(ctxErr error) error {
	if p.terminated() {
		return nil
	}
	var names []string
	p.workers.each(func(w *worker) {
		if t := w.current.Load(); t != nil {
			names = append(names, fmt.Sprintf("%q", t.name))
		}
	})
	busy := p.Stats().Busy
	err := errors.Join(ctxErr, fmt.Errorf("%w: %d worker(s) busy after cancellation; long tasks: [%s]", ErrStuck, busy, strings.Join(names, ", ")))
	p.logEnd("crew: shutdown ended with tasks ignoring cancellation", err)
	return err
}

// logEnd logs the end of a shutdown, or of one wait for it, with the counts
// since it began.
func (p *Pool) logEnd(msg string, err error) {
	l := p.cfg.logger
	if l == nil {
		return
	}
	p.mu.Lock()
	a := p.stopLog
	p.mu.Unlock()
	if a.quiet {
		return
	}
	s := p.Stats()
	args := []any{"pool", p.cfg.name, "mode", a.mode,
		"succeeded", s.Succeeded - a.start.Succeeded, "failed", s.Failed - a.start.Failed + s.Panicked - a.start.Panicked,
		"timed_out", s.TimedOut - a.start.TimedOut, "canceled", s.Canceled - a.start.Canceled,
		"not_run", s.Dropped - a.start.Dropped, "rejected", s.Rejected - a.start.Rejected, "busy", s.Busy, "queued", s.Queued}
	if err != nil {
		l.Warn(msg, append(args, "error", err)...)
		return
	}
	l.Info(msg, args...)
}

// loopName and helpName are the names the runtime gives worker.loop and
// split.help in a stack trace.
var (
	loopName = runtime.FuncForPC(reflect.ValueOf((*worker).loop).Pointer()).Name()
	helpName = runtime.FuncForPC(reflect.ValueOf((*split).help).Pointer()).Name()
)

// calledFromTask reports whether the caller runs on one of the pool's own
// slots: on one of its workers, or as the helping caller of a Map or
// ForEach on the pool (workerSet's rule 6), in which case waiting for the
// workers would wait for itself. There is no goroutine identity in Go, so
// it reads its own stack: the worker's loop is at the bottom, with the
// worker's address as its receiver, and a helping caller's stack holds
// split.help with the split's address (that of its group, its first
// field); it compares those with the pool's workers and helpers. It costs
// a stack trace, once per Shutdown that must wait.
func (p *Pool) calledFromTask() bool {
	buf := make([]byte, 16<<10)
	for {
		n := runtime.Stack(buf, false)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	found := false
	for addr := range receivers(buf, loopName) {
		p.workers.each(func(w *worker) {
			if reflect.ValueOf(w).Pointer() == addr {
				found = true
			}
		})
	}
	for addr := range receivers(buf, helpName) {
		p.workers.mu.Lock()
		for _, g := range p.workers.helpers {
			if reflect.ValueOf(g).Pointer() == addr {
				found = true
			}
		}
		p.workers.mu.Unlock()
	}
	return found
}

// receivers yields the receiver's address of every frame of fn in stack.
func receivers(stack []byte, fn string) iter.Seq[uintptr] {
	return func(yield func(uintptr) bool) {
		prefix := []byte(fn + "(0x")
		for {
			i := bytes.Index(stack, prefix)
			if i < 0 {
				return
			}
			rest := stack[i+len(prefix):]
			end := bytes.IndexAny(rest, ",)?")
			if end < 0 {
				return
			}
			if a, err := strconv.ParseUint(string(rest[:end]), 16, 64); err == nil && !yield(uintptr(a)) {
				return
			}
			stack = rest[end:]
		}
	}
}
