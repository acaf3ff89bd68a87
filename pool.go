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
	level  atomic.Int32 // stopping level, see shutdown.go
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

// Go runs fn on a worker, waiting for room in the queue if it is full. It
// returns ErrClosed once shutdown has begun (also while it waits) and
// ErrNilFunc for a nil fn. A panic in fn is recovered, counted and handed to
// the panic handler. Go allocates nothing.
func (p *Pool) Go(fn func(), opts ...TaskOption) error {
	it, err := p.shortItem(fn, opts)
	if err != nil {
		return err
	}
	return p.put(nil, &it)
}

// TryGo is Go without waiting: it returns ErrQueueFull when the queue has no
// room.
func (p *Pool) TryGo(fn func(), opts ...TaskOption) error {
	it, err := p.shortItem(fn, opts)
	if err != nil {
		return err
	}
	return p.tryPut(&it)
}

func (p *Pool) shortItem(fn func(), opts []TaskOption) (item, error) {
	if fn == nil {
		return item{}, ErrNilFunc
	}
	var tc taskConfig
	if len(opts) > 0 {
		if err := tc.apply(opts, true); err != nil {
			return item{}, err
		}
	}
	return item{fn: fn, name: tc.name}, nil
}

// Submit queues fn as a long task and returns its handle. It waits for room
// in the queue and gives up with ctx.Err() when ctx ends first, or with
// ErrClosed when shutdown begins. ctx bounds only the wait and lends its
// values to the task's context; the task's context is cancelled by the
// task's timeout (Timeout, or WithTaskTimeout), by a hard stop and when the
// task ends, never by ctx.
func (p *Pool) Submit(ctx context.Context, fn func(context.Context) error, opts ...TaskOption) (*Task, error) {
	if ctx == nil {
		return nil, invalid("nil context")
	}
	t, err := p.newTask(ctx, fn, opts)
	if err != nil {
		return nil, err
	}
	if err := p.put(ctx, &item{t: t}); err != nil {
		return nil, err
	}
	return t, nil
}

// TrySubmit is Submit without waiting: it returns ErrQueueFull when the queue
// has no room. The task's context takes no values.
func (p *Pool) TrySubmit(fn func(context.Context) error, opts ...TaskOption) (*Task, error) {
	t, err := p.newTask(nil, fn, opts)
	if err != nil {
		return nil, err
	}
	if err := p.tryPut(&item{t: t}); err != nil {
		return nil, err
	}
	return t, nil
}

func (p *Pool) newTask(ctx context.Context, fn func(context.Context) error, opts []TaskOption) (*Task, error) {
	if fn == nil {
		return nil, ErrNilFunc
	}
	tc := taskConfig{timeout: p.cfg.taskTimeout}
	if err := tc.apply(opts, false); err != nil {
		return nil, err
	}
	t := &Task{fn: fn}
	t.init(p, tc.name, tc.timeout, ctx)
	return t, nil
}

// offer stamps it for the observer, pushes it once and, if it went in,
// makes sure a worker will see it (workerSet's rule 2).
func (p *Pool) offer(it *item) pushResult {
	if p.cfg.observer != nil {
		it.enq = time.Since(p.epoch)
	}
	r := p.q.push(it)
	yieldpoint()
	switch r {
	case pushed:
		p.workers.notify(false)
	case overtaken:
		p.workers.notify(true) // the recruit hands on to the later pushes
		r = pushed
	}
	return r
}
