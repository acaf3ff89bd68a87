package crew

import (
	"math"
	"time"
)

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
