package crew_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crew-go/crew"
	"go.uber.org/goleak"
)

func TestNewRejectsBadOptions(t *testing.T) {
	for name, opt := range map[string]crew.Option{
		"zero workers":      crew.WithWorkers(0),
		"negative workers":  crew.WithWorkers(-1),
		"negative queue":    crew.WithQueueSize(-5),
		"zero queue":        crew.WithQueueSize(0),
		"zero idle timeout": crew.WithIdleTimeout(0),
		"negative timeout":  crew.WithTaskTimeout(-time.Second),
		"zero stop grace":   crew.WithStopGrace(0),
		"huge queue":        crew.WithQueueSize(1 << 40),
		"queue over max":    crew.WithQueueSize(crew.MaxQueueSize + 1),
		"nil context":       crew.WithContext(nil), //nolint:staticcheck // the point of the test
		"nil option":        nil,
	} {
		t.Run(name, func(t *testing.T) {
			p, err := crew.New(opt)
			if !errors.Is(err, crew.ErrInvalidOption) || p != nil {
				t.Fatalf("New = %v, %v; want nil, ErrInvalidOption", p, err)
			}
		})
	}
}

func TestNewStartsNoGoroutineAndSizesFromGOMAXPROCS(t *testing.T) {
	p, err := crew.New(crew.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	goleak.VerifyNone(t) // not a single goroutine while the pool is open

	s := p.Stats()
	if s.MaxWorkers != runtime.GOMAXPROCS(0) || s.Workers != 0 || s.QueueCapacity != crew.DefaultQueueSize {
		t.Fatalf("defaults: %+v", s)
	}
}

func TestBadTaskInput(t *testing.T) {
	p := newPool(t)
	ctx := context.Background()
	if err := p.Go(nil); !errors.Is(err, crew.ErrNilFunc) {
		t.Errorf("Go(nil) = %v", err)
	}
	if err := p.TryGo(nil); !errors.Is(err, crew.ErrNilFunc) {
		t.Errorf("TryGo(nil) = %v", err)
	}
	if _, err := p.Submit(ctx, nil); !errors.Is(err, crew.ErrNilFunc) {
		t.Errorf("Submit(nil) = %v", err)
	}
	if _, err := p.TrySubmit(nil); !errors.Is(err, crew.ErrNilFunc) {
		t.Errorf("TrySubmit(nil) = %v", err)
	}
	if err := p.Go(func() {}, crew.Timeout(time.Second)); !errors.Is(err, crew.ErrInvalidOption) {
		t.Errorf("Go with Timeout = %v", err)
	}
	if _, err := p.Submit(ctx, func(context.Context) error { return nil }, crew.Timeout(0)); !errors.Is(err, crew.ErrInvalidOption) {
		t.Errorf("Submit with Timeout(0) = %v", err)
	}
	if err := p.Go(func() {}, crew.TaskOption{}); !errors.Is(err, crew.ErrInvalidOption) {
		t.Errorf("Go with zero TaskOption = %v", err)
	}
	if _, err := p.Submit(nil, func(context.Context) error { return nil }); !errors.Is(err, crew.ErrInvalidOption) { //nolint:staticcheck
		t.Errorf("Submit(nil ctx) = %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Submit(cancelled, func(context.Context) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Submit(cancelled ctx) = %v", err)
	}
	if err := p.Resize(0); !errors.Is(err, crew.ErrInvalidOption) {
		t.Errorf("Resize(0) = %v", err)
	}
	if err := p.Shutdown(ctx, crew.ShutdownMode(42)); !errors.Is(err, crew.ErrInvalidOption) {
		t.Errorf("Shutdown(bad mode) = %v", err)
	}
	if err := p.Shutdown(nil, crew.Drain); !errors.Is(err, crew.ErrInvalidOption) { //nolint:staticcheck
		t.Errorf("Shutdown(nil ctx) = %v", err)
	}
}

func TestGoAndSubmitRunTasks(t *testing.T) {
	p := newPool(t, crew.WithWorkers(4))
	var n atomic.Int64
	var wg sync.WaitGroup
	wg.Add(100)
	for range 100 {
		if err := p.Go(func() { n.Add(1); wg.Done() }); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	boom := errors.New("boom")
	ok := submit(t, p, func(context.Context) error { return nil }, crew.Named("ok"))
	bad := submit(t, p, func(context.Context) error { return boom })
	if err := ok.Wait(); err != nil || ok.State() != crew.Succeeded || ok.Name() != "ok" {
		t.Fatalf("ok task: %v %v %q", err, ok.State(), ok.Name())
	}
	<-bad.Done()
	if !errors.Is(bad.Err(), boom) || bad.State() != crew.Failed {
		t.Fatalf("failing task: %v %v", bad.Err(), bad.State())
	}
	if n.Load() != 100 {
		t.Fatalf("ran %d short tasks", n.Load())
	}
	if err := p.Shutdown(context.Background(), crew.Drain); err != nil {
		t.Fatal(err)
	}
	s := checkCounts(t, p)
	if s.Succeeded != 101 || s.Failed != 1 || s.Submitted != 102 {
		t.Fatalf("counts: %+v", s)
	}
}

func TestTryReportsFullQueue(t *testing.T) {
	p := newPool(t, crew.WithWorkers(1), crew.WithQueueSize(2))
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := p.TryGo(func() {}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.TryGo(func() {}); !errors.Is(err, crew.ErrQueueFull) {
		t.Fatalf("TryGo on full queue = %v", err)
	}
	if _, err := p.TrySubmit(func(context.Context) error { return nil }); !errors.Is(err, crew.ErrQueueFull) {
		t.Fatalf("TrySubmit on full queue = %v", err)
	}
	s := p.Stats()
	if s.Queued != 2 || s.Rejected != 2 || s.Workers != 0 || !s.Paused {
		t.Fatalf("stats: %+v", s)
	}
}

func TestBlockedSubmitWakesOnRoomContextAndShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(1), crew.WithQueueSize(1))
		g := newGate()
		submit(t, p, g.ignore)
		g.waitStarted(t, 1)
		if err := p.Go(func() {}); err != nil { // fills the queue
			t.Fatal(err)
		}

		// Waits for room, then gets in when the worker frees it.
		entered := make(chan error, 1)
		go func() { entered <- p.Go(func() {}) }()
		synctest.Wait()
		if s := p.Stats(); s.Waiting != 1 {
			t.Fatalf("waiting = %d", s.Waiting)
		}
		// Its context ends while it waits.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := p.Submit(ctx, g.ignore)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Submit with ending ctx = %v", err)
		}
		g.open()
		if err := <-entered; err != nil {
			t.Fatalf("blocked Go = %v", err)
		}

		// Shutdown releases a waiting submitter with ErrClosed.
		g2 := newGate()
		submit(t, p, g2.ignore)
		g2.waitStarted(t, 1)
		_ = p.Go(func() {})
		go func() { entered <- p.Go(func() {}) }()
		synctest.Wait()
		go func() { _ = p.Shutdown(context.Background(), crew.Soft) }()
		if err := <-entered; !errors.Is(err, crew.ErrClosed) {
			t.Fatalf("Go blocked at shutdown = %v", err)
		}
		g2.open()
		if err := p.Shutdown(context.Background(), crew.Soft); err != nil {
			t.Fatal(err)
		}
		checkCounts(t, p)
	})
}

func TestWorkersStartLazilyAndRetireWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(8), crew.WithIdleTimeout(time.Minute))
		if s := p.Stats(); s.Workers != 0 {
			t.Fatalf("workers before any task: %d", s.Workers)
		}
		g := newGate()
		for range 3 {
			submit(t, p, g.ignore)
		}
		g.waitStarted(t, 3)
		if s := p.Stats(); s.Workers != 3 || s.Busy != 3 {
			t.Fatalf("three tasks started %d workers (%d busy)", s.Workers, s.Busy)
		}
		g.open()
		synctest.Wait()
		if s := p.Stats(); s.Workers != 3 || s.Busy != 0 {
			t.Fatalf("after the tasks: %+v", s)
		}
		time.Sleep(59 * time.Second)
		synctest.Wait()
		if s := p.Stats(); s.Workers != 3 {
			t.Fatalf("retired before the idle timeout: %d", s.Workers)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if s := p.Stats(); s.Workers != 0 {
			t.Fatalf("idle workers left after the timeout: %d", s.Workers)
		}
		// An idle pool starts again on demand.
		done := submit(t, p, func(context.Context) error { return nil })
		if err := done.Wait(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestWorkersAreReused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(2))
		for range 50 {
			if err := submit(t, p, func(context.Context) error { return nil }).Wait(); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		if s := p.Stats(); s.Workers != 1 {
			t.Fatalf("sequential tasks used %d workers", s.Workers)
		}
	})
}

