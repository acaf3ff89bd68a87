package crew_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crew-go/crew"
)

// TestMapMatchesTheLoop: whatever the batch size, the bound and the Limit,
// Map returns what the plain loop computes, in input order, calling fn
// exactly once per element, and never runs more elements at once than the
// bound and the Limit allow, the caller included.
func TestMapMatchesTheLoop(t *testing.T) {
	for _, workers := range []int{1, 2, 4, 8} {
		for _, limit := range []int{0, 1, 3} {
			for _, n := range []int{0, 1, 2, 3, 7, 10, 100, 1000, 5000} {
				t.Run(fmt.Sprintf("workers=%d/limit=%d/n=%d", workers, limit, n), func(t *testing.T) {
					p := newPool(t, crew.WithWorkers(workers))
					var opts []crew.GroupOption
					bound := int64(workers)
					if limit > 0 {
						opts = append(opts, crew.Limit(limit))
						bound = min(bound, int64(limit))
					}
					in := make([]int, n)
					for i := range in {
						in[i] = i
					}
					calls := make([]atomic.Int32, n)
					var g gauge
					out, err := crew.Map(t.Context(), p, in, func(_ context.Context, v int) (int, error) {
						g.enter()
						defer g.leave()
						calls[v].Add(1)
						if v%97 == 0 {
							time.Sleep(time.Microsecond) // uneven elements
						}
						return v * v, nil
					}, opts...)
					if err != nil {
						t.Fatal(err)
					}
					for i, v := range out {
						if v != i*i || calls[i].Load() != 1 {
							t.Fatalf("element %d: got %d after %d calls, want %d after 1", i, v, calls[i].Load(), i*i)
						}
					}
					if len(out) != n {
						t.Fatalf("%d values, want %d", len(out), n)
					}
					if g.peak.Load() > bound {
						t.Fatalf("%d elements ran at once, bound %d", g.peak.Load(), bound)
					}
					if err := p.Shutdown(t.Context(), crew.Drain); err != nil {
						t.Fatal(err)
					}
					if s := checkCounts(t, p); s.Canceled != 0 || s.Failed != 0 {
						t.Fatalf("a successful Map counted failures: %v", s)
					}
				})
			}
		}
	}
}

// TestMapKeepsTheBoundBesideOtherTasks: the caller that helps holds a slot,
// so elements and the pool's other tasks together never exceed the bound
// (invariant 2), and everything runs.
func TestMapKeepsTheBoundBesideOtherTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const bound = 3
		p := newPool(t, crew.WithWorkers(bound))
		var g gauge
		work := func() {
			g.enter()
			defer g.leave()
			time.Sleep(time.Millisecond)
		}
		var ran atomic.Int64
		for range 10 {
			if err := p.Go(func() { work(); ran.Add(1) }); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				err := crew.ForEach(t.Context(), p, make([]int, 20), func(context.Context, int) error {
					work()
					ran.Add(1)
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if err := p.Shutdown(t.Context(), crew.Drain); err != nil {
			t.Fatal(err)
		}
		if ran.Load() != 70 || g.peak.Load() > bound {
			t.Fatalf("%d of 70 ran, peak %d, bound %d", ran.Load(), g.peak.Load(), bound)
		}
	})
}

