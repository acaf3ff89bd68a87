package crew_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crew-go/crew"
	"go.uber.org/goleak"
)

// TestShutdownModes sets up, for each mode, one worker running a task that
// honours its context, one running a task that ignores it until released,
// and queued long and short tasks, then checks the shutdown table and
// invariants 1, 3, 5, 6 and 8.
func TestShutdownModes(t *testing.T) {
	for _, tc := range []struct {
		mode     crew.ShutdownMode
		deadline time.Duration // 0: no deadline
		// what the caller sees
		wantErr error
		// what happens to the honouring running task, the queued tasks
		honouring, queued crew.State
		queuedRan         bool
	}{
		{mode: crew.Drain, wantErr: nil, honouring: crew.Succeeded, queued: crew.Succeeded, queuedRan: true},
		{mode: crew.Soft, wantErr: nil, honouring: crew.Succeeded, queued: crew.Dropped},
		// Both workers stay busy, so draining runs nothing before the stop
		// turns hard, half-way to the deadline (the stop grace is longer).
		{mode: crew.DrainThenHard, deadline: time.Minute, wantErr: crew.ErrStuck, honouring: crew.Canceled, queued: crew.Dropped},
		{mode: crew.SoftThenHard, deadline: time.Minute, wantErr: crew.ErrStuck, honouring: crew.Canceled, queued: crew.Dropped},
		{mode: crew.Hard, wantErr: nil, honouring: crew.Canceled, queued: crew.Dropped},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPool(t, crew.WithWorkers(2), crew.WithStopGrace(time.Hour))
				g := newGate()
				honouring := submit(t, p, g.honour, crew.Named("honouring"))
				ignoring := submit(t, p, g.ignore, crew.Named("ignoring"))
				g.waitStarted(t, 2)
				var queuedRan atomic.Int64
				queued := make([]*crew.Task, 3)
				for i := range queued {
					queued[i] = submit(t, p, func(context.Context) error { queuedRan.Add(1); return nil })
				}
				for range 3 {
					if err := p.Go(func() { queuedRan.Add(1) }); err != nil {
						t.Fatal(err)
					}
				}

				ctx := context.Background()
				if tc.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.deadline)
					defer cancel()
				}
				result := make(chan error, 1)
				start := time.Now()
				go func() { result <- p.Shutdown(ctx, tc.mode) }()
				synctest.Wait()

				// Invariant 5: any call after shutdown began fails at once.
				if err := p.Go(func() {}); !errors.Is(err, crew.ErrClosed) {
					t.Errorf("Go after shutdown = %v", err)
				}
				if _, err := p.TrySubmit(g.ignore); !errors.Is(err, crew.ErrClosed) {
					t.Errorf("TrySubmit after shutdown = %v", err)
				}
				for name, call := range map[string]func() error{"Pause": p.Pause, "Resume": p.Resume, "Resize": func() error { return p.Resize(3) }} {
					if err := call(); !errors.Is(err, crew.ErrClosed) {
						t.Errorf("%s after shutdown = %v", name, err)
					}
				}

				// Running tasks finish (drain, soft) or are cancelled at once
				// (hard) or before the deadline (then-hard); in every mode the
				// ignoring task holds its worker until released.
				hard := func() {
					t.Helper()
					if honouring.State() != crew.Canceled || ignoring.State() != crew.Canceled {
						t.Fatalf("after hard stop: %v, %v", honouring.State(), ignoring.State())
					}
					if !errors.Is(ignoring.Err(), crew.ErrCanceled) || !errors.Is(ignoring.Err(), context.Canceled) {
						t.Fatalf("cancelled task error: %v", ignoring.Err())
					}
					if s := p.Stats(); s.Busy != 1 {
						t.Fatalf("ignoring task's worker freed before its function returned: %+v", s)
					}
					select {
					case err := <-result:
						t.Fatalf("Shutdown returned %v while a function still ran", err)
					default:
					}
				}
				var err error
				switch tc.mode {
				case crew.Drain, crew.Soft:
					g.open()
					err = <-result
				case crew.Hard:
					hard()
					g.open()
					err = <-result
				default:
					time.Sleep(tc.deadline/2 - time.Millisecond)
					synctest.Wait()
					if honouring.State() != crew.Running {
						t.Fatalf("turned hard before half-way: %v", honouring.State())
					}
					time.Sleep(time.Millisecond)
					synctest.Wait()
					hard()
					// Invariant 8: Shutdown returns by its deadline, naming
					// the function that ignores cancellation.
					err = <-result
					if time.Since(start) != tc.deadline {
						t.Errorf("Shutdown took %v, want the deadline %v", time.Since(start), tc.deadline)
					}
					if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `"ignoring"`) {
						t.Errorf("Shutdown at the deadline = %v", err)
					}
					g.open()
					if err := p.Shutdown(context.Background(), tc.mode); err != nil {
						t.Errorf("Shutdown once the function returned = %v", err)
					}
				}
				if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
					t.Fatalf("Shutdown = %v, want %v", err, tc.wantErr)
				}

				// Invariant 1: every accepted task is terminal, its waiter released.
				if got := honouring.State(); got != tc.honouring {
					t.Errorf("honouring task: %v, want %v", got, tc.honouring)
				}
				for _, q := range queued {
					if got := q.State(); got != tc.queued {
						t.Errorf("queued task: %v, want %v", got, tc.queued)
					}
					if tc.queued == crew.Dropped && !errors.Is(q.Wait(), crew.ErrNotRun) {
						t.Errorf("queued task error: %v", q.Wait())
					}
				}
				if ran := queuedRan.Load() > 0; ran != tc.queuedRan {
					t.Errorf("queued tasks ran: %v, want %v", ran, tc.queuedRan)
				}
				// Invariant 6.
				s := checkCounts(t, p)
				// Six dropped from the queue, two refused after shutdown.
				if tc.queued == crew.Dropped && (s.Dropped != 6 || s.Rejected != 2) || s.Submitted != 10 {
					t.Errorf("dropped %d and rejected %d of %d, want 6 and 2 of 10: %+v", s.Dropped, s.Rejected, s.Submitted, s)
				}
				// Invariant 3: Shutdown returned, no goroutine of crew's left;
				// and calling it again is harmless.
				if err := p.Shutdown(context.Background(), tc.mode); err != nil && tc.wantErr == nil {
					t.Errorf("second Shutdown = %v", err)
				}
				if err := p.Close(); err != nil {
					t.Errorf("Close after Shutdown = %v", err)
				}
			})
			goleak.VerifyNone(t)
		})
	}
}

