package crew

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
)

// TestSpinAfterARunner: a worker that ran a runner of a ForEach looks for
// the next call's runner runnerSpinRounds times before it parks; after a
// plain task, spinRounds times.
func TestSpinAfterARunner(t *testing.T) {
	var yields atomic.Int64
	spinYield = func() { yields.Add(1); runtime.Gosched() }
	defer func() { spinYield = runtime.Gosched }()
	p, err := New(WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background(), Drain)
	// idle runs f, waits until every worker has parked and returns the
	// yields of the spins on the way.
	idle := func(f func()) int64 {
		yields.Store(0)
		f()
		for int64(p.workers.parked.Load()) < p.workers.alive() {
			runtime.Gosched()
		}
		return yields.Load()
	}
	done := make(chan struct{})
	if n := idle(func() { _ = p.Go(func() { close(done) }); <-done }); n >= runnerSpinRounds {
		t.Fatalf("after a plain task the worker yielded %d times spinning, want fewer than %d", n, runnerSpinRounds)
	}
	// Two elements and two slots: the caller and one runner claim one
	// each, and element 0 waits for element 1, so the runner has run.
	for range 3 {
		met := make(chan struct{})
		n := idle(func() {
			err := ForEach(context.Background(), p, []int{0, 1}, func(_ context.Context, i int) error {
				if i == 0 {
					<-met
				} else {
					close(met)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
		if n < runnerSpinRounds {
			t.Fatalf("after a runner the worker yielded %d times spinning, want at least %d", n, runnerSpinRounds)
		}
	}
}
