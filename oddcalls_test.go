package crew_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew"
)

// TestOddCallsHold: calls in odd orders and with odd values each get their
// documented answer, never a panic or a hang.
func TestOddCallsHold(t *testing.T) {
	p := newPool(t, crew.WithWorkers(2), crew.WithQueueSize(2))
	for _, n := range []int{0, -1, math.MinInt} {
		if err := p.Resize(n); !errors.Is(err, crew.ErrInvalidOption) {
			t.Fatalf("Resize(%d) = %v", n, err)
		}
	}
	if _, err := p.Submit(nil, func(context.Context) error { return nil }); !errors.Is(err, crew.ErrInvalidOption) { //nolint:staticcheck
		t.Fatalf("Submit(nil ctx) = %v", err)
	}
	if err := p.Go(nil); !errors.Is(err, crew.ErrNilFunc) {
		t.Fatalf("Go(nil) = %v", err)
	}
	if _, err := crew.Map[int, int](nil, p, []int{1}, func(context.Context, int) (int, error) { return 0, nil }); !errors.Is(err, crew.ErrInvalidOption) { //nolint:staticcheck
		t.Fatalf("Map(nil ctx) = %v", err)
	}
	if err := p.Shutdown(nil, crew.Drain); !errors.Is(err, crew.ErrInvalidOption) { //nolint:staticcheck
		t.Fatalf("Shutdown(nil ctx) = %v", err)
	}
	if err := p.Shutdown(context.Background(), crew.ShutdownMode(99)); !errors.Is(err, crew.ErrInvalidOption) {
		t.Fatalf("Shutdown(mode 99) = %v", err)
	}

	// Paused: Map queues its runners and waits; TryGo fills the queue;
	// Submit whose ctx ends while waiting for room gives up.
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	mapped := make(chan error, 1)
	go func() {
		_, err := crew.Map(context.Background(), p, []int{1, 2, 3}, func(_ context.Context, v int) (int, error) { return v, nil })
		mapped <- err
	}()
	for p.Stats().Queued < 2 {
		time.Sleep(time.Millisecond)
	}
	if err := p.TryGo(func() {}); !errors.Is(err, crew.ErrQueueFull) {
		t.Fatalf("TryGo on a full queue = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	if _, err := p.Submit(ctx, func(context.Context) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Submit whose ctx ends waiting = %v", err)
	}
	cancel()
	if err := p.Resize(math.MaxInt); err != nil {
		t.Fatal(err)
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := <-mapped; err != nil {
		t.Fatalf("Map on a paused pool, then resumed: %v", err)
	}

	// Group: Wait from several goroutines, twice, then Go after Wait.
	g, _ := crew.NewGroup(context.Background(), p)
	for range 5 {
		_ = g.Go(func() error { time.Sleep(time.Millisecond); return nil })
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.Wait(); err != nil {
				t.Errorf("Wait = %v", err)
			}
		}()
	}
	wg.Wait()
	if err := g.Wait(); err != nil {
		t.Fatalf("second Wait = %v", err)
	}
	if err := g.Go(func() error { return nil }); err == nil {
		t.Fatalf("Go after Wait accepted")
	}

	// Shutdown twice, then every call refuses.
	if err := p.Shutdown(context.Background(), crew.Drain); err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(context.Background(), crew.Hard); err != nil {
		t.Fatal(err)
	}
	if _, err := crew.Map(context.Background(), p, []int{1}, func(_ context.Context, v int) (int, error) { return v, nil }); !errors.Is(err, crew.ErrClosed) {
		t.Fatalf("Map on a closed pool = %v", err)
	}
	if err := p.Pause(); !errors.Is(err, crew.ErrClosed) {
		t.Fatalf("Pause after shutdown = %v", err)
	}
	checkCounts(t, p)
}