// TestMapElementsAtTheBoundMeet: with no more elements than the bound, every
// element runs at once, as tasks at the bound do: elements that wait for one
// another meet (a hang here is a deadlock of the bubble).
func TestMapElementsAtTheBoundMeet(t *testing.T) {
	for _, workers := range []int{2, 4, 8} {
		synctest.Test(t, func(t *testing.T) {
			p := newPool(t, crew.WithWorkers(workers))
			var meet sync.WaitGroup
			meet.Add(workers)
			err := crew.ForEach(t.Context(), p, make([]int, workers), func(context.Context, int) error {
				meet.Done()
				meet.Wait()
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestMapErrorSemantics: the first error stops the elements not yet started
// and is returned as an *IndexError; JoinErrors tries every element and
// returns every error in input order; a panic is an element's error too.
func TestMapErrorSemantics(t *testing.T) {
	p := newPool(t, crew.WithWorkers(4))
	in := make([]int, 5000)
	for i := range in {
		in[i] = i
	}
	fail := func(v int) bool { return v%1000 == 999 }
	var calls atomic.Int64
	fn := func(_ context.Context, v int) (int, error) {
		calls.Add(1)
		switch {
		case v == 2999:
			panic("element 2999")
		case fail(v):
			return 0, fmt.Errorf("element %d", v)
		}
		return v, nil
	}
	_, err := crew.Map(t.Context(), p, in, fn)
	var ie *crew.IndexError
	if !errors.As(err, &ie) || !fail(ie.Index) {
		t.Fatalf("Map = %v, want an IndexError of a failing element", err)
	}
	if calls.Load() == int64(len(in)) {
		t.Fatalf("every element ran after the first error")
	}

	calls.Store(0)
	out, err := crew.Map(t.Context(), p, in, fn, crew.JoinErrors())
	if calls.Load() != int64(len(in)) {
		t.Fatalf("%d elements ran with JoinErrors, want all %d", calls.Load(), len(in))
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Map = %v, want joined errors", err)
	}
	var at []int
	for _, e := range joined.Unwrap() {
		if !errors.As(e, &ie) {
			t.Fatalf("%v is not an IndexError", e)
		}
		at = append(at, ie.Index)
	}
	if want := []int{999, 1999, 2999, 3999, 4999}; !slices.Equal(at, want) {
		t.Fatalf("errors at %v, want %v", at, want)
	}
	var pe *crew.PanicError
	if !errors.As(joined.Unwrap()[2], &pe) || pe.Value != "element 2999" {
		t.Fatalf("element 2999: %v, want its panic", joined.Unwrap()[2])
	}
	if out[1000] != 1000 || out[999] != 0 {
		t.Fatalf("values: out[1000] = %d, out[999] = %d", out[1000], out[999])
	}
}

// TestMapStopsWithItsContext: when the caller's context ends, the elements
// not yet started never run and Map returns the cause.
func TestMapStopsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(2))
		ctx, cancel := context.WithCancelCause(t.Context())
		stop := errors.New("stop")
		var after atomic.Int64
		var stopped atomic.Bool
		err := crew.ForEach(ctx, p, make([]int, 100), func(context.Context, int) error {
			if stopped.Load() {
				after.Add(1)
			}
			time.Sleep(time.Millisecond)
			if !stopped.Load() {
				stopped.Store(true)
				cancel(stop)
			}
			return nil
		})
		// The other participant may have looked at the context just before
		// the cancel: one element at most, as with one task per element.
		if !errors.Is(err, stop) || after.Load() > 1 {
			t.Fatalf("ForEach = %v with %d elements started after the cancel; want the cause and at most 1", err, after.Load())
		}
	})
}

// TestMapOnAPausedPoolWaitsForResume: a paused pool runs no element, not
// even on the caller; Resume lets the whole call run.
func TestMapOnAPausedPoolWaitsForResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(2))
		_ = p.Pause()
		var ran atomic.Int64
		done := make(chan error)
		go func() {
			done <- crew.ForEach(t.Context(), p, make([]int, 50), func(context.Context, int) error {
				ran.Add(1)
				return nil
			})
		}()
		synctest.Wait()
		if ran.Load() != 0 {
			t.Fatalf("%d elements ran on a paused pool", ran.Load())
		}
		_ = p.Resume()
		if err := <-done; err != nil || ran.Load() != 50 {
			t.Fatalf("ForEach = %v after %d elements", err, ran.Load())
		}
	})
}

// TestMapWhenEverySlotIsBusy: with every slot running a task, the caller
// cannot help: its runners queue, and run once a slot frees.
func TestMapWhenEverySlotIsBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(2))
		gt := newGate()
		for range 2 {
			_ = p.Go(gt.short)
		}
		synctest.Wait()
		var ran atomic.Int64
		done := make(chan error)
		go func() {
			done <- crew.ForEach(t.Context(), p, make([]int, 10), func(context.Context, int) error {
				ran.Add(1)
				return nil
			})
		}()
		synctest.Wait()
		if ran.Load() != 0 {
			t.Fatalf("%d elements ran with every slot busy", ran.Load())
		}
		gt.open()
		if err := <-done; err != nil || ran.Load() != 10 {
			t.Fatalf("ForEach = %v after %d elements", err, ran.Load())
		}
	})
}

