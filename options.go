package crew

import (
	"context"
	"log/slog"
	"runtime"
	"time"
)

// Defaults used by New when the matching option is not given.
const (
	// DefaultQueueSize is the number of tasks that may wait for a worker.
	DefaultQueueSize = 1024
	// DefaultIdleTimeout is how long a worker waits for a task before it exits.
	DefaultIdleTimeout = 10 * time.Second
	// MaxQueueSize is the largest queue WithQueueSize accepts: 16M places,
	// 1 GiB allocated up front. A larger queue is a memory problem, not a
	// buffer; above it New fails rather than the process.
	MaxQueueSize = 1 << 24
	// DefaultStopGrace is how long a hard stop without a deadline waits for
	// cancelled task functions to return before Shutdown or Close reports
	// them as stuck.
	DefaultStopGrace = time.Second
)

// Option configures a Pool. Options are created by the With... functions of
// this package only.
type Option interface {
	apply(*config) error
}

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

type config struct {
	name        string
	workers     int
	queueSize   int
	idleTimeout time.Duration
	taskTimeout time.Duration
	stopGrace   time.Duration
	ctx         context.Context
	onPanic     func(*PanicError)
	observer    func(Observation)
	logger      *slog.Logger
}

func defaultConfig() config {
	return config{
		// GOMAXPROCS, not NumCPU: since Go 1.25 it follows the container's CPU
		// quota, and a pool sized past the quota only gets throttled.
		workers:     runtime.GOMAXPROCS(0),
		queueSize:   DefaultQueueSize,
		idleTimeout: DefaultIdleTimeout,
		stopGrace:   DefaultStopGrace,
		ctx:         context.Background(),
	}
}

// WithWorkers sets the largest number of workers, that is of task functions
// running at once. It must be at least 1. The default is
// runtime.GOMAXPROCS(0), which honours the container's CPU quota.
func WithWorkers(n int) Option {
	return optionFunc(func(c *config) error {
		if n < 1 {
			return invalid("workers %d, want >= 1", n)
		}
		c.workers = n
		return nil
	})
}

// WithQueueSize sets how many submitted tasks may wait for a worker; a
// submit that finds the queue full blocks (Go, Submit) or fails (TryGo,
// TrySubmit). It must be from 1 to MaxQueueSize. The default is
// DefaultQueueSize. The queue is allocated by New, 64 bytes a place.
func WithQueueSize(n int) Option {
	return optionFunc(func(c *config) error {
		if n < 1 || n > MaxQueueSize {
			return invalid("queue size %d, want 1 to %d", n, MaxQueueSize)
		}
		c.queueSize = n
		return nil
	})
}

// WithIdleTimeout sets how long a worker waits for a task before it exits.
// It must be positive. The default is DefaultIdleTimeout.
func WithIdleTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d <= 0 {
			return invalid("idle timeout %v, want > 0", d)
		}
		c.idleTimeout = d
		return nil
	})
}

// WithTaskTimeout sets the timeout of tasks given to Submit and TrySubmit
// without a Timeout of their own. Zero, the default, means no timeout.
func WithTaskTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d < 0 {
			return invalid("task timeout %v, want >= 0", d)
		}
		c.taskTimeout = d
		return nil
	})
}

// WithStopGrace sets how long a hard stop waits for the functions of
// cancelled tasks to return when it has no deadline (Close, or Shutdown
// with a context that has none) before it gives up on them and returns an
// error wrapping ErrStuck; with a deadline, the *ThenHard modes turn hard
// this long before it. It must be positive. The default is
// DefaultStopGrace.
func WithStopGrace(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d <= 0 {
			return invalid("stop grace %v, want > 0", d)
		}
		c.stopGrace = d
		return nil
	})
}

// WithContext gives the pool a context whose end is a hard stop: new
// submits fail with ErrClosed, queued tasks complete with ErrNotRun and
// running tasks see their contexts cancelled. Call Shutdown or Close
// afterwards to wait for the workers. A context that has already ended
// when New is called gives a pool that refuses every submit.
func WithContext(ctx context.Context) Option {
	return optionFunc(func(c *config) error {
		if ctx == nil {
			return invalid("nil context")
		}
		c.ctx = ctx
		return nil
	})
}

// WithName names the pool in logs and metrics.
func WithName(name string) Option {
	return optionFunc(func(c *config) error {
		c.name = name
		return nil
	})
}

// WithPanicHandler sets a function called, on the worker, with every panic a
// task raises, after the worker has recovered from it. A panic in the
// handler itself is recovered (and logged, with WithLogger).
func WithPanicHandler(f func(*PanicError)) Option {
	return optionFunc(func(c *config) error {
		c.onPanic = f
		return nil
	})
}

// WithObserver sets a function called, on the worker, once for every task
// that reaches a terminal state after it was accepted, with its name, its
// time in the queue and its run time. With no observer the pool reads no
// clock for short tasks. The function must be fast and must not block. A
// panic in it is recovered (and logged, with WithLogger); the task is
// counted all the same.
func WithObserver(f func(Observation)) Option {
	return optionFunc(func(c *config) error {
		c.observer = f
		return nil
	})
}

// WithLogger makes the pool log panics (with their stacks), the start and end
// of shutdown with counts, and Pause, Resume and Resize. A pool stopped
// before it was given any task logs nothing of its stop (a program that
// fails to start should say why first). The default logs nothing.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) error {
		c.logger = l
		return nil
	})
}

// TaskOption configures one task. It is a small value rather than a
// function so that passing options keeps Go and Submit free of allocations.
// Create one with Named or Timeout.
type TaskOption struct {
	name    string
	timeout time.Duration
	kind    uint8
}

const (
	optName uint8 = iota + 1
	optTimeout
)

// Named names a task; the name shows in metrics, observations, panic errors
// and in the list of tasks still running after a timeout or a hard stop.
func Named(name string) TaskOption {
	return TaskOption{name: name, kind: optName}
}

// Timeout bounds a task given to Submit or TrySubmit: at the timeout its
// context is cancelled and its waiters learn ErrTimeout, while its worker
// stays taken until the function returns. It must be positive. Short tasks
// (Go, TryGo) cannot be interrupted and reject it.
func Timeout(d time.Duration) TaskOption {
	return TaskOption{timeout: d, kind: optTimeout}
}

type taskConfig struct {
	name    string
	timeout time.Duration
}

func (c *taskConfig) apply(opts []TaskOption, short bool) error {
	for _, o := range opts {
		switch o.kind {
		case optName:
			c.name = o.name
		case optTimeout:
			if short {
				return invalid("Timeout on a short task; use Submit")
			}
			if o.timeout <= 0 {
				return invalid("task timeout %v, want > 0", o.timeout)
			}
			c.timeout = o.timeout
		default:
			return invalid("zero TaskOption")
		}
	}
	return nil
}
