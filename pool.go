package crew

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Pool runs tasks on at most a fixed number of worker goroutines, with a
// bounded queue in front of them. Workers start lazily, when a task finds
// none free, and exit after the idle timeout, so an idle pool holds no
// goroutine. New starts none.
//
// A short task (Go, TryGo) is a func() run inline by a worker: no timeout, no
// handle, no allocation. A long task (Submit, TrySubmit) receives a context,
// may have a timeout, and returns a *Task to wait on: one allocation.
//
// A Pool must be stopped with Shutdown or Close, and may not be reused after.
// All its methods are safe for concurrent use.
type Pool struct {
	cfg   config
	q     *ring
	epoch time.Time // observations measure from here, on the monotonic clock

	workers    workerSet
	submitters submitters

	// Read on every submit and every pop, written rarely.
	_      [64]byte
	paused atomic.Bool
	level  atomic.Int32 // stopping level, below; raised by stop (shutdown.go)
	_      [56]byte

	counts      counters      // outcomes decided outside a worker: refusals, drops, cancels, callers' shares
	helped      atomic.Uint64 // tasks run by their caller: the caller's share of a Map or ForEach
	warnedLimit atomic.Bool   // a group's Limit above the bound was logged

	mu         sync.Mutex    // orders Pause, Resume, Resize and the stop levels
	stopLog    stopLog       // what the shutdown's log lines report; guarded by mu
	closing    chan struct{} // closed when shutdown begins
	exited     chan struct{} // closed when the last worker has exited
	exitOnce   sync.Once
	stopCtx    func() bool   // unregisters the pool context's AfterFunc
	ctxStopped chan struct{} // closed when that AfterFunc has run
	ctxOnce    sync.Once
}

// item is one queued task: a short function, a Task, or a group's function.
// The ring keeps fn, efn and g in its slots and the rest aside (see ring).
type item struct {
	fn   func()
	t    *Task
	g    *Group
	efn  func() error
	name string
	enq  time.Duration // since epoch, only with an observer
}

// New returns a pool configured by opts. It starts no goroutine. A pool
// given WithContext a context that has already ended is returned stopped:
// every submit fails with ErrClosed.
func New(opts ...Option) (*Pool, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			return nil, invalid("nil Option")
		}
		if err := o.apply(&cfg); err != nil {
			return nil, err
		}
	}
	p := &Pool{
		cfg:        cfg,
		q:          newRing(cfg.queueSize),
		epoch:      time.Now(),
		closing:    make(chan struct{}),
		exited:     make(chan struct{}),
		ctxStopped: make(chan struct{}),
	}
	p.workers.init(p, cfg.workers)
	switch {
	case cfg.ctx.Err() != nil:
		// Already ended: stop now rather than in AfterFunc's goroutine, so
		// that no submit is accepted in between.
		close(p.ctxStopped)
		p.stop(levelHard, "pool context ended")
	case cfg.ctx.Done() != nil:
		p.stopCtx = context.AfterFunc(cfg.ctx, func() {
			defer close(p.ctxStopped)
			p.stop(levelHard, "pool context ended")
		})
	}
	return p, nil
}

// Name returns the name given with WithName.
func (p *Pool) Name() string { return p.cfg.name }

// Stopping levels, in the order they escalate.
const (
	levelOpen int32 = iota
	levelDrain
	levelSoft
	levelHard
)

var levelNames = [...]string{"open", "drain", "soft", "hard"}
