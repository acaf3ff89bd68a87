// Package bench measures crew against its peers: raw goroutines, channel
// semaphores and pools, errgroup, x/sync/semaphore, ants, pond, conc and
// gammazero/workerpool. Each contender is a Runner built around one task
// value; the benchmarks in this package and the S3 child of cmd/crewbench
// drive every contender the same way.
package bench

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alitto/pond/v2"
	"github.com/crew-go/crew"
	"github.com/gammazero/workerpool"
	"github.com/panjf2000/ants/v2"
	concpool "github.com/sourcegraph/conc/pool"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"
)

// DefaultQueue is the queue size given to every contender whose queue is
// bounded and configurable; it is crew's default.
const DefaultQueue = crew.DefaultQueueSize

// Config says what a Runner runs and with which bound.
type Config struct {
	// Workers bounds the number of tasks running at once (ignored by the
	// goroutines contender, which has no bound).
	Workers int
	// Queue is the queue size of contenders with a configurable bounded
	// queue; 0 means DefaultQueue.
	Queue int
	// Task is the task value: every Go runs this same function.
	Task func()
	// LongTask, if set, replaces Task: a task that takes a context and is
	// bounded by Timeout. Contenders with a native per-task timeout use it
	// directly; the others run Task = TimeoutWrapper(LongTask, Timeout).
	LongTask func(context.Context) error
	Timeout  time.Duration
}

// Runner runs its configured task. Go may be called from many goroutines
// at once and blocks while the contender's bound or queue is full. Wait
// returns when every task whose Go returned before it was called has
// finished; it is not called concurrently with Go. Close releases the
// runner's goroutines and waits for them.
type Runner interface {
	Go()
	Wait()
	Close()
}

// Contender is one library and API.
type Contender struct {
	Name string // key in benchmark names: lib=Name
	API  string // what is called per task, and how it is waited for
	// Queue describes the queue in front of the bound.
	Queue string
	// NativeTimeout is true when the contender takes LongTask and Timeout
	// itself rather than through TimeoutWrapper.
	NativeTimeout bool
	new           func(Config) Runner
}

// New starts a runner of c for cfg.
func (c Contender) New(cfg Config) Runner {
	if cfg.Workers < 1 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Queue < 1 {
		cfg.Queue = DefaultQueue
	}
	if cfg.LongTask != nil && !c.NativeTimeout {
		cfg.Task = TimeoutWrapper(cfg.LongTask, cfg.Timeout)
	}
	if cfg.Task == nil {
		cfg.Task = func() {}
	}
	return c.new(cfg)
}

// TimeoutWrapper returns the task that contenders without per-task
// timeouts run in S6: a context.WithTimeout around the long task. It is
// built once per runner, not per task.
func TimeoutWrapper(task func(context.Context) error, d time.Duration) func() {
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		_ = task(ctx)
		cancel()
	}
}

// Contenders lists every contender, crew first. Groups joins them once
// crew has groups.
var Contenders = []Contender{
	{Name: "crew-go", API: "crew Pool.Go + sync.WaitGroup", Queue: "1024 (WithQueueSize)", new: newCrewGo},
	{Name: "crew-submit", API: "crew Pool.Submit + Task.Wait (handles kept in a window of max(1024, 2×(workers+queue)))", Queue: "1024 (WithQueueSize)", NativeTimeout: true, new: newCrewSubmit},
	{Name: "crew-group", API: "crew NewGroup + Group.Go + Group.Wait (a new group after each Wait)", Queue: "1024 (WithQueueSize)", new: newCrewGroup},
	{Name: "goroutines", API: "go statement + sync.WaitGroup", Queue: "none, unbounded", new: newGoroutines},
	{Name: "chansem", API: "buffered-channel semaphore + go statement + sync.WaitGroup", Queue: "none (submit blocks for a slot)", new: newChanSem},
	{Name: "xsemaphore", API: "x/sync/semaphore Acquire + go statement + sync.WaitGroup", Queue: "none (submit blocks for a slot)", new: newXSemaphore},
	{Name: "errgroup", API: "errgroup SetLimit + Go + Wait", Queue: "none (Go blocks for a slot)", new: newErrgroup},
	{Name: "chanpool", API: "hand-written pool: N goroutines ranging over an unbuffered chan func() + sync.WaitGroup", Queue: "0 (unbuffered)", new: newChanPool(0)},
	{Name: "chanpool-1024", API: "hand-written pool: N goroutines ranging over a chan func() + sync.WaitGroup", Queue: "1024 (buffer)", new: newChanPool(DefaultQueue)},
	{Name: "ants", API: "ants.Pool.Submit + sync.WaitGroup", Queue: "none (Submit blocks for a free worker)", new: newAnts},
	{Name: "ants-func", API: "ants.PoolWithFunc.Invoke + sync.WaitGroup", Queue: "none (Invoke blocks for a free worker)", new: newAntsFunc},
	{Name: "pond-go", API: "pond v2 Pool.Go + sync.WaitGroup", Queue: "1024 (WithQueueSize)", new: newPondGo},
	{Name: "pond-submit", API: "pond v2 Pool.Submit + Task.Wait (handles kept in a window of max(1024, 2×(workers+queue)))", Queue: "1024 (WithQueueSize)", new: newPondSubmit},
	{Name: "pond-group", API: "pond v2 Pool.NewGroup + TaskGroup.Submit + Wait", Queue: "1024 (WithQueueSize)", new: newPondGroup},
	{Name: "conc", API: "conc pool.New().WithMaxGoroutines + Go + Wait (a new pool after each Wait)", Queue: "none (Go blocks for a free worker)", new: newConc},
	{Name: "gammazero", API: "gammazero/workerpool Submit + sync.WaitGroup", Queue: "unbounded (no option)", new: newGammazero},
}

