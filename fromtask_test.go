package crew_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew"
)

// TestShutdownFromMapElementOnCaller: an element of Map run by the helping caller (a task of the pool: it
// holds one of its slots and is counted as a task) calls Shutdown on the
// pool. A worker doing the same gets ErrCalledFromTask at once; the caller
// waits for itself until the deadline.
func TestShutdownFromMapElementOnCaller(t *testing.T) {
	p := newPool(t, crew.WithWorkers(1))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var got error
	var took time.Duration
	err := crew.ForEach(context.Background(), p, []int{0}, func(context.Context, int) error {
		start := time.Now()
		got = p.Shutdown(ctx, crew.Drain)
		took = time.Since(start)
		return nil
	})
	if err != nil {
		t.Logf("ForEach: %v", err)
	}
	if !errors.Is(got, crew.ErrCalledFromTask) {
		t.Fatalf("Shutdown from a Map element on the caller's slot: %v after %v, want ErrCalledFromTask at once", got, took)
	}
	if err := p.Shutdown(ctx, crew.Drain); err != nil {
		t.Fatalf("Shutdown from outside afterwards: %v", err)
	}
	checkCounts(t, p)
}

// TestCloseFromMapElementOnCaller: the same with Close.
func TestCloseFromMapElementOnCaller(t *testing.T) {
	p := newPool(t, crew.WithWorkers(1), crew.WithStopGrace(2*time.Second))
	var got error
	_ = crew.ForEach(context.Background(), p, []int{0}, func(context.Context, int) error {
		got = p.Close()
		return nil
	})
	if !errors.Is(got, crew.ErrCalledFromTask) {
		t.Fatalf("Close from a Map element on the caller's slot: %v, want ErrCalledFromTask at once", got)
	}
}

// TestObserverGoexitOnHelperGivesSlotBack: an observer that calls runtime.Goexit when it hears of a Map
// caller's share: the helping caller's deferred clean-up stops there and
// never gives its borrowed slot back, so the pool never terminates.
func TestObserverGoexitOnHelperGivesSlotBack(t *testing.T) {
	p := newPool(t, crew.WithWorkers(1), crew.WithObserver(func(o crew.Observation) {
		if o.Name == "helper" {
			runtime.Goexit()
		}
	}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = crew.ForEach(context.Background(), p, []int{0}, func(context.Context, int) error { return nil }, crew.NameTasks("helper"))
	}()
	<-done
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx, crew.Drain); err != nil {
		t.Fatalf("Shutdown after the helper's observer called Goexit: %v; stats %s", err, p.Stats())
	}
}

// TestPanicWithPanicErrorValue: a task that panics with a *PanicError it got from another task.
func TestPanicWithPanicErrorValue(t *testing.T) {
	p := newPool(t, crew.WithWorkers(2))
	t1 := submit(t, p, func(context.Context) error { panic("first") })
	var pe1 *crew.PanicError
	if !errors.As(t1.Wait(), &pe1) {
		t.Fatalf("t1: %v", t1.Err())
	}
	if pe1.Task != "" {
		t.Fatalf("t1 name %q", pe1.Task)
	}
	t2 := submit(t, p, func(context.Context) error { panic(pe1) }, crew.Named("second"))
	var pe2 *crew.PanicError
	if !errors.As(t2.Wait(), &pe2) {
		t.Fatalf("t2: %v", t2.Err())
	}
	var pe1again *crew.PanicError
	errors.As(t1.Err(), &pe1again)
	if pe1again.Task != "" {
		t.Errorf("t1's error was changed by t2's panic: now says task %q panicked: %v", pe1again.Task, t1.Err())
	}
	if pe2 == pe1 {
		t.Errorf("t2's PanicError is t1's own value: its stack is t1's, not where t2 panicked")
	}
}

// TestPanicWithPanicErrorValueRace: the same, concurrently: the race detector sees the write to Task.
func TestPanicWithPanicErrorValueRace(t *testing.T) {
	p := newPool(t, crew.WithWorkers(2))
	t1 := submit(t, p, func(context.Context) error { panic("first") })
	err1 := t1.Wait()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 1000 {
			_ = err1.Error()
		}
	}()
	t2 := submit(t, p, func(context.Context) error { panic(err1) }, crew.Named("second"))
	_ = t2.Wait()
	wg.Wait()
}

// TestObserverGoexitCountsOnce: an observer that calls runtime.Goexit (t.FailNow in a test's
// observer): the task was counted, then counted again as failed.
func TestObserverGoexitCountsOnce(t *testing.T) {
	var once sync.Once
	p := newPool(t, crew.WithWorkers(1), crew.WithObserver(func(o crew.Observation) {
		exit := false
		once.Do(func() { exit = true })
		if exit {
			runtime.Goexit()
		}
	}))
	done := make(chan struct{})
	if err := p.Go(func() { close(done) }); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := p.Shutdown(context.Background(), crew.Drain); err != nil {
		t.Fatal(err)
	}
	s := p.Stats()
	sum := s.Succeeded + s.Failed + s.Panicked + s.TimedOut + s.Canceled + s.Dropped + s.Rejected
	if sum != s.Submitted {
		t.Fatalf("one task, counts: %s (sum %d, submitted %d)", s, sum, s.Submitted)
	}
}

// TestPanicHandlerGoexitReleasesTask: a panic handler that calls runtime.Goexit: the long task it reported
// is never completed, and its waiter waits for ever.
func TestPanicHandlerGoexitReleasesTask(t *testing.T) {
	p := newPool(t, crew.WithWorkers(1), crew.WithPanicHandler(func(*crew.PanicError) { runtime.Goexit() }))
	task := submit(t, p, func(context.Context) error { panic("boom") })
	select {
	case <-task.Done():
	case <-time.After(2 * time.Second):
		t.Fatalf("task whose panic handler called Goexit never completed: state %v, stats %s", task.State(), p.Stats())
	}
}

// TestPanicHandlerGoexitReleasesGroup: the same for a group's task: Group.Wait waits for ever.
func TestPanicHandlerGoexitReleasesGroup(t *testing.T) {
	p := newPool(t, crew.WithWorkers(1), crew.WithPanicHandler(func(*crew.PanicError) { runtime.Goexit() }))
	g, _ := crew.NewGroup(context.Background(), p)
	_ = g.Go(func() error { panic("boom") })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := g.WaitContext(ctx); errors.As(err, new(*crew.UnfinishedError)) {
		t.Fatalf("group whose task's panic handler called Goexit: %v; stats %s", err, p.Stats())
	}
}

// TestReturnedMapPanicIsNotASecondPanic: a group task that returns (not panics with) the error of a Map whose
// element panicked is counted and reported as a second panic.
func TestReturnedMapPanicIsNotASecondPanic(t *testing.T) {
	var handled atomic.Int32
	p := newPool(t, crew.WithWorkers(2), crew.WithPanicHandler(func(*crew.PanicError) { handled.Add(1) }))
	g, ctx := crew.NewGroup(context.Background(), p)
	_ = g.Go(func() error {
		_, err := crew.Map(ctx, p, []int{0}, func(context.Context, int) (int, error) { panic("boom") })
		return err // an error, returned: this task did not panic
	})
	_ = g.Wait()
	if err := p.Shutdown(context.Background(), crew.Drain); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); handled.Load() != 1 || s.Panicked != 1 {
		t.Fatalf("one panic: handler called %d times, Stats %s", handled.Load(), s)
	}
}
