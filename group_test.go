package crew_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crew-go/crew"
)

func TestGroupFirstErrorCancelsWithCauseAndSkipsQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(2))
		g, ctx := crew.NewGroup(context.Background(), p)
		boom := errors.New("boom")
		var ran atomic.Int64
		var sawCause atomic.Value
		_ = g.Go(func() error { // honours the group's context
			<-ctx.Done()
			sawCause.Store(context.Cause(ctx))
			return ctx.Err()
		})
		_ = g.Go(func() error { time.Sleep(time.Second); return boom })
		for range 5 {
			_ = g.Go(func() error { ran.Add(1); return nil })
		}
		if err := g.Wait(); err != boom {
			t.Fatalf("Wait = %v", err)
		}
		if sawCause.Load() != boom || ran.Load() != 0 {
			t.Fatalf("cause %v, queued tasks ran %d", sawCause.Load(), ran.Load())
		}
		if err := g.Go(func() error { return nil }); err != boom {
			t.Fatalf("Go after the first error = %v", err)
		}
		_ = p.Shutdown(context.Background(), crew.Drain)
		s := checkCounts(t, p)
		if s.Canceled != 5 || s.Failed != 2 {
			t.Fatalf("counts: %+v", s)
		}
	})
}

func TestGroupJoinErrorsKeepsGoing(t *testing.T) {
	p := newPool(t, crew.WithWorkers(3))
	g, ctx := crew.NewGroup(context.Background(), p, crew.JoinErrors())
	errs := []error{errors.New("a"), errors.New("b"), errors.New("c")}
	var ran atomic.Int64
	for _, e := range errs {
		_ = g.Go(func() error { ran.Add(1); return e })
		_ = g.Go(func() error { ran.Add(1); return nil })
	}
	_ = g.Go(func() error { panic("p") })
	err := g.Wait()
	for _, e := range errs {
		if !errors.Is(err, e) {
			t.Errorf("joined error misses %v: %v", e, err)
		}
	}
	var pe *crew.PanicError
	if !errors.As(err, &pe) || pe.Value != "p" {
		t.Errorf("joined error misses the panic: %v", err)
	}
	if ran.Load() != 6 {
		t.Errorf("ran %d of 6", ran.Load())
	}
	if ctx.Err() == nil {
		t.Error("Wait did not cancel the group's context")
	}
}

func TestGroupPanicFailsGroupWithStack(t *testing.T) {
	var hooked atomic.Int64
	p := newPool(t, crew.WithPanicHandler(func(*crew.PanicError) { hooked.Add(1) }))
	g, ctx := crew.NewGroup(context.Background(), p)
	_ = g.Go(func() error { panic("group panic") })
	err := g.Wait()
	var pe *crew.PanicError
	if !errors.As(err, &pe) || pe.Value != "group panic" || len(pe.Stack) == 0 {
		t.Fatalf("Wait = %v", err)
	}
	if !errors.As(context.Cause(ctx), &pe) || hooked.Load() != 1 {
		t.Fatalf("cause %v, hook %d", context.Cause(ctx), hooked.Load())
	}
}

func TestGroupWaitContextReportsUnfinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(2))
		g, gctx := crew.NewGroup(context.Background(), p)
		for range 5 {
			_ = g.Go(func() error {
				select {
				case <-time.After(time.Hour):
				case <-gctx.Done():
				}
				return nil
			})
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		err := g.WaitContext(ctx)
		var ue *crew.UnfinishedError
		if !errors.As(err, &ue) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitContext = %v", err)
		}
		if ue.Running != 2 || ue.Queued != 3 || time.Since(start) != time.Second {
			t.Fatalf("unfinished %+v after %v", ue, time.Since(start))
		}
		if context.Cause(gctx) != context.DeadlineExceeded {
			t.Fatalf("group not cancelled with the deadline: %v", context.Cause(gctx))
		}
		if err := g.Wait(); err != context.DeadlineExceeded {
			t.Fatalf("Wait after = %v", err)
		}
	})
}