func TestDrainResumesPausedPool(t *testing.T) {
	p := newPool(t, crew.WithWorkers(2))
	_ = p.Pause()
	tasks := make([]*crew.Task, 10)
	for i := range tasks {
		tasks[i] = submit(t, p, func(context.Context) error { return nil })
	}
	if err := p.Shutdown(context.Background(), crew.Drain); err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if task.State() != crew.Succeeded {
			t.Fatalf("drained task: %v", task.State())
		}
	}
	checkCounts(t, p)
}

func TestSoftShutdownDeadlineReturnsAndWorkGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(1))
		g := newGate()
		running := submit(t, p, g.ignore)
		g.waitStarted(t, 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := p.Shutdown(ctx, crew.Soft); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v", err)
		}
		if running.State() != crew.Running {
			t.Fatalf("soft deadline touched the running task: %v", running.State())
		}
		g.open()
		if err := p.Shutdown(context.Background(), crew.Soft); err != nil {
			t.Fatal(err)
		}
		if running.State() != crew.Succeeded {
			t.Fatalf("running task: %v", running.State())
		}
	})
}

func TestCloseReportsTasksIgnoringCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(2), crew.WithStopGrace(5*time.Second))
		g := newGate()
		stuck := submit(t, p, g.ignore, crew.Named("stubborn"))
		g.waitStarted(t, 1)
		start := time.Now()
		err := p.Close()
		if !errors.Is(err, crew.ErrStuck) || !strings.Contains(err.Error(), `"stubborn"`) {
			t.Fatalf("Close = %v", err)
		}
		if time.Since(start) != 5*time.Second {
			t.Fatalf("Close waited %v, want the stop grace", time.Since(start))
		}
		if !errors.Is(stuck.Wait(), crew.ErrCanceled) {
			t.Fatalf("stuck task: %v", stuck.Err())
		}
		g.open()
		if err := p.Shutdown(context.Background(), crew.Hard); err != nil {
			t.Fatalf("Shutdown once the function returned = %v", err)
		}
		checkCounts(t, p)
	})
}

func TestPoolContextEndIsHardStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		p := newPool(t, crew.WithWorkers(1), crew.WithContext(ctx))
		g := newGate()
		running := submit(t, p, g.honour)
		g.waitStarted(t, 1)
		queued := submit(t, p, g.honour)
		cancel()
		if err := running.Wait(); !errors.Is(err, crew.ErrCanceled) {
			t.Fatalf("running task = %v", err)
		}
		if err := queued.Wait(); !errors.Is(err, crew.ErrNotRun) {
			t.Fatalf("queued task = %v", err)
		}
		if err := p.Go(func() {}); !errors.Is(err, crew.ErrClosed) {
			t.Fatalf("Go after the pool's context ended = %v", err)
		}
		if err := p.Shutdown(context.Background(), crew.Drain); err != nil {
			t.Fatal(err)
		}
		checkCounts(t, p)
	})
}

func TestConcurrentShutdownsAndCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(4), crew.WithStopGrace(time.Second))
		g := newGate()
		for range 4 {
			submit(t, p, g.honour)
		}
		g.waitStarted(t, 4)
		errs := make(chan error, 8)
		for _, m := range []crew.ShutdownMode{crew.Drain, crew.Soft, crew.SoftThenHard, crew.Hard} {
			go func() { errs <- p.Shutdown(context.Background(), m) }()
			go func() { errs <- p.Close() }()
		}
		for range 8 {
			if err := <-errs; err != nil {
				t.Errorf("concurrent stop = %v", err)
			}
		}
		checkCounts(t, p)
	})
}

