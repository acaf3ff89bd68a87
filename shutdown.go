package crew

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"
)

// ShutdownMode says what Shutdown does with queued and running tasks. In
// every mode new submits fail with ErrClosed at once, and so do submitters
// already waiting for room.
type ShutdownMode uint8

const (
	// SoftThenHard is Soft until the context given to Shutdown ends, then
	// Hard. It is the zero value and the default: the right stop for a pod
	// given SIGTERM and a grace period.
	SoftThenHard ShutdownMode = iota
	// Drain runs every queued task and lets running ones finish. A paused
	// pool is resumed.
	Drain
	// Soft completes queued tasks with ErrNotRun, without running them, and
	// lets running ones finish.
	Soft
	// Hard completes queued tasks with ErrNotRun and cancels the contexts of
	// running tasks at once; their waiters learn ErrCanceled at once, while
	// each worker stays taken until its function returns.
	Hard
)

var modeNames = [...]string{"soft-then-hard", "drain", "soft", "hard"}

// String returns the mode's name.
func (m ShutdownMode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("ShutdownMode(%d)", m)
}

// Stopping levels, in the order they escalate.
const (
	levelOpen int32 = iota
	levelDrain
	levelSoft
	levelHard
)

// Shutdown stops the pool as mode says and waits for every worker to exit.
// It returns nil once they have. If ctx ends first it returns ctx.Err():
// with Drain and Soft the work goes on and a later Shutdown or Close waits
// again; with SoftThenHard the stop turns hard at that moment and Shutdown
// then waits up to the stop grace for the cancelled functions to return,
// adding an error wrapping ErrStuck that names those that did not. Hard
// waits for the same, bounded by both ctx and the stop grace.
//
// Shutdown may be called more than once and concurrently with anything
// else; a stronger mode given later escalates a weaker one in progress.
// A pool may not be reused after Shutdown.
func (p *Pool) Shutdown(ctx context.Context, mode ShutdownMode) error {
	if ctx == nil {
		return invalid("nil context")
	}
	switch mode {
	case Drain:
		p.stop(levelDrain)
		return p.await(ctx)
	case Soft:
		p.stop(levelSoft)
		return p.await(ctx)
	case SoftThenHard:
		p.stop(levelSoft)
		err := p.await(ctx)
		if err == nil {
			return nil
		}
		p.stop(levelHard)
		return errors.Join(err, p.awaitGrace(nil))
	case Hard:
		p.stop(levelHard)
		return p.awaitGrace(ctx)
	default:
		return invalid("shutdown mode %d", mode)
	}
}

// Close stops the pool hard (see Hard) and waits up to the stop grace for
// the workers to exit. It returns nil, or an error wrapping ErrStuck that
// names the task functions still running.
func (p *Pool) Close() error {
	p.stop(levelHard)
	return p.awaitGrace(nil)
}

// stop raises the stopping level to lv and does what it requires.
func (p *Pool) stop(lv int32) {
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
	p.level.Store(lv)
	p.paused.Store(false)
	if prev == levelOpen {
		p.q.close()
		close(p.closing)
		p.stopStart = snap
	}
	p.mu.Unlock()
	if prev == levelOpen && p.cfg.logger != nil {
		p.cfg.logger.Info("crew: shutdown started", "pool", p.cfg.name, "mode", levelNames[lv],
			"queued", p.stopStart.Queued, "busy", p.stopStart.Busy)
	}
	if lv >= levelSoft {
		p.dropQueue()
	}
	if lv >= levelHard {
		p.cancelRunning()
	}
	p.kick()
	p.wakeAll()
	p.tryTerminate()
}

var levelNames = [...]string{"open", "drain", "soft", "hard"}