// TestGroupWaitersReleased proves item 4 of the groups issue: every waiter
// is released in every case, including a paused pool whose queue holds the
// group's tasks.
func TestGroupWaitersReleased(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stop    func(p *crew.Pool, cancelGroup, cancelPool context.CancelFunc)
		wantErr error
	}{
		{"drain", func(p *crew.Pool, _, _ context.CancelFunc) { go p.Shutdown(context.Background(), crew.Drain) }, nil},
		{"soft", func(p *crew.Pool, _, _ context.CancelFunc) { go p.Shutdown(context.Background(), crew.Soft) }, crew.ErrNotRun},
		{"soft-then-hard", func(p *crew.Pool, _, _ context.CancelFunc) {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_ = p.Shutdown(ctx, crew.SoftThenHard)
			}()
		}, crew.ErrNotRun},
		{"hard", func(p *crew.Pool, _, _ context.CancelFunc) { go p.Close() }, crew.ErrNotRun},
		{"group cancelled", func(_ *crew.Pool, cancelGroup, _ context.CancelFunc) { cancelGroup() }, context.Canceled},
		{"pool context cancelled", func(_ *crew.Pool, _, cancelPool context.CancelFunc) { cancelPool() }, crew.ErrNotRun},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				poolCtx, cancelPool := context.WithCancel(context.Background())
				defer cancelPool()
				p := newPool(t, crew.WithWorkers(1), crew.WithContext(poolCtx))
				parent, cancelGroup := context.WithCancel(context.Background())
				defer cancelGroup()
				g, gctx := crew.NewGroup(parent, p)
				_ = g.Go(func() error { // running, honours the group's context
					select {
					case <-time.After(time.Minute):
					case <-gctx.Done():
					}
					return nil
				})
				synctest.Wait()
				_ = p.Pause() // the rest stays queued
				for range 3 {
					_ = g.Go(func() error { return nil })
				}
				waited := make(chan error)
				go func() { waited <- g.Wait() }()
				synctest.Wait()
				tc.stop(p, cancelGroup, cancelPool)
				if tc.name == "drain" || tc.name == "soft" {
					time.Sleep(time.Minute) // the running task finishes on its own
				}
				err := <-waited
				if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
					t.Fatalf("Wait = %v, want %v", err, tc.wantErr)
				}
				_ = p.Resume()
				_ = p.Shutdown(context.Background(), crew.Drain)
				checkCounts(t, p)
			})
		})
	}
}

func TestGroupRecordsRefusals(t *testing.T) {
	p := newPool(t)
	_ = p.Close()
	g, _ := crew.NewGroup(context.Background(), p)
	if err := g.Go(func() error { return nil }); !errors.Is(err, crew.ErrClosed) {
		t.Fatalf("Go on a closed pool = %v", err)
	}
	if err := g.Wait(); !errors.Is(err, crew.ErrClosed) {
		t.Fatalf("Wait after a refused Go = %v", err)
	}
	g2, _ := crew.NewGroup(context.Background(), nil, crew.Limit(0))
	if err := g2.Go(func() error { return nil }); !errors.Is(err, crew.ErrInvalidOption) {
		t.Fatalf("Go on a misconfigured group = %v", err)
	}
	if err := g2.Wait(); !errors.Is(err, crew.ErrInvalidOption) {
		t.Fatalf("Wait on a misconfigured group = %v", err)
	}
	g3, _ := crew.NewGroup(context.Background(), newPool(t))
	if err := g3.Go(nil); !errors.Is(err, crew.ErrNilFunc) || !errors.Is(g3.Wait(), crew.ErrNilFunc) {
		t.Fatalf("Go(nil) = %v", err)
	}
}

func TestGroupLimitBoundsParallelism(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(8))
		g, _ := crew.NewGroup(context.Background(), p, crew.Limit(3))
		var gauge gauge
		for range 40 {
			err := g.Go(func() error {
				gauge.enter()
				defer gauge.leave()
				time.Sleep(time.Millisecond)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		if gauge.peak.Load() != 3 {
			t.Fatalf("peak %d, limit 3", gauge.peak.Load())
		}
		// TryGo reports the limit as a full queue.
		g2, _ := crew.NewGroup(context.Background(), p, crew.Limit(1))
		_ = g2.Go(func() error { time.Sleep(time.Second); return nil })
		if err := g2.TryGo(func() error { return nil }); !errors.Is(err, crew.ErrQueueFull) {
			t.Fatalf("TryGo over the limit = %v", err)
		}
		_ = g2.Wait()
	})
}

func TestResultsInSubmissionOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(4))
		r, _ := crew.NewResults[int](context.Background(), p, crew.JoinErrors())
		bad := errors.New("bad")
		for i := range 200 {
			_ = r.Go(func(context.Context) (int, error) {
				time.Sleep(time.Duration(200-i) * time.Microsecond) // finish in reverse
				if i == 7 {
					return 0, bad
				}
				if i == 9 {
					panic("nine")
				}
				return i * i, nil
			})
		}
		got, err := r.Wait()
		if !errors.Is(err, bad) {
			t.Fatalf("Wait error = %v", err)
		}
		errs := r.Errors()
		for i, v := range got {
			want := i * i
			if i == 7 || i == 9 {
				want = 0
			}
			if v != want {
				t.Fatalf("value %d = %d, want %d", i, v, want)
			}
			var pe *crew.PanicError
			switch {
			case i == 7 && errs[i] != bad, i == 9 && !errors.As(errs[i], &pe), i != 7 && i != 9 && errs[i] != nil:
				t.Fatalf("error %d = %v", i, errs[i])
			}
		}
	})
}

func TestMapForEachAndSeqs(t *testing.T) {
	p := newPool(t, crew.WithWorkers(4))
	ctx := context.Background()
	in := make([]int, 1000)
	for i := range in {
		in[i] = i
	}
	square := func(_ context.Context, v int) (int, error) { return v * v, nil }
	out, err := crew.Map(ctx, p, in, square, crew.Limit(7))
	if err != nil {
		t.Fatal(err)
	}
	seqOut, err := crew.MapSeq(ctx, p, slices.Values(in), square)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if out[i] != i*i || seqOut[i] != i*i {
			t.Fatalf("Map[%d] = %d, MapSeq = %d", i, out[i], seqOut[i])
		}
	}
	var sum atomic.Int64
	if err := crew.ForEach(ctx, p, in, func(_ context.Context, v int) error { sum.Add(int64(v)); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := crew.ForEachSeq(ctx, p, slices.Values(in), func(_ context.Context, v int) error { sum.Add(int64(v)); return nil }); err != nil {
		t.Fatal(err)
	}
	if sum.Load() != 2*999*1000/2 {
		t.Fatalf("sum %d", sum.Load())
	}
	if _, err := crew.Map[int, int](ctx, p, in, nil); !errors.Is(err, crew.ErrNilFunc) {
		t.Fatalf("Map(nil) = %v", err)
	}
}

func TestMapStopsAtFirstError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(1))
		var calls atomic.Int64
		in := make([]int, 100)
		bad := errors.New("bad")
		_, err := crew.Map(context.Background(), p, in, func(ctx context.Context, _ int) (int, error) {
			if calls.Add(1) == 3 {
				return 0, bad
			}
			return 1, nil
		})
		var ie *crew.IndexError
		if !errors.Is(err, bad) || !errors.As(err, &ie) || ie.Index != 2 || calls.Load() != 3 {
			t.Fatalf("Map = %v after %d calls", err, calls.Load())
		}
	})
}

func TestStreamDeliversInOrderAsSoonAsReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(4))
		var mu sync.Mutex
		var got []string
		s, _ := crew.NewStream(context.Background(), p, func(v string, err error) {
			mu.Lock()
			got = append(got, fmt.Sprintf("%v:%v", v, err))
			mu.Unlock()
		})
		delays := []time.Duration{3, 1, 2, 5, 4}
		for i, d := range delays {
			_ = s.Go(func(context.Context) (string, error) {
				time.Sleep(d * time.Second)
				return fmt.Sprint(i), nil
			})
		}
		time.Sleep(3*time.Second + time.Millisecond)
		synctest.Wait()
		mu.Lock()
		if fmt.Sprint(got) != "[0:<nil> 1:<nil> 2:<nil>]" {
			t.Fatalf("after 3s: %v", got) // 0, 1 and 2 are done; 3 is not
		}
		mu.Unlock()
		if err := s.Wait(); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != "[0:<nil> 1:<nil> 2:<nil> 3:<nil> 4:<nil>]" {
			t.Fatalf("all: %v", got)
		}
	})
}

func TestStreamHandsOverUnrunTasksWithCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(1))
		var got []string
		s, _ := crew.NewStream(context.Background(), p, func(v int, err error) { got = append(got, fmt.Sprintf("%v:%v", v, err)) })
		bad := errors.New("bad")
		_ = s.Go(func(context.Context) (int, error) { return 1, nil })
		_ = s.Go(func(context.Context) (int, error) { return 0, bad })
		_ = s.Go(func(context.Context) (int, error) { return 3, nil })
		if err := s.Wait(); err != bad {
			t.Fatalf("Wait = %v", err)
		}
		if fmt.Sprint(got) != "[1:<nil> 0:bad 0:bad]" {
			t.Fatalf("delivered %v", got)
		}
	})
}

// TestStreamWaitReturnsWhenCallbackFails: a callback that panics or calls
// runtime.Goexit on a worker fails that task; Wait still hands over the rest
// and returns, rather than spin for an emitter that is gone.
func TestStreamWaitReturnsWhenCallbackFails(t *testing.T) {
	for name, fail := range map[string]func(){
		"panic":  func() { panic("each") },
		"Goexit": runtime.Goexit,
	} {
		t.Run(name, func(t *testing.T) {
			p := newPool(t, crew.WithWorkers(2))
			var calls atomic.Int64
			s, _ := crew.NewStream(t.Context(), p, func(int, error) {
				if calls.Add(1) == 1 {
					fail()
				}
			}, crew.JoinErrors())
			for i := range 5 {
				if err := s.Go(func(context.Context) (int, error) { return i, nil }, crew.Named(fmt.Sprint("item", i))); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan error, 1)
			go func() { done <- s.Wait() }()
			select {
			case err := <-done:
				var pe *crew.PanicError
				if name == "panic" && (!errors.As(err, &pe) || pe.Value != "each" || !strings.HasPrefix(pe.Task, "item")) {
					t.Fatalf("Wait = %v, want the callback's panic, named", err)
				}
				if name == "Goexit" && !errors.Is(err, crew.ErrGoexit) {
					t.Fatalf("Wait = %v, want ErrGoexit", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Wait did not return")
			}
			if calls.Load() != 5 {
				t.Fatalf("callback called %d times, want 5", calls.Load())
			}
		})
	}
}

// TestGroupLimitRefusesOnceShutdownBegins: invariant 5 for a group at its
// Limit: Go waiting for the limit, a new Go and TryGo all get ErrClosed at
// once when shutdown begins, while a task of the group still runs.
func TestGroupLimitRefusesOnceShutdownBegins(t *testing.T) {
	for _, mode := range []crew.ShutdownMode{crew.Drain, crew.Soft, crew.SoftThenHard, crew.DrainThenHard} {
		t.Run(mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPool(t, crew.WithWorkers(2))
				g, _ := crew.NewGroup(t.Context(), p, crew.Limit(1))
				gate := newGate()
				if err := g.Go(func() error { gate.short(); return nil }); err != nil {
					t.Fatal(err)
				}
				gate.waitStarted(t, 1)
				blocked := make(chan error, 1)
				go func() { blocked <- g.Go(func() error { return nil }) }()
				synctest.Wait()
				stopped := make(chan error, 1)
				go func() { stopped <- p.Shutdown(context.Background(), mode) }()
				synctest.Wait()
				select {
				case err := <-blocked:
					if !errors.Is(err, crew.ErrClosed) {
						t.Fatalf("Go waiting for the limit = %v, want ErrClosed", err)
					}
				default:
					t.Fatal("Go waiting for the limit still waits after shutdown began")
				}
				if err := g.TryGo(func() error { return nil }); !errors.Is(err, crew.ErrClosed) {
					t.Fatalf("TryGo = %v, want ErrClosed", err)
				}
				gate.open()
				if err := <-stopped; err != nil {
					t.Fatal(err)
				}
				if err := g.Wait(); !errors.Is(err, crew.ErrClosed) {
					t.Fatalf("Wait = %v, want the recorded ErrClosed", err)
				}
			})
		})
	}
}