func TestPanicBecomesErrorAndWorkerLives(t *testing.T) {
	var hooked atomic.Int64
	p := newPool(t, crew.WithWorkers(1), crew.WithPanicHandler(func(pe *crew.PanicError) { hooked.Add(1) }))
	sentinel := errors.New("sentinel")
	task := submit(t, p, func(context.Context) error { panic(sentinel) }, crew.Named("boom"))
	err := task.Wait()
	var pe *crew.PanicError
	if !errors.As(err, &pe) || task.State() != crew.Panicked {
		t.Fatalf("Wait = %v (%v)", err, task.State())
	}
	if pe.Value != sentinel || pe.Task != "boom" || !errors.Is(err, sentinel) || len(pe.Stack) == 0 {
		t.Fatalf("panic error: %#v", pe)
	}
	done := make(chan struct{})
	_ = p.Go(func() { panic("short") })
	_ = p.Go(func() { close(done) })
	<-done
	if err := submit(t, p, func(context.Context) error { return nil }).Wait(); err != nil {
		t.Fatalf("after panics: %v", err)
	}
	if err := p.Shutdown(context.Background(), crew.Drain); err != nil {
		t.Fatal(err)
	}
	s := checkCounts(t, p)
	if s.Panicked != 2 || hooked.Load() != 2 || s.MaxWorkers != 1 {
		t.Fatalf("panicked %d, hooked %d: %+v", s.Panicked, hooked.Load(), s)
	}
}

