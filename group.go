package crew

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
)

// Group runs a set of tasks on a pool and waits for them, in the shape of
// errgroup: g, ctx := NewGroup(ctx, pool); g.Go(f); ...; err := g.Wait().
// Its tasks share the pool's bound and queue with everything else.
//
// By default the first task error (or panic, as a *PanicError) cancels the
// group's context with that error as its cause (context.Cause), and Wait
// returns it; tasks of the group still queued then complete with the cause
// without running. With JoinErrors, every error is kept and Wait returns
// them joined, and an error cancels nothing.
//
// Go costs no allocation; the group itself costs a context. A Group must
// not be copied, and may not be reused after Wait returns.
type Group struct {
	pool   *Pool
	ctx    context.Context
	cancel context.CancelCauseFunc
	cfgErr error
	watch  bool // the parent context can end: Wait must watch it too
	join   bool
	limit  int64
	name   string // of tasks given without one
	parts  parts  // the Map or ForEach the group runs, if any

	pending atomic.Int64 // accepted, not finished
	waiters atomic.Int32 // Go calls waiting for the limit
	slot    chan struct{}

	mu       sync.Mutex
	err      error   // the first error
	errs     []error // every error, with JoinErrors
	skipSeen bool    // the cause of skipped tasks is recorded once
	doneCh   chan struct{}
}

// parts is all a group knows of the Map or ForEach it runs (a split): its
// queued tasks carry no function of their own but run the call's elements,
// and one that starts after the call finished is no failure.
type parts interface {
	// runner runs elements until none is left or the call stops; it
	// returns errPartFailed or errPartPanicked when it recorded failures
	// itself, element by element.
	runner() error
	// finished reports whether every element was claimed and the call did
	// not stop early.
	finished() bool
}

// What a runner returns when it recorded its elements' errors one by one
// itself: its own error only sets its task's state.
var (
	errPartFailed   = errors.New("crew: elements failed")
	errPartPanicked = errors.New("crew: elements panicked")
)

// GroupOption configures a Group, a Results, a Stream, Map or ForEach.
// GroupOptions are created by the functions of this package only.
type GroupOption interface {
	applyGroup(*Group) error
}

type groupOptionFunc func(*Group) error

func (f groupOptionFunc) applyGroup(g *Group) error { return f(g) }

// JoinErrors makes Wait return every error of the group, joined with
// errors.Join (so errors.Is and errors.As see each), instead of the first;
// an error then cancels nothing.
func JoinErrors() GroupOption {
	return groupOptionFunc(func(g *Group) error {
		g.join = true
		return nil
	})
}

// Limit bounds how many tasks of the group may be queued or running at
// once; Go waits for a free place. It must be at least 1. It can only lower
// the parallelism the pool gives: Limit(50) on a pool of 2 workers runs 2 at
// a time, and the pool's logger (WithLogger) warns once when a group's
// Limit is above the pool's bound.
func Limit(n int) GroupOption {
	return groupOptionFunc(func(g *Group) error {
		if n < 1 {
			return invalid("group limit %d, want >= 1", n)
		}
		g.limit = int64(n)
		g.slot = make(chan struct{}, 1)
		return nil
	})
}

// NameTasks names every task of the group that has no name of its own
// (Named): the way to name the tasks of Map, ForEach and their Seq forms,
// in metrics, observations, panic errors and logs.
func NameTasks(name string) GroupOption {
	return groupOptionFunc(func(g *Group) error {
		g.name = name
		return nil
	})
}

// NewGroup returns a group running on pool, and its context, derived from
// ctx: cancelled by the group's first error (unless JoinErrors), when Wait
// returns, and with ctx. A bad option or a nil pool or ctx makes every Go
// and Wait return the error; NewGroup itself never fails.
//
// A group's functions are tasks of the pool: a task of the same pool (or an
// element of a Map on it) that waits for a group, a Results, a Map or
// ForEach (their runners) or a MapSeq on that pool holds a slot those tasks
// may need, and at the bound waits for ever. Nest work on another pool.
func NewGroup(ctx context.Context, pool *Pool, opts ...GroupOption) (*Group, context.Context) {
	g := &Group{}
	g.init(ctx, pool, opts)
	return g, g.ctx
}

// init is NewGroup for a Group allocated by its caller (a Map's split).
func (g *Group) init(ctx context.Context, pool *Pool, opts []GroupOption) {
	g.pool = pool
	if ctx == nil {
		ctx = context.Background()
		g.cfgErr = invalid("nil context")
	}
	g.ctx, g.cancel = context.WithCancelCause(ctx)
	// Otherwise only the group cancels itself, from a finishing task,
	// which signals Wait anyway; not watching saves the context a channel.
	g.watch = ctx.Done() != nil
	if pool == nil {
		g.cfgErr = invalid("nil pool")
	}
	for _, o := range opts {
		if o == nil {
			g.cfgErr = invalid("nil GroupOption")
			continue
		}
		if err := o.applyGroup(g); err != nil && g.cfgErr == nil {
			g.cfgErr = err
		}
	}
	if pool != nil && g.limit > pool.workers.max.Load() {
		pool.limitAboveBound(g.limit)
	}
}