// TestGroupWaitAfterHardStopWaitsForItsFunctions: a hard stop cancels a
// group, but Wait still returns only once the group's functions have
// returned (as errgroup's does), so that no function of a Map writes its
// result after Map has returned. Task handles, by contrast, are released
// at once.
func TestGroupWaitAfterHardStopWaitsForItsFunctions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(2), crew.WithStopGrace(time.Hour))
		g, gctx := crew.NewGroup(t.Context(), p)
		gate := newGate()
		if err := g.Go(func() error { gate.short(); return nil }); err != nil {
			t.Fatal(err)
		}
		gate.waitStarted(t, 1)
		go func() { _ = p.Close() }()
		synctest.Wait()
		if !errors.Is(context.Cause(gctx), crew.ErrCanceled) {
			t.Fatalf("group context after a hard stop: %v", context.Cause(gctx))
		}
		waited := make(chan error, 1)
		go func() { waited <- g.Wait() }()
		synctest.Wait()
		select {
		case err := <-waited:
			t.Fatalf("Wait returned %v while a function of the group ran", err)
		default:
		}
		gate.open()
		if err := <-waited; err != nil {
			t.Fatalf("Wait = %v, want the function's nil", err)
		}
	})
}

// TestEveryKindOfTaskCarriesItsName: Named reaches the *PanicError of a
// group, Results and Stream task, once wrapped (never a panic inside a
// panic), and Results.Errors agrees with Wait.
func TestEveryKindOfTaskCarriesItsName(t *testing.T) {
	p := newPool(t, crew.WithWorkers(2))
	check := func(kind string, err error) {
		t.Helper()
		var pe *crew.PanicError
		if !errors.As(err, &pe) || pe.Task != kind || pe.Value != "boom" {
			t.Errorf("%s: %v, want a panic named %q with value boom", kind, err, kind)
			return
		}
		if strings.Count(err.Error(), "panicked") != 1 {
			t.Errorf("%s: wrapped twice: %v", kind, err)
		}
	}
	g, _ := crew.NewGroup(t.Context(), p)
	_ = g.Go(func() error { panic("boom") }, crew.Named("group"))
	check("group", g.Wait())

	r, _ := crew.NewResults[int](t.Context(), p)
	_ = r.Go(func(context.Context) (int, error) { panic("boom") }, crew.Named("results"))
	_, err := r.Wait()
	check("results", err)
	check("results", r.Errors()[0])

	s, _ := crew.NewStream(t.Context(), p, func(int, error) {})
	_ = s.Go(func(context.Context) (int, error) { panic("boom") }, crew.Named("stream"))
	check("stream", s.Wait())
}

