package crew_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crew-go/crew"
)

func TestTimeoutReleasesWaiterAtDeadlineAndHoldsWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(1))
		g := newGate()
		var sawDeadline atomic.Bool
		var ctxErr atomic.Value
		task := submit(t, p, func(ctx context.Context) error {
			d, ok := ctx.Deadline()
			sawDeadline.Store(ok && d.Equal(time.Now().Add(time.Second)))
			<-ctx.Done()
			ctxErr.Store(ctx.Err())
			return g.ignore(ctx) // keeps going after the timeout
		}, crew.Timeout(time.Second), crew.Named("slow"))
		start := time.Now()
		if err := task.Wait(); !errors.Is(err, crew.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait = %v", err)
		}
		if time.Since(start) != time.Second || task.State() != crew.TimedOut {
			t.Fatalf("released after %v in %v", time.Since(start), task.State())
		}
		g.waitStarted(t, 1)
		if !sawDeadline.Load() || ctxErr.Load() != context.DeadlineExceeded {
			t.Fatalf("task context: deadline %v, err %v", sawDeadline.Load(), ctxErr.Load())
		}
		// The function has not returned: its worker is still taken and the
		// next task waits (invariant 2).
		next := submit(t, p, func(context.Context) error { return nil })
		synctest.Wait()
		if s := p.Stats(); s.Busy != 1 || next.State() != crew.Queued {
			t.Fatalf("worker freed by the timeout: %+v, next %v", s, next.State())
		}
		g.open() // the late return is harmless
		if err := next.Wait(); err != nil {
			t.Fatal(err)
		}
		if task.State() != crew.TimedOut {
			t.Fatalf("late return changed the state to %v", task.State())
		}
		if err := p.Shutdown(context.Background(), crew.Drain); err != nil {
			t.Fatal(err)
		}
		if s := checkCounts(t, p); s.TimedOut != 1 || s.Succeeded != 1 {
			t.Fatalf("counts: %+v", s)
		}
	})
}

func TestPoolDefaultTaskTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(2), crew.WithTaskTimeout(time.Minute))
		wait := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
		dflt := submit(t, p, wait)
		own := submit(t, p, wait, crew.Timeout(time.Second))
		start := time.Now()
		if err := own.Wait(); !errors.Is(err, crew.ErrTimeout) || time.Since(start) != time.Second {
			t.Fatalf("own timeout: %v after %v", err, time.Since(start))
		}
		if err := dflt.Wait(); !errors.Is(err, crew.ErrTimeout) || time.Since(start) != time.Minute {
			t.Fatalf("default timeout: %v after %v", err, time.Since(start))
		}
	})
}

func TestTimerIsReusedWithoutStaleFires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, crew.WithWorkers(1))
		// Alternate tasks that finish just before and just after their
		// timeouts on one worker; a stale timer fire would time out the
		// wrong task.
		for i := range 50 {
			d := time.Duration(i%2) * 2 * time.Millisecond
			task := submit(t, p, func(context.Context) error { time.Sleep(time.Millisecond + d); return nil }, crew.Timeout(2*time.Millisecond))
			err := task.Wait()
			if i%2 == 0 && err != nil || i%2 == 1 && !errors.Is(err, crew.ErrTimeout) {
				t.Fatalf("task %d: %v", i, err)
			}
		}
	})
}

// TestBoundHoldsWithTimedOutTasks checks invariant 2: tasks that time out
// but keep running still count against the bound.
func TestBoundHoldsWithTimedOutTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const bound = 3
		p := newPool(t, crew.WithWorkers(bound))
		var gauge gauge
		tasks := make([]*crew.Task, 30)
		for i := range tasks {
			tasks[i] = submit(t, p, func(ctx context.Context) error {
				gauge.enter()
				defer gauge.leave()
				<-ctx.Done()
				time.Sleep(time.Second) // ignores the timeout for a while
				return nil
			}, crew.Timeout(time.Millisecond))
		}
		for _, task := range tasks {
			if err := task.Wait(); !errors.Is(err, crew.ErrTimeout) {
				t.Fatal(err)
			}
		}
		if err := p.Shutdown(context.Background(), crew.Drain); err != nil {
			t.Fatal(err)
		}
		if gauge.peak.Load() != bound {
			t.Fatalf("peak %d task functions running, bound %d", gauge.peak.Load(), bound)
		}
	})
}

// TestLongTimeoutDeadlineSaturates: a timeout so long that start plus
// timeout overflows gives a deadline centuries ahead, not in the past
// (which made a net.Dialer in the task fail at once).
func TestLongTimeoutDeadlineSaturates(t *testing.T) {
	p := newPool(t)
	for _, d := range []time.Duration{math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 / 2, 100 * 365 * 24 * time.Hour} {
		task := submit(t, p, func(ctx context.Context) error {
			dl, ok := ctx.Deadline()
			if !ok || dl.Before(time.Now().Add(99*365*24*time.Hour)) {
				return fmt.Errorf("deadline %v (%v) for a timeout of %v", dl, ok, d)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil
		}, crew.Timeout(d))
		if err := task.Wait(); err != nil {
			t.Fatal(err)
		}
	}
}
