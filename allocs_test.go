package crew_test

import (
	"context"
	"sync"
	"testing"

	"github.com/crew-go/crew"
)

// TestAllocations pins the allocation costs the package documents: a short
// task none, a long task one (its handle and context), a group task none,
// a typed result one. Steady state: workers started, channels made.
func TestAllocations(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage counters allocate")
	}
	p := newPool(t, crew.WithWorkers(2))
	ctx := context.Background()
	var wg sync.WaitGroup
	short := func() { wg.Done() }
	long := func(context.Context) error { return nil }
	for _, tc := range []struct {
		name string
		max  float64
		run  func()
	}{
		{"Go", 0, func() {
			wg.Add(1)
			_ = p.Go(short, crew.Named("short"))
			wg.Wait()
		}},
		{"Submit", 1, func() {
			task, _ := p.Submit(ctx, long, crew.Named("long"))
			_ = task.Wait()
		}},
		{"Submit with Timeout", 1, func() {
			task, _ := p.Submit(ctx, long, crew.Timeout(1e9))
			_ = task.Wait()
		}},
	} {
		tc.run() // warm up: workers, timers
		if got := testing.AllocsPerRun(200, tc.run); got > tc.max {
			t.Errorf("%s: %.2f allocations per task, want <= %v", tc.name, got, tc.max)
		}
	}

	g, _ := crew.NewGroup(ctx, p)
	groupTask := func() error { return nil }
	_ = g.Go(groupTask)
	if got := testing.AllocsPerRun(1000, func() { _ = g.Go(groupTask) }); got > 0 {
		t.Errorf("Group.Go: %.2f allocations per task, want 0", got)
	}
	_ = g.Wait()

	r, _ := crew.NewResults[int](ctx, p)
	resultTask := func(context.Context) (int, error) { return 1, nil }
	_ = r.Go(resultTask)
	if got := testing.AllocsPerRun(1000, func() { _ = r.Go(resultTask) }); got > 1 {
		t.Errorf("Results.Go: %.2f allocations per task, want <= 1", got)
	}
	_, _ = r.Wait()
}

// TestSplitAllocations: a ForEach or Map costs a fixed few allocations per
// call, whatever the number of elements (the split with its group in one,
// the runners' queue items none), and the group reaches its Map through a
// small interface that must not add one per runner.
func TestSplitAllocations(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage counters allocate")
	}
	p := newPool(t, crew.WithWorkers(2))
	ctx := context.Background()
	for _, n := range []int{1, 64, 4096} {
		in := make([]int, n)
		each := func(context.Context, int) error { return nil }
		_ = crew.ForEach(ctx, p, in, each)
		if got := testing.AllocsPerRun(200, func() { _ = crew.ForEach(ctx, p, in, each) }); got > splitAllocs {
			t.Errorf("ForEach over %d elements: %.2f allocations per call, want <= %d", n, got, splitAllocs)
		}
	}
}

// splitAllocs is what a ForEach call allocates: measured, then pinned.
const splitAllocs = 4