func TestGoexitFailsTaskAndKeepsCapacity(t *testing.T) {
	p := newPool(t, crew.WithWorkers(1))
	// A timed task first, so that the worker's timeout timer exists but is
	// stopped when the next task, without a timeout, calls Goexit.
	if err := submit(t, p, func(context.Context) error { return nil }, crew.Timeout(time.Hour)).Wait(); err != nil {
		t.Fatal(err)
	}
	task := submit(t, p, func(context.Context) error { runtime.Goexit(); return nil })
	if err := task.Wait(); !errors.Is(err, crew.ErrGoexit) {
		t.Fatalf("Wait = %v", err)
	}
	for range 3 {
		if err := submit(t, p, func(context.Context) error { return nil }).Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Shutdown(context.Background(), crew.Drain); err != nil {
		t.Fatal(err)
	}
	if s := checkCounts(t, p); s.Failed != 1 || s.Succeeded != 4 {
		t.Fatalf("counts: %+v", s)
	}
}

func TestPauseQueuesAndResumeRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(2))
		if err := p.Pause(); err != nil {
			t.Fatal(err)
		}
		var ran atomic.Int64
		tasks := make([]*crew.Task, 5)
		for i := range tasks {
			tasks[i] = submit(t, p, func(context.Context) error { ran.Add(1); return nil })
		}
		synctest.Wait()
		if s := p.Stats(); ran.Load() != 0 || s.Queued != 5 || s.Workers != 0 {
			t.Fatalf("paused pool ran %d: %+v", ran.Load(), s)
		}
		if err := p.Resume(); err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			if err := task.Wait(); err != nil {
				t.Fatal(err)
			}
		}
		// Pausing a busy pool lets running tasks finish and holds the rest.
		g := newGate()
		submit(t, p, g.ignore)
		g.waitStarted(t, 1)
		_ = p.Pause()
		held := submit(t, p, func(context.Context) error { return nil })
		g.open()
		synctest.Wait()
		if held.State() != crew.Queued {
			t.Fatalf("task ran while paused: %v", held.State())
		}
		_ = p.Resume()
		if err := held.Wait(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestResizeGrowsAndWakesSubmitters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(1), crew.WithQueueSize(2))
		g := newGate()
		for range 3 {
			submit(t, p, g.ignore) // one runs, two queue
		}
		g.waitStarted(t, 1)
		blocked := make(chan *crew.Task)
		go func() { blocked <- submit(t, p, g.ignore) }()
		synctest.Wait()
		if s := p.Stats(); s.Waiting != 1 || s.Queued != 2 {
			t.Fatalf("before resize: %+v", s)
		}
		if err := p.Resize(4); err != nil {
			t.Fatal(err)
		}
		task := <-blocked // got in without any task finishing
		g.waitStarted(t, 3)
		if s := p.Stats(); s.Workers != 4 || s.Busy != 4 || s.Waiting != 0 {
			t.Fatalf("after resize: %+v", s)
		}
		g.open()
		if err := task.Wait(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestResizeShrinksAfterCurrentTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(4))
		g := newGate()
		for range 4 {
			submit(t, p, g.ignore)
		}
		g.waitStarted(t, 4)
		if err := p.Resize(1); err != nil {
			t.Fatal(err)
		}
		if s := p.Stats(); s.Workers != 4 {
			t.Fatalf("resize interrupted running tasks: %+v", s)
		}
		g.open()
		synctest.Wait()
		if s := p.Stats(); s.Workers != 1 || s.MaxWorkers != 1 {
			t.Fatalf("after shrink: %+v", s)
		}
		// The new bound holds for what runs next.
		var gauge gauge
		tasks := make([]*crew.Task, 20)
		for i := range tasks {
			tasks[i] = submit(t, p, func(context.Context) error {
				gauge.enter()
				defer gauge.leave()
				time.Sleep(time.Millisecond)
				return nil
			})
		}
		for _, task := range tasks {
			_ = task.Wait()
		}
		if gauge.peak.Load() != 1 {
			t.Fatalf("peak concurrency %d after Resize(1)", gauge.peak.Load())
		}
	})
}

func TestObserverSeesEveryTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var seen []crew.Observation
		p := newPool(t, crew.WithWorkers(1), crew.WithObserver(func(o crew.Observation) {
			mu.Lock()
			seen = append(seen, o)
			mu.Unlock()
		}))
		slow := submit(t, p, func(context.Context) error { time.Sleep(3 * time.Second); return nil }, crew.Named("slow"))
		_ = p.Go(func() { time.Sleep(time.Second) }, crew.Named("short"))
		late := submit(t, p, func(ctx context.Context) error { <-ctx.Done(); time.Sleep(time.Second); return nil },
			crew.Named("late"), crew.Timeout(2*time.Second))
		_ = slow.Wait()
		_ = late.Wait()
		if err := p.Shutdown(context.Background(), crew.Drain); err != nil {
			t.Fatal(err)
		}
		want := []crew.Observation{
			{Name: "slow", Wait: 0, Run: 3 * time.Second, State: crew.Succeeded},
			{Name: "short", Wait: 3 * time.Second, Run: time.Second, State: crew.Succeeded},
			{Name: "late", Wait: 4 * time.Second, Run: 3 * time.Second, State: crew.TimedOut},
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != len(want) {
			t.Fatalf("observations: %+v", seen)
		}
		for i := range want {
			if seen[i] != want[i] {
				t.Errorf("observation %d = %+v, want %+v", i, seen[i], want[i])
			}
		}
	})
}

