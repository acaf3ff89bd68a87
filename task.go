package crew

import (
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Task is the handle of a task given to Submit or TrySubmit: the caller
// waits on it and reads its outcome. All its methods are safe for
// concurrent use. A Task is also the source of the context its function
// receives, so a submit costs one allocation.
type Task struct {
	state  atomic.Uint32
	ctxErr atomic.Uint32 // ctxLive, ctxCanceled or ctxDeadline
	chans  atomic.Uint32 // set once Done or the context's Done made a channel
	name   string

	fn      func(context.Context) error
	timeout time.Duration
	parent  context.Context // source of Value; never of cancellation

	pool  *Pool
	began time.Duration // since the pool's epoch, set before the function starts
	err   error         // written once, before state turns terminal
	wg    sync.WaitGroup

	mu      sync.Mutex    // guards the two channels
	done    chan struct{} // completion, made on demand
	ctxDone chan struct{} // the function's context, made on demand
}

const (
	ctxLive uint32 = iota
	ctxCanceled
	ctxDeadline
)

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (t *Task) init(p *Pool, name string, timeout time.Duration, parent context.Context) {
	t.pool = p
	t.name = name
	t.timeout = timeout
	t.parent = parent
	t.wg.Add(1)
}

// Name returns the name given with Named.
func (t *Task) Name() string { return t.name }

// State returns where the task stands now.
func (t *Task) State() State {
	s := State(t.state.Load())
	if s == completing {
		return Running
	}
	return s
}

// Wait blocks until the task reaches a terminal state and returns its error:
// nil on success, the function's error, a *PanicError, ErrTimeout,
// ErrCanceled or ErrNotRun.
func (t *Task) Wait() error {
	t.wg.Wait()
	return t.err
}

// Done returns a channel closed when the task reaches a terminal state. The
// first call on a pending task allocates the channel.
func (t *Task) Done() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done == nil {
		// Publish the channel's existence before looking at the state;
		// complete stores the state before looking at chans.
		t.chans.Store(1)
		if State(t.state.Load()).Terminal() {
			return closedChan
		}
		t.done = make(chan struct{})
	}
	return t.done
}

// Err returns the task's error once it is terminal, and nil before. Use
// State or Done to tell a pending task from one that succeeded.
func (t *Task) Err() error {
	if State(t.state.Load()).Terminal() {
		return t.err
	}
	return nil
}

// start moves a queued task to Running. Only the worker that popped it can,
// and nothing else changes a queued task's state, so a store will do.
func (t *Task) start() {
	t.state.Store(uint32(Running))
}

// complete moves the task from state from to the terminal state to, and
// reports whether this call did it. Exactly one finisher wins; the others return
// false and leave no trace. The function's context ends with the task (as
// with a deferred cancel): with DeadlineExceeded for a timeout, else
// Canceled. The state is settled before the context ends, so that a
// function returning on cancellation cannot win in the meantime.
//
// The outcome is counted in c before anyone is released, so that whoever
// sees the task done also sees it counted.
func (t *Task) complete(from, to State, err error, c *counters) bool {
	if !t.state.CompareAndSwap(uint32(from), uint32(completing)) {
		return false
	}
	c.count(to)
	t.err = err
	t.state.Store(uint32(to))
	ctxErr := ctxCanceled
	if to == TimedOut {
		ctxErr = ctxDeadline
	}
	t.ctxErr.CompareAndSwap(ctxLive, ctxErr)
	// Without channels, no lock: whoever makes one later sees the state
	// (and the context's error) already set.
	if t.chans.Load() != 0 {
		t.mu.Lock()
		if t.done != nil {
			close(t.done)
		}
		if t.ctxDone != nil {
			close(t.ctxDone)
		}
		t.mu.Unlock()
	}
	t.wg.Done()
	return true
}

func (t *Task) context() context.Context { return (*taskContext)(t) }

// taskContext is the context.Context a task's function receives: cancelled at
// the task's timeout, on a hard stop and when the task ends; its values come
// from the context given to Submit. It shares the Task's memory.
type taskContext Task

func (c *taskContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctxDone == nil {
		c.chans.Store(1)
		if c.ctxErr.Load() != ctxLive {
			return closedChan
		}
		c.ctxDone = make(chan struct{})
	}
	return c.ctxDone
}

func (c *taskContext) Err() error {
	switch c.ctxErr.Load() {
	case ctxCanceled:
		return context.Canceled
	case ctxDeadline:
		return context.DeadlineExceeded
	}
	return nil
}

func (c *taskContext) Value(key any) any {
	if c.parent == nil {
		return nil
	}
	return c.parent.Value(key)
}

func (c *taskContext) String() string { return "crew.Task(" + c.name + ").context" }

// Deadline is the task's start plus its timeout, on the monotonic clock as
// context.WithTimeout's is (the pool's epoch carries both clocks). A timeout
// so long that the sum overflows saturates, rather than wrapping into the
// past.
func (c *taskContext) Deadline() (time.Time, bool) {
	if c.timeout <= 0 {
		return time.Time{}, false
	}
	d := c.began + c.timeout
	if d < c.began {
		d = math.MaxInt64
	}
	return c.pool.epoch.Add(d), true
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