// Go runs fn on the pool as a task of the group, waiting for room in the
// queue (and under the group's Limit). It returns an error when the task
// was not accepted: the cause of the group's cancellation, ErrClosed,
// ErrNilFunc. The error is also recorded in the group, so that Wait reports
// it even if the caller ignores it.
func (g *Group) Go(fn func() error, opts ...TaskOption) error {
	if fn == nil && g.cfgErr == nil {
		g.record(ErrNilFunc)
		return ErrNilFunc
	}
	err := g.submit(fn, opts, true)
	if err != nil {
		g.record(err)
	}
	return err
}

// TryGo is Go without waiting: it returns ErrQueueFull when the pool's
// queue or the group's Limit has no room. Its refusals are not recorded in
// the group.
func (g *Group) TryGo(fn func() error, opts ...TaskOption) error {
	if fn == nil && g.cfgErr == nil {
		return ErrNilFunc
	}
	return g.submit(fn, opts, false)
}

// submit queues fn as a task of the group; a nil fn is a runner of the
// group's Map or ForEach.
func (g *Group) submit(fn func() error, opts []TaskOption, block bool) error {
	if g.cfgErr != nil {
		return g.cfgErr
	}
	var tc taskConfig
	if len(opts) > 0 {
		if err := tc.apply(opts, true); err != nil {
			return err
		}
	}
	if g.ctx.Err() != nil {
		return context.Cause(g.ctx)
	}
	// A closed pool refuses at once, before the Limit is looked at
	// (invariant 5).
	if g.pool.level.Load() != levelOpen {
		g.pool.counts.refused.Add(1)
		return ErrClosed
	}
	if err := g.acquire(block); err != nil {
		return err
	}
	if tc.name == "" {
		tc.name = g.name
	}
	it := item{g: g, efn: fn, name: tc.name}
	var err error
	if block {
		err = g.pool.put(g.ctx, &it)
	} else {
		err = g.pool.tryPut(&it)
	}
	if err != nil {
		g.complete(Dropped, nil, nil)
		if g.ctx.Err() != nil && !errors.Is(err, ErrClosed) {
			err = context.Cause(g.ctx)
		}
	}
	return err
}

// acquire counts a new task as pending, within the group's limit.
func (g *Group) acquire(block bool) error {
	if g.limit == 0 {
		g.pending.Add(1)
		return nil
	}
	for {
		n := g.pending.Load()
		if n < g.limit {
			if g.pending.CompareAndSwap(n, n+1) {
				// Two places may have freed at once for one token: pass
				// the second on.
				if g.waiters.Load() > 0 && n+1 < g.limit {
					g.release()
				}
				return nil
			}
			continue
		}
		if !block {
			return ErrQueueFull
		}
		// Register, then look again: a finisher lowers pending, then looks
		// at waiters, so one of the two sees the other.
		g.waiters.Add(1)
		if g.pending.Load() < g.limit {
			g.waiters.Add(-1)
			continue
		}
		select {
		case <-g.slot:
			g.waiters.Add(-1)
		case <-g.ctx.Done():
			g.waiters.Add(-1)
			return context.Cause(g.ctx)
		case <-g.pool.closing:
			g.waiters.Add(-1)
			g.pool.counts.refused.Add(1)
			return ErrClosed
		}
	}
}

func (g *Group) release() {
	select {
	case g.slot <- struct{}{}:
	default:
	}
}

// run is called by a worker, which has published g as its group, with a
// task of the group; it runs fn unless the group is cancelled or the pool is
// stopping hard. The worker then unpublishes g and calls complete.
//
// A function may return its own panic, caught and wrapped with its place
// (an *IndexError from Map and ForEach): that is a panic too, counted and
// reported as one, with the wrapped error as the group's.
func (g *Group) run(fn func() error, name string, hard bool) (State, error, *PanicError) {
	if hard {
		return Canceled, ErrCanceled, nil
	}
	if g.ctx.Err() != nil {
		if g.parts != nil && g.parts.finished() {
			return Succeeded, nil, nil // a runner too late for a finished call
		}
		return Canceled, context.Cause(g.ctx), nil
	}
	if fn == nil { // a runner of the group's Map or ForEach
		fn = g.parts.runner
	}
	err, pe := callGroup(fn, name)
	switch {
	case err == errPartFailed: // a runner's elements: recorded one by one
		return Failed, nil, nil
	case err == errPartPanicked:
		return Panicked, nil, nil
	case pe != nil:
		return Panicked, pe, pe
	case err == nil:
		return Succeeded, nil, nil
	}
	if pe := elementPanic(err, name); pe != nil {
		return Panicked, err, pe
	}
	return Failed, err, nil
}