// TestObservedTasksAreCounted: with an observer, Stats already counts a
// short task when it is observed, even on a worker that goes straight on
// to a task that holds it (the batched count would otherwise wait for the
// worker to find the queue empty).
func TestObservedTasksAreCounted(t *testing.T) {
	var p *crew.Pool
	var mu sync.Mutex
	var lagged []string
	observed := 0
	p = newPool(t, crew.WithWorkers(1), crew.WithQueueSize(200), crew.WithObserver(func(o crew.Observation) {
		mu.Lock()
		defer mu.Unlock()
		observed++
		if st := p.Stats(); st.Succeeded < uint64(observed) {
			lagged = append(lagged, fmt.Sprintf("%d observed, %d counted", observed, st.Succeeded))
		}
	}))
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if err := p.Go(func() {}); err != nil {
			t.Fatal(err)
		}
	}
	gate := make(chan struct{})
	if err := p.Go(func() { <-gate }); err != nil {
		t.Fatal(err)
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for p.Stats().Busy != 1 || p.Stats().Queued != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the holding task did not start: %v", p.Stats())
		}
		time.Sleep(time.Millisecond)
	}
	st := p.Stats() // the worker is held: nothing flushes its count now
	close(gate)
	mu.Lock()
	defer mu.Unlock()
	if st.Succeeded != 100 || len(lagged) > 0 {
		t.Fatalf("held after 100 observed tasks: %v; lags seen: %v", st, lagged)
	}
}

func TestTaskContextCarriesSubmitValuesNotCancellation(t *testing.T) {
	type key struct{}
	p := newPool(t)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	task, err := p.Submit(ctx, func(tctx context.Context) error {
		cancel() // the submitter's context ending must not cancel the task
		if tctx.Value(key{}) != "v" {
			return errors.New("value lost")
		}
		if _, ok := tctx.Deadline(); ok {
			return errors.New("deadline without a timeout")
		}
		return tctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestObserverSeesGoexit: a task whose function calls runtime.Goexit is
// observed as failed, like Stats counts it, whatever its kind.
func TestObserverSeesGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		seen := map[string]crew.State{}
		p := newPool(t, crew.WithWorkers(1), crew.WithObserver(func(o crew.Observation) {
			mu.Lock()
			seen[o.Name] = o.State
			mu.Unlock()
		}))
		if err := p.Go(runtime.Goexit, crew.Named("short")); err != nil {
			t.Fatal(err)
		}
		submit(t, p, func(context.Context) error { runtime.Goexit(); return nil }, crew.Named("long"))
		g, _ := crew.NewGroup(t.Context(), p, crew.JoinErrors())
		_ = g.Go(func() error { runtime.Goexit(); return nil }, crew.Named("group"))
		if err := g.Wait(); !errors.Is(err, crew.ErrGoexit) {
			t.Fatalf("group Wait = %v", err)
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, name := range []string{"short", "long", "group"} {
			if seen[name] != crew.Failed {
				t.Errorf("observer saw %q as %v, want failed (all: %v)", name, seen[name], seen)
			}
		}
		if s := p.Stats(); s.Failed != 3 {
			t.Errorf("Stats.Failed = %d, want 3", s.Failed)
		}
	})
}

// TestQueuedNeverExceedsCapacity: the queue length in a snapshot stays
// within the capacity while submitters and workers race.
func TestQueuedNeverExceedsCapacity(t *testing.T) {
	p := newPool(t, crew.WithWorkers(2), crew.WithQueueSize(4))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					_ = p.TryGo(func() {})
				}
			}
		})
	}
	for range 50000 {
		if s := p.Stats(); s.Queued > s.QueueCapacity || s.Queued < 0 {
			close(stop)
			wg.Wait()
			t.Fatalf("Queued %d of capacity %d", s.Queued, s.QueueCapacity)
		}
	}
	close(stop)
	wg.Wait()
}