// Lookup returns the contender named name.
func Lookup(name string) (Contender, bool) {
	for _, c := range Contenders {
		if c.Name == name {
			return c, true
		}
	}
	return Contender{}, false
}

// wgTask wraps task once so that a WaitGroup counts it down.
type wgRunner struct {
	wg   sync.WaitGroup
	task func() // the configured task followed by wg.Done
}

func (r *wgRunner) init(task func()) {
	r.task = func() {
		task()
		r.wg.Done()
	}
}

func (r *wgRunner) Wait() { r.wg.Wait() }

// crew, short tasks.

type crewGo struct {
	wgRunner
	p *crew.Pool
}

func newCrewGo(cfg Config) Runner {
	p, err := crew.New(crew.WithWorkers(cfg.Workers), crew.WithQueueSize(cfg.Queue))
	if err != nil {
		panic(err)
	}
	r := &crewGo{p: p}
	r.init(cfg.Task)
	return r
}

func (r *crewGo) Go() {
	r.wg.Add(1)
	if err := r.p.Go(r.task); err != nil {
		panic(err)
	}
}

func (r *crewGo) Close() { _ = r.p.Shutdown(context.Background(), crew.Drain) }

// window keeps the handles of the last tasks submitted, at least 1024 and
// twice the workers plus the queue, so that it never limits concurrency:
// a handle is waited for when its slot is reused, or by waitAll. put may
// be called concurrently; waitAll may not be called concurrently with put.
type window[H any] struct {
	next  atomic.Uint64
	start uint64 // next at the last waitAll
	slots []windowSlot[H]
	wait  func(H)
}

type windowSlot[H any] struct {
	mu  sync.Mutex
	h   H
	set bool
}

func newWindow[H any](cfg Config, wait func(H)) window[H] {
	return window[H]{slots: make([]windowSlot[H], max(1024, 2*(cfg.Workers+cfg.Queue))), wait: wait}
}

func (w *window[H]) put(h H) {
	s := &w.slots[(w.next.Add(1)-1)%uint64(len(w.slots))]
	s.mu.Lock()
	old, had := s.h, s.set
	s.h, s.set = h, true
	s.mu.Unlock()
	if had {
		w.wait(old)
	}
}

func (w *window[H]) waitAll() {
	end := w.next.Load()
	first := w.start
	if end-first > uint64(len(w.slots)) {
		first = end - uint64(len(w.slots))
	}
	var zero H
	for i := first; i < end; i++ {
		s := &w.slots[i%uint64(len(w.slots))]
		s.mu.Lock()
		h, had := s.h, s.set
		s.h, s.set = zero, false
		s.mu.Unlock()
		if had {
			w.wait(h)
		}
	}
	w.start = end
}

// crew, long tasks with handles.

type crewSubmit struct {
	p    *crew.Pool
	fn   func(context.Context) error
	opts []crew.TaskOption
	win  window[*crew.Task]
}

func newCrewSubmit(cfg Config) Runner {
	p, err := crew.New(crew.WithWorkers(cfg.Workers), crew.WithQueueSize(cfg.Queue))
	if err != nil {
		panic(err)
	}
	r := &crewSubmit{p: p}
	if cfg.LongTask != nil {
		r.fn = cfg.LongTask
		r.opts = []crew.TaskOption{crew.Timeout(cfg.Timeout)}
	} else {
		task := cfg.Task
		r.fn = func(context.Context) error { task(); return nil }
	}
	r.win = newWindow(cfg, func(t *crew.Task) { _ = t.Wait() })
	return r
}

