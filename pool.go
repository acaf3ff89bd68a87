package crew

import (
	"context"
	"slices"
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

	// Read on every submit and every pop, written rarely.
	_ [64]byte
	// ctl holds the number of live workers, and terminatedBit once the pool
	// has stopped for good and may start no worker again.
	ctl     atomic.Uint64
	max     atomic.Int64
	waiting atomic.Int32 // submitters waiting for room in the queue
	paused  atomic.Bool
	level   atomic.Int32 // stopping level, see shutdown.go

	// Written by workers each time they run out of work.
	_        [64]byte
	spinning atomic.Int32 // workers looking for work before they park
	parked   atomic.Int32 // workers on the idle stack
	_        [56]byte

	// goroutines counts worker goroutines until their very last step, so
	// that the pool terminates only when none is left.
	goroutines atomic.Int64

	mu      sync.Mutex
	idle    []*worker // parked workers, most recent last, so oldest first
	reaper  *time.Timer
	reaping bool // the reaper is armed or running
	waiters []chan struct{}
	spare   []chan struct{} // waiter channels to reuse
	workers map[*worker]struct{}
	retired counters // counts of workers that have exited
	counts  counters // outcomes decided outside a worker: refusals, drops, cancels

	closing    chan struct{} // closed when shutdown begins
	exited     chan struct{} // closed when the last worker has exited
	exitOnce   sync.Once
	stopCtx    func() bool   // unregisters the pool context's AfterFunc
	ctxStopped chan struct{} // closed when that AfterFunc has run
	ctxOnce    sync.Once
	stopStart  Stats // snapshot when shutdown began, for its log
}

const terminatedBit = 1 << 62

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