// TestMapErrorsSayWhichElement: every element's error, a panic included,
// is an *IndexError with its position, and JoinErrors returns them in
// input order, whatever order they finished in.
func TestMapErrorsSayWhichElement(t *testing.T) {
	p := newPool(t, crew.WithWorkers(4))
	in := make([]int, 101)
	for i := range in {
		in[i] = i
	}
	_, err := crew.Map(t.Context(), p, in, func(_ context.Context, n int) (int, error) {
		if n == 50 {
			panic("fifty")
		}
		time.Sleep(time.Duration(100-n) * time.Microsecond) // later elements finish first
		return 0, fmt.Errorf("element %d failed", n)
	}, crew.JoinErrors())
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Map = %v, want joined errors", err)
	}
	errs := joined.Unwrap()
	if len(errs) != 101 {
		t.Fatalf("%d errors, want 101", len(errs))
	}
	for i, e := range errs {
		var ie *crew.IndexError
		if !errors.As(e, &ie) || ie.Index != i {
			t.Fatalf("error %d: %v, want an IndexError for element %d", i, e, i)
		}
	}
	var pe *crew.PanicError
	if !errors.As(errs[50], &pe) || pe.Value != "fifty" {
		t.Fatalf("element 50: %v, want its panic", errs[50])
	}
	// The caller's share and each runner are the pool's tasks, not the
	// elements: the one whose elements include the panic counts as panicked.
	// Map returns once every element is done; a runner that found nothing
	// left may still be ending its task, and is counted a moment later.
	s := p.Stats()
	for deadline := time.Now().Add(10 * time.Second); s.InFlight() != 0 && time.Now().Before(deadline); s = p.Stats() {
		time.Sleep(time.Millisecond)
	}
	if s.Panicked != 1 || s.Failed < 1 || s.InFlight() != 0 {
		t.Fatalf("counted %d panicked and %d failed, want 1 and some: %v", s.Panicked, s.Failed, s)
	}
	// First-error mode: the error still says where.
	err = crew.ForEach(t.Context(), p, in, func(_ context.Context, n int) error {
		if n == 7 {
			return errors.New("seven")
		}
		return nil
	})
	var ie *crew.IndexError
	if !errors.As(err, &ie) || ie.Index != 7 {
		t.Fatalf("ForEach = %v, want element 7", err)
	}
	seq := func(yield func(int) bool) {
		for _, n := range in[:10] {
			if !yield(n) {
				return
			}
		}
	}
	_, err = crew.MapSeq(t.Context(), p, seq, func(_ context.Context, n int) (int, error) {
		if n == 3 {
			panic("three")
		}
		return n, nil
	})
	if !errors.As(err, &ie) || ie.Index != 3 || !errors.As(err, &pe) || pe.Value != "three" {
		t.Fatalf("MapSeq = %v, want element 3's panic", err)
	}
}

// TestLimitAboveBoundIsLogged: a group's Limit above its pool's bound
// cannot raise parallelism; the pool's logger says so, once.
func TestLimitAboveBoundIsLogged(t *testing.T) {
	var buf syncBuffer
	p := newPool(t, crew.WithWorkers(2), crew.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
	for range 3 {
		_, _ = crew.NewGroup(t.Context(), p, crew.Limit(50))
	}
	_, _ = crew.NewGroup(t.Context(), p, crew.Limit(2))
	var warned int
	for _, r := range buf.records(t) {
		if strings.HasPrefix(r["msg"].(string), "crew: group limit above") && r["limit"] == float64(50) && r["bound"] == float64(2) {
			warned++
		}
	}
	if warned != 1 {
		t.Fatalf("warned %d times, want once", warned)
	}
}

// TestNameTasksNamesMapTasks: NameTasks names every task of a Map in the
// observer and in a panic's error; Named on a task still wins in a group.
func TestNameTasksNamesMapTasks(t *testing.T) {
	var mu sync.Mutex
	names := map[string]int{}
	p := newPool(t, crew.WithObserver(func(o crew.Observation) {
		mu.Lock()
		names[o.Name]++
		mu.Unlock()
	}))
	_, err := crew.Map(t.Context(), p, []int{1, 2, 3}, func(_ context.Context, n int) (int, error) {
		if n == 3 {
			panic("three")
		}
		return n, nil
	}, crew.NameTasks("square"), crew.JoinErrors())
	var pe *crew.PanicError
	if !errors.As(err, &pe) || pe.Task != "square" {
		t.Fatalf("Map = %v, want a panic of task square", err)
	}
	g, _ := crew.NewGroup(t.Context(), p, crew.NameTasks("default"))
	_ = g.Go(func() error { return nil }, crew.Named("own"))
	_ = g.Go(func() error { return nil })
	_ = g.Wait()
	_ = p.Shutdown(t.Context(), crew.Drain)
	mu.Lock()
	defer mu.Unlock()
	if names["square"] < 1 || names["own"] != 1 || names["default"] != 1 || len(names) != 3 {
		t.Fatalf("observed names %v", names)
	}
}