// TestCancelledStateWinsOverHonouringReturn: a task that returns as soon as
// its context ends must still be reported as cancelled (hard stop) or timed
// out, never as failed with ctx.Err(). The finisher settles the state before
// it cancels the context.
func TestCancelledStateWinsOverHonouringReturn(t *testing.T) {
	honour := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	for range 200 {
		p, _ := crew.New(crew.WithWorkers(2))
		started := make(chan struct{})
		running := submit(t, p, func(ctx context.Context) error { close(started); return honour(ctx) })
		timed := submit(t, p, honour, crew.Timeout(time.Microsecond))
		<-started
		if err := timed.Wait(); timed.State() != crew.TimedOut {
			t.Fatalf("timed-out task: %v, %v", timed.State(), err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if running.State() != crew.Canceled || !errors.Is(running.Err(), crew.ErrCanceled) {
			t.Fatalf("hard-stopped task: %v, %v", running.State(), running.Err())
		}
	}
}

// TestHardStopWithEndedContext: a context that has already ended asks for
// no wait, yet a pool that has nothing running is not reported stuck, and a
// function that returns at once on cancellation gets the moment it needs;
// only one that ignores cancellation is named, 5 ms later.
func TestHardStopWithEndedContext(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for range 200 { // the false report came about half the time
		p := newPool(t)
		if err := p.Shutdown(ended, crew.Hard); err != nil {
			t.Fatalf("Shutdown(ended, Hard) of an idle pool = %v", err)
		}
	}
	for name, fn := range map[string]func(*gate) func(context.Context) error{
		"honouring": func(g *gate) func(context.Context) error { return g.honour },
		"ignoring":  func(g *gate) func(context.Context) error { return g.ignore },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPool(t, crew.WithWorkers(1))
				g := newGate()
				submit(t, p, fn(g), crew.Named(name))
				g.waitStarted(t, 1)
				start := time.Now()
				err := p.Shutdown(ended, crew.Hard)
				if name == "honouring" {
					if err != nil || time.Since(start) != 0 {
						t.Fatalf("Shutdown = %v after %v, want nil at once", err, time.Since(start))
					}
					return
				}
				if !errors.Is(err, crew.ErrStuck) || !errors.Is(err, context.Canceled) || time.Since(start) != 5*time.Millisecond {
					t.Fatalf("Shutdown = %v after %v, want ErrStuck after 5ms", err, time.Since(start))
				}
				g.open()
				if err := p.Shutdown(context.Background(), crew.Hard); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// TestShutdownReturnsByItsDeadline is invariant 8: with a function that
// ignores cancellation, every mode returns by the deadline (a Drain or
// Soft wait with the context's error, the others with the stuck report),
// and without a deadline a hard stop gives up after the stop grace.
func TestShutdownReturnsByItsDeadline(t *testing.T) {
	for _, mode := range []crew.ShutdownMode{crew.Drain, crew.Soft, crew.DrainThenHard, crew.SoftThenHard, crew.Hard} {
		for _, grace := range []time.Duration{time.Second, time.Hour} {
			t.Run(fmt.Sprintf("%v/grace=%v", mode, grace), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					p := newPool(t, crew.WithWorkers(1), crew.WithStopGrace(grace))
					g := newGate()
					defer g.open()
					submit(t, p, g.ignore, crew.Named("sleeper"))
					g.waitStarted(t, 1)
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					start := time.Now()
					err := p.Shutdown(ctx, mode)
					if d := time.Since(start); d != 10*time.Second {
						t.Fatalf("Shutdown returned after %v, want the 10s deadline", d)
					}
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("Shutdown = %v", err)
					}
					if stuck := errors.Is(err, crew.ErrStuck); stuck != (mode != crew.Drain && mode != crew.Soft) || stuck && !strings.Contains(err.Error(), `"sleeper"`) {
						t.Fatalf("Shutdown = %v", err)
					}
				})
			})
		}
	}
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(1), crew.WithStopGrace(3*time.Second))
		g := newGate()
		defer g.open()
		submit(t, p, g.ignore)
		g.waitStarted(t, 1)
		start := time.Now()
		if err := p.Close(); !errors.Is(err, crew.ErrStuck) || time.Since(start) != 3*time.Second {
			t.Fatalf("Close = %v after %v, want ErrStuck after the 3s grace", err, time.Since(start))
		}
	})
}

// TestShutdownFromOwnTaskDoesNotWaitForItself: Shutdown or Close called by
// a function running on the pool begins the stop and returns
// ErrCalledFromTask at once; the pool terminates once that function
// returns. Called from another pool's task it waits as usual.
func TestShutdownFromOwnTaskDoesNotWaitForItself(t *testing.T) {
	for _, mode := range []crew.ShutdownMode{crew.Drain, crew.Soft, crew.DrainThenHard, crew.Hard, 99} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPool(t, crew.WithWorkers(2))
				var ran atomic.Int64
				inner := make(chan error, 1)
				// Deep in the task's own calls, as real code would be.
				var deep func(int) error
				deep = func(n int) error {
					if n == 0 {
						if mode == 99 {
							return p.Close()
						}
						return p.Shutdown(context.Background(), mode)
					}
					return deep(n - 1)
				}
				if err := p.Go(func() { inner <- deep(200) }); err != nil {
					t.Fatal(err)
				}
				if err := <-inner; !errors.Is(err, crew.ErrCalledFromTask) {
					t.Fatalf("Shutdown from the pool's own task = %v", err)
				}
				if err := p.Go(func() { ran.Add(1) }); !errors.Is(err, crew.ErrClosed) {
					t.Fatalf("Go after the stop began = %v", err)
				}
				if err := p.Shutdown(context.Background(), crew.Drain); err != nil {
					t.Fatalf("Shutdown from outside = %v", err)
				}
			})
		})
	}
	synctest.Test(t, func(t *testing.T) {
		a, b := newPool(t), newPool(t)
		if err := b.Go(func() {}); err != nil {
			t.Fatal(err)
		}
		task := submit(t, a, func(context.Context) error { return b.Shutdown(context.Background(), crew.Drain) })
		if err := task.Wait(); err != nil {
			t.Fatalf("another pool's Shutdown from a task = %v", err)
		}
	})
}