// New returns a pool configured by opts. It starts no goroutine.
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
		workers:    make(map[*worker]struct{}),
		closing:    make(chan struct{}),
		exited:     make(chan struct{}),
		ctxStopped: make(chan struct{}),
	}
	p.max.Store(int64(cfg.workers))
	if cfg.ctx.Done() != nil {
		p.stopCtx = context.AfterFunc(cfg.ctx, func() {
			defer close(p.ctxStopped)
			p.stop(levelHard)
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
// makes sure a worker will see it.
func (p *Pool) offer(it *item) pushResult {
	if p.cfg.observer != nil {
		it.enq = time.Since(p.epoch)
	}
	r := p.q.push(it)
	if r == pushed {
		p.signal()
	}
	return r
}

// tryPut queues it without waiting.
func (p *Pool) tryPut(it *item) error {
	err := ErrClosed
	switch p.offer(it) {
	case pushed:
		return nil
	case full:
		err = ErrQueueFull
	}
	p.counts.refused.Add(1)
	return err
}

// put queues it, waiting for room; a nil ctx waits until shutdown. A
// context that has already ended is refused even when there is room.
func (p *Pool) put(ctx context.Context, it *item) error {
	var err error
	if ctx != nil && p.level.Load() != levelOpen {
		err = ErrClosed
	} else if ctx != nil {
		err = ctx.Err()
	}
	if err == nil {
		switch p.offer(it) {
		case pushed:
			return nil
		case closed:
			err = ErrClosed
		default:
			err = p.putSlow(ctx, it)
		}
	}
	if err != nil {
		p.counts.refused.Add(1)
	}
	return err
}

// putSlow waits on the waiter list for a worker to free a slot. A waiter
// registers before it retries the push, and a worker looks at the count
// after its pop, so a freed slot is never missed.
func (p *Pool) putSlow(ctx context.Context, it *item) error {
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	p.mu.Lock()
	var wake chan struct{}
	if n := len(p.spare); n > 0 {
		wake, p.spare = p.spare[n-1], p.spare[:n-1]
	} else {
		wake = make(chan struct{}, 1)
	}
	p.mu.Unlock()
	defer func() { // every path below leaves it empty and unlisted
		p.mu.Lock()
		p.spare = append(p.spare, wake)
		p.mu.Unlock()
	}()
	for {
		p.mu.Lock()
		p.waiters = append(p.waiters, wake)
		p.waiting.Add(1)
		p.mu.Unlock()

		switch p.offer(it) {
		case pushed:
			p.leaveWaiters(wake)
			return nil
		case closed:
			p.leaveWaiters(wake)
			return ErrClosed
		}
		select {
		case <-wake:
		case <-done:
			p.leaveWaiters(wake)
			return ctx.Err()
		case <-p.closing:
			p.leaveWaiters(wake)
			return ErrClosed
		}
	}
}

// leaveWaiters takes wake off the waiter list. If a worker had already taken
// it off, its signal is on the way: it is received and passed on, so that it
// is neither lost nor left in the channel.
func (p *Pool) leaveWaiters(wake chan struct{}) {
	p.mu.Lock()
	for i, w := range p.waiters {
		if w == wake {
			p.waiters = slices.Delete(p.waiters, i, i+1)
			p.waiting.Add(-1)
			p.mu.Unlock()
			return
		}
	}
	p.mu.Unlock()
	<-wake
	p.wakeSubmitter()
}

// wakeSubmitter signals the longest-waiting submitter that there is room.
func (p *Pool) wakeSubmitter() {
	p.mu.Lock()
	if len(p.waiters) == 0 {
		p.mu.Unlock()
		return
	}
	w := p.waiters[0]
	// Shift in place: the list keeps its capacity, so a submitter that
	// blocks again and again does not allocate.
	p.waiters = slices.Delete(p.waiters, 0, 1)
	p.waiting.Add(-1)
	p.mu.Unlock()
	w <- struct{}{}
}

// signal makes sure a worker will see a task just pushed: a spinning worker
// will (and, taking it, hands any further task on: see next), else a parked
// one is woken, else a new one is started if the bound allows, else every
// worker is busy and the first to finish will. The push happens before these
// loads, and a worker publishes its spinning or parked state before it looks
// at the queue again, so one of the two sees the other.
func (p *Pool) signal() {
	if p.paused.Load() || p.spinning.Load() > 0 {
		return
	}
	if p.parked.Load() > 0 && p.wakeWorker() {
		return
	}
	p.spawn()
}

// wakeWorker wakes the most recently parked worker, if any.
func (p *Pool) wakeWorker() bool {
	p.mu.Lock()
	n := len(p.idle)
	if n == 0 {
		p.mu.Unlock()
		return false
	}
	w := p.idle[n-1]
	p.idle[n-1] = nil
	p.idle = p.idle[:n-1]
	p.parked.Add(-1)
	p.mu.Unlock()
	w.wake <- struct{}{}
	return true
}

// wakeAll wakes every parked worker, so that each looks again at the queue,
// the bound and the stopping level.
func (p *Pool) wakeAll() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.parked.Add(-int32(len(idle)))
	p.mu.Unlock()
	for _, w := range idle {
		w.wake <- struct{}{}
	}
}

// spawn starts a worker if the bound allows and the pool has not terminated.
func (p *Pool) spawn() bool {
	for {
		c := p.ctl.Load()
		if c&terminatedBit != 0 || int64(c) >= p.max.Load() {
			return false
		}
		if p.ctl.CompareAndSwap(c, c+1) {
			w := newWorker(p)
			p.goroutines.Add(1)
			p.mu.Lock()
			p.workers[w] = struct{}{}
			p.mu.Unlock()
			go w.loop()
			return true
		}
	}
}

// alive is the number of live workers.
func (p *Pool) alive() int64 { return int64(p.ctl.Load() &^ terminatedBit) }

// kick starts or wakes as many workers as the queue can keep busy.
func (p *Pool) kick() {
	if p.paused.Load() {
		return
	}
	for n := p.q.len(); n > 0; n-- {
		if !(p.parked.Load() > 0 && p.wakeWorker()) && !p.spawn() {
			return
		}
	}
}

// running counts the workers running a function of g; runs reports
// whether there is one. They read every worker: for a cancelled group's
// Wait, not for the hot path.
func (p *Pool) running(g *Group) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for w := range p.workers {
		if w.group.Load() == g {
			n++
		}
	}
	return n
}

func (p *Pool) runs(g *Group) bool { return p.running(g) > 0 }

// armReaper makes the reaper run after d; p.mu is held. One timer for the
// pool, not one per worker: parking costs no timer, and an idle pool's
// reaper disarms itself once the last worker is gone.
func (p *Pool) armReaper(d time.Duration) {
	p.reaping = true
	if p.reaper == nil {
		p.reaper = time.AfterFunc(d, p.reap)
	} else {
		p.reaper.Reset(d)
	}
}

// reap retires the workers parked for the idle timeout or longer: the
// oldest are at the bottom of the idle stack. It then rearms for the next.
func (p *Pool) reap() {
	p.mu.Lock()
	now := time.Since(p.epoch)
	n := 0
	for n < len(p.idle) && now-p.idle[n].parkedAt >= p.cfg.idleTimeout {
		n++
	}
	retired := slices.Clone(p.idle[:n])
	for _, w := range retired {
		w.retired = true
	}
	p.idle = slices.Delete(p.idle, 0, n)
	p.parked.Add(-int32(n))
	if len(p.idle) > 0 {
		p.armReaper(p.idle[0].parkedAt + p.cfg.idleTimeout - now)
	} else {
		p.reaping = false
	}
	p.mu.Unlock()
	for _, w := range retired {
		w.wake <- struct{}{}
	}
}