// TestHardStopCancelsTheHelpingCaller: the caller's own elements are
// cancelled by a hard stop like a worker's, and Shutdown reports nothing
// stuck.
func TestHardStopCancelsTheHelpingCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(1))
		started := make(chan struct{})
		done := make(chan error)
		go func() {
			done <- crew.ForEach(t.Context(), p, make([]int, 3), func(ctx context.Context, _ int) error {
				close(started)
				<-ctx.Done()
				return ctx.Err()
			})
		}()
		<-started
		if err := p.Shutdown(t.Context(), crew.Hard); err != nil {
			t.Fatalf("Shutdown = %v", err)
		}
		if err := <-done; !errors.Is(err, context.Canceled) && !errors.Is(err, crew.ErrCanceled) {
			t.Fatalf("ForEach = %v, want cancelled", err)
		}
	})
}

// TestSoftStopRunsNoNewElement: once a soft stop begins, the elements not
// yet started never run and Map says so with ErrNotRun.
func TestSoftStopRunsNoNewElement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(1))
		gt := newGate()
		var ran atomic.Int64
		done := make(chan error)
		go func() {
			done <- crew.ForEach(t.Context(), p, make([]int, 10), func(context.Context, int) error {
				if ran.Add(1) == 1 {
					gt.short()
				}
				return nil
			})
		}()
		<-gt.started
		stopped := make(chan error)
		go func() { stopped <- p.Shutdown(t.Context(), crew.Soft) }()
		synctest.Wait()
		gt.open()
		if err := <-done; !errors.Is(err, crew.ErrNotRun) || ran.Load() != 1 {
			t.Fatalf("ForEach = %v after %d elements, want ErrNotRun after 1", err, ran.Load())
		}
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
	})
}

// TestMapAllocatesPerCallNotPerElement: O(1) allocations per call.
func TestMapAllocatesPerCallNotPerElement(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage counters allocate")
	}
	p := newPool(t, crew.WithWorkers(2))
	allocs := func(n int) float64 {
		in := make([]int, n)
		return testing.AllocsPerRun(50, func() {
			_ = crew.ForEach(context.Background(), p, in, func(context.Context, int) error { return nil })
		})
	}
	small, large := allocs(10), allocs(10000)
	if large > small+2 || small > 10 {
		t.Fatalf("ForEach allocates %.0f times over 10 elements and %.0f over 10,000", small, large)
	}
}

// TestMapElementCallingGoexit: an element that calls runtime.Goexit (as
// t.FailNow does) ends the goroutine it runs on, the caller's or a
// worker's, without stranding the pool: its slot comes back, the rest of
// the call is abandoned or finished, and the pool still stops.
func TestMapElementCallingGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(2))
		// On the caller: its goroutine ends, the pool lives on.
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			_ = crew.ForEach(t.Context(), p, make([]int, 1), func(context.Context, int) error {
				runtime.Goexit()
				return nil
			})
			t.Error("ForEach returned on a goroutine that called Goexit")
		}()
		<-exited
		// Every element but one sleeps, so that some run on a runner: on
		// whichever goroutine the Goexit falls, the caller gets an error or
		// its goroutine ends; never a hang.
		for range 20 {
			var first atomic.Bool
			returned := make(chan error, 1)
			go func() {
				returned <- crew.ForEach(t.Context(), p, make([]int, 100), func(context.Context, int) error {
					time.Sleep(time.Millisecond)
					if first.CompareAndSwap(false, true) {
						runtime.Goexit()
					}
					return nil
				})
			}()
			synctest.Wait()
			select {
			case err := <-returned:
				if err == nil {
					t.Fatal("ForEach = nil after an element called Goexit")
				}
			default: // the caller's goroutine ended
			}
		}
		if err := p.Shutdown(t.Context(), crew.Drain); err != nil {
			t.Fatal(err)
		}
		checkCounts(t, p)
	})
}