func (r *crewSubmit) Go() {
	t, err := r.p.Submit(context.Background(), r.fn, r.opts...)
	if err != nil {
		panic(err)
	}
	r.win.put(t)
}

func (r *crewSubmit) Wait()  { r.win.waitAll() }
func (r *crewSubmit) Close() { _ = r.p.Shutdown(context.Background(), crew.Drain) }

// crew groups: a Group may not be reused after Wait, so a new one follows
// each Wait.

type crewGroup struct {
	p        *crew.Pool // owned, closed by Close; nil when shared
	g        *crew.Group
	opts     []crew.GroupOption
	task     func() error
	newGroup func()
}

func newCrewGroup(cfg Config) Runner {
	return NewCrewGroupOn(newCrewPool(cfg), true, cfg.Task)
}

// NewCrewGroupOn returns a Runner whose tasks are a crew group's on p,
// with a new group after each Wait. Close shuts p down only if owned.
func NewCrewGroupOn(p *crew.Pool, owned bool, task func(), opts ...crew.GroupOption) Runner {
	r := &crewGroup{opts: opts, task: func() error { task(); return nil }}
	if owned {
		r.p = p
	}
	r.g, _ = crew.NewGroup(context.Background(), p, opts...)
	pool := p
	r.newGroup = func() { r.g, _ = crew.NewGroup(context.Background(), pool, r.opts...) }
	return r
}

func (r *crewGroup) Go() {
	if err := r.g.Go(r.task); err != nil {
		panic(err)
	}
}

func (r *crewGroup) Wait() {
	_ = r.g.Wait()
	r.newGroup()
}

func (r *crewGroup) Close() {
	if r.p != nil {
		_ = r.p.Shutdown(context.Background(), crew.Drain)
	}
}

func newCrewPool(cfg Config) *crew.Pool {
	p, err := crew.New(crew.WithWorkers(cfg.Workers), crew.WithQueueSize(cfg.Queue))
	if err != nil {
		panic(err)
	}
	return p
}

// Raw goroutines, no bound.

type goroutines struct{ wgRunner }

func newGoroutines(cfg Config) Runner {
	r := &goroutines{}
	r.init(cfg.Task)
	return r
}

func (r *goroutines) Go() {
	r.wg.Add(1)
	go r.task()
}

func (r *goroutines) Close() {}

// Buffered-channel semaphore.

type chanSem struct {
	wgRunner
	sem chan struct{}
}

func newChanSem(cfg Config) Runner {
	r := &chanSem{sem: make(chan struct{}, cfg.Workers)}
	task := cfg.Task
	r.task = func() {
		task()
		<-r.sem
		r.wg.Done()
	}
	return r
}

func (r *chanSem) Go() {
	r.wg.Add(1)
	r.sem <- struct{}{}
	go r.task()
}

func (r *chanSem) Close() {}

// golang.org/x/sync/semaphore.

type xSemaphore struct {
	wgRunner
	sem *semaphore.Weighted
}

func newXSemaphore(cfg Config) Runner {
	r := &xSemaphore{sem: semaphore.NewWeighted(int64(cfg.Workers))}
	task := cfg.Task
	r.task = func() {
		task()
		r.sem.Release(1)
		r.wg.Done()
	}
	return r
}

func (r *xSemaphore) Go() {
	r.wg.Add(1)
	_ = r.sem.Acquire(context.Background(), 1)
	go r.task()
}

func (r *xSemaphore) Close() {}

// errgroup with SetLimit.

type errGroup struct {
	g    errgroup.Group
	task func() error
}

func newErrgroup(cfg Config) Runner {
	task := cfg.Task
	r := &errGroup{task: func() error { task(); return nil }}
	r.g.SetLimit(cfg.Workers)
	return r
}

func (r *errGroup) Go()    { r.g.Go(r.task) }
func (r *errGroup) Wait()  { _ = r.g.Wait() }
func (r *errGroup) Close() {}

// Hand-written channel pool: Workers goroutines started up front.

type chanPool struct {
	wgRunner
	ch      chan func()
	workers sync.WaitGroup
}

func newChanPool(buffer int) func(Config) Runner {
	return func(cfg Config) Runner {
		r := &chanPool{ch: make(chan func(), buffer)}
		r.init(cfg.Task)
		for range cfg.Workers {
			r.workers.Go(func() {
				for f := range r.ch {
					f()
				}
			})
		}
		return r
	}
}