// TestPoolWithEndedContextRefusesAtOnce: New with a context that has
// already ended returns a stopped pool; not one submit is accepted.
func TestPoolWithEndedContextRefusesAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 50 {
		p := newPool(t, crew.WithContext(ctx))
		var ran atomic.Int64
		for range 20 {
			if err := p.Go(func() { ran.Add(1) }); !errors.Is(err, crew.ErrClosed) {
				t.Fatalf("Go = %v, want ErrClosed", err)
			}
			if _, err := p.TrySubmit(func(context.Context) error { ran.Add(1); return nil }); !errors.Is(err, crew.ErrClosed) {
				t.Fatalf("TrySubmit = %v, want ErrClosed", err)
			}
		}
		if err := p.Shutdown(context.Background(), crew.Drain); err != nil || ran.Load() != 0 || !p.Stats().Closed {
			t.Fatalf("Shutdown = %v, %d ran, %+v", err, ran.Load(), p.Stats())
		}
	}
}

// TestPanickingHooksAreRecovered is invariant 4 for the user's hooks: an
// observer or panic handler that panics is logged, the task is counted, and
// the pool keeps its workers.
func TestPanickingHooksAreRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncBuffer
		p := newPool(t, crew.WithWorkers(1),
			crew.WithObserver(func(crew.Observation) { panic("observer") }),
			crew.WithPanicHandler(func(*crew.PanicError) { panic("handler") }),
			crew.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
		for range 3 {
			if err := p.Go(func() { panic("task") }); err != nil {
				t.Fatal(err)
			}
			if err := submit(t, p, func(context.Context) error { return nil }).Wait(); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if s := p.Stats(); s.Panicked != 3 || s.Succeeded != 3 || s.Workers != 1 {
			t.Fatalf("after panicking hooks: %+v", s)
		}
		var hooks []string
		for _, r := range buf.records(t) {
			if m := r["msg"].(string); strings.HasSuffix(m, "handler panicked") || strings.HasSuffix(m, "observer panicked") {
				hooks = append(hooks, m)
			}
		}
		if len(hooks) != 9 { // 3 handler panics, 6 observer panics
			t.Fatalf("logged hook panics: %q", hooks)
		}
	})
}

// TestRefusedAndDroppedAreCountedApart: load shed at submission (Rejected)
// and accepted tasks dropped by shutdown (Dropped) are different numbers,
// and invariant 6 holds with both.
func TestRefusedAndDroppedAreCountedApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(1), crew.WithQueueSize(2))
		g := newGate()
		if err := p.Go(g.short); err != nil {
			t.Fatal(err)
		}
		g.waitStarted(t, 1)
		for range 2 {
			if err := p.TryGo(func() {}); err != nil {
				t.Fatal(err)
			}
		}
		for range 5 {
			if err := p.TryGo(func() {}); !errors.Is(err, crew.ErrQueueFull) {
				t.Fatal(err)
			}
		}
		go func() { _ = p.Shutdown(context.Background(), crew.Soft) }()
		synctest.Wait()
		g.open()
		if err := p.Shutdown(context.Background(), crew.Soft); err != nil {
			t.Fatal(err)
		}
		s := checkCounts(t, p)
		if s.Rejected != 5 || s.Dropped != 2 || s.Succeeded != 1 || s.Submitted != 8 {
			t.Fatalf("counts: %v", s)
		}
		if got := s.String(); !strings.Contains(got, "dropped 2 rejected 5") {
			t.Fatalf("String() = %q", got)
		}
		var buf syncBuffer
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("pool", "stats", s)
		if r := buf.records(t)[0]["stats"].(map[string]any); r["dropped"] != float64(2) || r["rejected"] != float64(5) || r["in_flight"] != float64(0) {
			t.Fatalf("LogValue: %v", r)
		}
	})
}