// callGroup calls a group task's function, its panic caught.
func callGroup(fn func() error, name string) (err error, pe *PanicError) {
	defer catch(name, &pe)
	return fn(), nil
}

// complete accounts for one task of the group reaching state, counted in c
// before the group's waiters can be released. A nil c counts nothing: the
// task was never accepted.
func (g *Group) complete(state State, err error, c *counters) {
	if c != nil {
		c.count(state)
	}
	if err != nil {
		g.record(err)
	}
	n := g.pending.Add(-1)
	if g.limit > 0 && g.waiters.Load() > 0 {
		g.release()
	}
	// A cancelled group's Wait returns once no function of it runs: tell it
	// whenever one ends.
	if n == 0 || g.ctx.Err() != nil {
		g.wakeWaiters()
	}
}

// record keeps err as the group's first error (cancelling the group) or,
// with JoinErrors, among all of them. The cause of a cancellation, met again
// by every skipped task, is kept once.
func (g *Group) record(err error) {
	g.mu.Lock()
	if g.ctx.Err() != nil && err == context.Cause(g.ctx) {
		if g.skipSeen {
			g.mu.Unlock()
			return
		}
		g.skipSeen = true
	}
	first := g.err == nil
	if first {
		g.err = err
	}
	if g.join {
		g.errs = append(g.errs, err)
	}
	g.mu.Unlock()
	if first && !g.join {
		g.cancel(err)
	}
}

// wakeWaiters wakes the callers of Wait.
func (g *Group) wakeWaiters() {
	g.mu.Lock()
	if g.doneCh != nil {
		close(g.doneCh)
		g.doneCh = nil
	}
	g.mu.Unlock()
}

// Wait blocks until every task of the group has finished, or, once the
// group is cancelled, until no function of the group is running (its queued
// tasks then complete with the cause without running). It returns the
// first error, or all of them joined with JoinErrors, or the cause of the
// cancellation if tasks were left unrun. It cancels the group's context.
func (g *Group) Wait() error {
	return g.wait(nil)
}

// WaitContext is Wait with a deadline: when ctx ends first, it cancels the
// group with ctx's cause and returns at once an *UnfinishedError saying how
// many tasks were still running and queued.
func (g *Group) WaitContext(ctx context.Context) error {
	if ctx == nil {
		return invalid("nil context")
	}
	return g.wait(ctx)
}

func (g *Group) wait(ctx context.Context) error {
	if g.cfgErr != nil {
		return g.cfgErr
	}
	// A small batch is often done, or about to be on a worker just woken
	// on this P: a few yields spare the channels below.
	for range waitSpins {
		if g.pending.Load() == 0 {
			break
		}
		runtime.Gosched()
	}
	var deadline, cancelled <-chan struct{}
	if ctx != nil {
		deadline = ctx.Done()
	}
	if g.watch {
		cancelled = g.ctx.Done()
	}
	for {
		if g.pending.Load() == 0 {
			return g.end(false)
		}
		// Take the channel before looking: a change after the look closes it.
		g.mu.Lock()
		if g.doneCh == nil {
			g.doneCh = make(chan struct{})
		}
		done := g.doneCh
		g.mu.Unlock()
		pending := g.pending.Load()
		// A worker publishes the group before it looks at the context, so
		// once the group is cancelled and no worker shows it, none will run
		// a function of it.
		if pending == 0 || g.ctx.Err() != nil && !g.pool.workers.runs(g) {
			return g.end(pending > 0)
		}
		select {
		case <-done:
		case <-cancelled:
			cancelled = nil
		case <-deadline:
			// Count before cancelling: cancellation lets tasks finish.
			running := g.pool.workers.running(g)
			pending := g.pending.Load()
			cause := context.Cause(ctx)
			g.cancel(cause)
			return &UnfinishedError{Running: running, Queued: int(max(0, pending-int64(running))), Err: cause}
		}
	}
}

// waitSpins is how many times Wait yields before it blocks.
const waitSpins = 4

// end ends a wait: it cancels the group with the error Wait returns.
func (g *Group) end(unrun bool) error {
	g.mu.Lock()
	err := g.result(unrun)
	g.mu.Unlock()
	g.cancel(err)
	return err
}

// result is the error Wait returns; g.mu is held.
func (g *Group) result(unrun bool) error {
	var err error
	if g.join {
		err = errors.Join(g.errs...)
	} else {
		err = g.err
	}
	if err == nil && unrun {
		err = context.Cause(g.ctx)
	}
	return err
}