// dropQueue completes every queued task with ErrNotRun. It counts as a
// worker goroutine meanwhile, so that the pool cannot terminate between a
// pop and its count.
func (p *Pool) dropQueue() {
	p.goroutines.Add(1)
	defer func() {
		if p.goroutines.Add(-1) == 0 {
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
		it.t.finish(Queued, Rejected, ErrNotRun, c)
		name = it.t.name
	case it.g != nil:
		it.g.finished(Rejected, ErrNotRun, c)
	default:
		c.count(Rejected)
	}
	if p.cfg.observer != nil {
		p.cfg.observer(Observation{Name: name, Wait: time.Since(p.epoch) - it.enq, State: Rejected})
	}
}

// cancelRunning cancels the context of every running long task and
// completes it with ErrCanceled; the workers stay taken until the
// functions return.
func (p *Pool) cancelRunning() {
	p.mu.Lock()
	var running []*Task
	var groups []*Group
	for w := range p.workers {
		if t := w.current.Load(); t != nil {
			running = append(running, t)
		}
		if g := w.group.Load(); g != nil {
			groups = append(groups, g)
		}
	}
	p.mu.Unlock()
	for _, g := range groups {
		g.cancel(ErrCanceled)
	}
	for _, t := range running {
		t.finish(Running, Canceled, ErrCanceled, &p.counts)
	}
}

// tryTerminate marks the pool terminated when it is stopping, its queue is
// empty and no worker goroutine is left, and then releases the waiters of
// Shutdown and Close.
func (p *Pool) tryTerminate() {
	if p.level.Load() == levelOpen || p.q.len() != 0 || p.goroutines.Load() != 0 {
		return
	}
	if p.ctl.CompareAndSwap(0, terminatedBit) || p.ctl.Load() == terminatedBit {
		p.exitOnce.Do(func() {
			p.mu.Lock()
			if p.reaper != nil {
				p.reaper.Stop()
				p.reaping = false
			}
			p.mu.Unlock()
			close(p.exited)
		})
	}
}

// await waits for the workers to exit or ctx to end.
func (p *Pool) await(ctx context.Context) error {
	select {
	case <-p.exited:
		p.finished()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// awaitGrace waits for the workers to exit, up to the stop grace or the end
// of ctx, and names the tasks still running if they do not.
func (p *Pool) awaitGrace(ctx context.Context) error {
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	grace := time.NewTimer(p.cfg.stopGrace)
	defer grace.Stop()
	select {
	case <-p.exited:
		p.finished()
		return nil
	case <-grace.C:
		return p.stuck()
	case <-done:
		return errors.Join(ctx.Err(), p.stuck())
	}
}

// finished runs once the pool has terminated: it waits for the pool
// context's callback, if it started, and logs the end of the shutdown.
func (p *Pool) finished() {
	p.ctxOnce.Do(func() {
		if p.stopCtx != nil && !p.stopCtx() {
			<-p.ctxStopped
		}
		if l := p.cfg.logger; l != nil {
			s := p.Stats()
			p.mu.Lock()
			a := p.stopStart
			p.mu.Unlock()
			l.Info("crew: shutdown finished", "pool", p.cfg.name,
				"succeeded", s.Succeeded-a.Succeeded, "failed", s.Failed-a.Failed+s.Panicked-a.Panicked,
				"timed_out", s.TimedOut-a.TimedOut, "canceled", s.Canceled-a.Canceled,
				"not_run", s.Rejected-a.Rejected)
		}
	})
}

// stuck describes the task functions still running.
func (p *Pool) stuck() error {
	p.mu.Lock()
	var names []string
	for w := range p.workers {
		if t := w.current.Load(); t != nil {
			names = append(names, fmt.Sprintf("%q", t.name))
		}
	}
	p.mu.Unlock()
	n := int(p.goroutines.Load())
	err := fmt.Errorf("%w: %d worker(s) busy after the stop grace; long tasks: [%s]", ErrStuck, n, strings.Join(names, ", "))
	if l := p.cfg.logger; l != nil {
		l.Warn("crew: tasks ignore cancellation", "pool", p.cfg.name, "error", err)
	}
	return err
}