func (r *chanPool) Go() {
	r.wg.Add(1)
	r.ch <- r.task
}

func (r *chanPool) Close() {
	close(r.ch)
	r.workers.Wait()
}

// ants.

type antsPool struct {
	wgRunner
	p *ants.Pool
}

func newAnts(cfg Config) Runner {
	p, err := ants.NewPool(cfg.Workers)
	if err != nil {
		panic(err)
	}
	r := &antsPool{p: p}
	r.init(cfg.Task)
	return r
}

func (r *antsPool) Go() {
	r.wg.Add(1)
	if err := r.p.Submit(r.task); err != nil {
		panic(err)
	}
}

func (r *antsPool) Close() { _ = r.p.ReleaseTimeout(10 * time.Second) }

// antsArg is the argument given to Invoke: ants' workers take a nil
// argument as a signal to exit.
var antsArg any = struct{}{}

type antsFunc struct {
	wg sync.WaitGroup
	p  *ants.PoolWithFunc
}

func newAntsFunc(cfg Config) Runner {
	r := &antsFunc{}
	task := cfg.Task
	p, err := ants.NewPoolWithFunc(cfg.Workers, func(any) {
		task()
		r.wg.Done()
	})
	if err != nil {
		panic(err)
	}
	r.p = p
	return r
}

func (r *antsFunc) Go() {
	r.wg.Add(1)
	if err := r.p.Invoke(antsArg); err != nil {
		panic(err)
	}
}

func (r *antsFunc) Wait()  { r.wg.Wait() }
func (r *antsFunc) Close() { _ = r.p.ReleaseTimeout(10 * time.Second) }

// pond v2.

func newPond(cfg Config) pond.Pool {
	return pond.NewPool(cfg.Workers, pond.WithQueueSize(cfg.Queue))
}

type pondGo struct {
	wgRunner
	p pond.Pool
}

func newPondGo(cfg Config) Runner {
	r := &pondGo{p: newPond(cfg)}
	r.init(cfg.Task)
	return r
}

func (r *pondGo) Go() {
	r.wg.Add(1)
	if err := r.p.Go(r.task); err != nil {
		panic(err)
	}
}

func (r *pondGo) Close() { r.p.StopAndWait() }

type pondSubmit struct {
	p    pond.Pool
	task func()
	win  window[pond.Task]
}

func newPondSubmit(cfg Config) Runner {
	r := &pondSubmit{p: newPond(cfg), task: cfg.Task}
	r.win = newWindow(cfg, func(t pond.Task) { _ = t.Wait() })
	return r
}

func (r *pondSubmit) Go()    { r.win.put(r.p.Submit(r.task)) }
func (r *pondSubmit) Wait()  { r.win.waitAll() }
func (r *pondSubmit) Close() { r.p.StopAndWait() }

type pondGroup struct {
	p    pond.Pool
	g    pond.TaskGroup
	task func()
}

func newPondGroup(cfg Config) Runner {
	r := &pondGroup{p: newPond(cfg), task: cfg.Task}
	r.g = r.p.NewGroup()
	return r
}

func (r *pondGroup) Go() { r.g.Submit(r.task) }

func (r *pondGroup) Wait() {
	_ = r.g.Wait()
	r.g = r.p.NewGroup()
}

func (r *pondGroup) Close() { r.p.StopAndWait() }

// conc: a pool is finished by Wait, so a new one follows each Wait.

type concPool struct {
	p       *concpool.Pool
	workers int
	task    func()
}

func newConc(cfg Config) Runner {
	r := &concPool{workers: cfg.Workers, task: cfg.Task}
	r.p = concpool.New().WithMaxGoroutines(r.workers)
	return r
}

func (r *concPool) Go() { r.p.Go(r.task) }

func (r *concPool) Wait() {
	r.p.Wait()
	r.p = concpool.New().WithMaxGoroutines(r.workers)
}

func (r *concPool) Close() { r.p.Wait() }

// gammazero/workerpool.

type gammazeroPool struct {
	wgRunner
	p *workerpool.WorkerPool
}

func newGammazero(cfg Config) Runner {
	r := &gammazeroPool{p: workerpool.New(cfg.Workers)}
	r.init(cfg.Task)
	return r
}

func (r *gammazeroPool) Go() {
	r.wg.Add(1)
	r.p.Submit(r.task)
}

func (r *gammazeroPool) Close() { r.p.StopWait() }
