package crew_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew"
)

// Concurrent Shutdowns in every mode, with expired, near and no deadlines,
// while tasks of every kind queue and run: each returns by its deadline
// (plus the documented 5 ms settle and some scheduling slack), every
// waiter is released, the counts agree.
func TestConcurrentShutdowns(t *testing.T) {
	p := newPool(t, crew.WithWorkers(3), crew.WithQueueSize(8), crew.WithStopGrace(30*time.Millisecond))
	var tasks []*crew.Task
	for i := range 6 {
		tk, err := p.TrySubmit(func(ctx context.Context) error {
			if i%2 == 0 {
				<-ctx.Done()
				return ctx.Err()
			}
			time.Sleep(20 * time.Millisecond)
			return nil
		})
		if err == nil {
			tasks = append(tasks, tk)
		}
	}
	g, _ := crew.NewGroup(context.Background(), p)
	for range 4 {
		_ = g.TryGo(func() error { time.Sleep(5 * time.Millisecond); return nil })
	}
	var wg sync.WaitGroup
	modes := []crew.ShutdownMode{crew.Drain, crew.Soft, crew.SoftThenHard, crew.DrainThenHard, crew.Hard}
	for i, m := range modes {
		for _, d := range []time.Duration{-time.Millisecond, 15 * time.Millisecond, 60 * time.Millisecond} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), d)
				defer cancel()
				start := time.Now()
				_ = p.Shutdown(ctx, m)
				if late := time.Since(start) - max(d, 0); late > 40*time.Millisecond {
					t.Errorf("Shutdown(%v, %v) returned %v after its deadline", d, m, late)
				}
			}()
			_ = i
		}
	}
	wg.Add(1)
	go func() { defer wg.Done(); _ = p.Close() }()
	wg.Wait()
	for _, tk := range tasks {
		select {
		case <-tk.Done():
		case <-time.After(2 * time.Second):
			t.Fatalf("task never released: %v", tk.State())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := g.WaitContext(ctx); err != nil && !isExpected(err) {
		t.Fatalf("group: %v", err)
	}
	if err := p.Shutdown(ctx, crew.Hard); err != nil {
		t.Fatalf("final Shutdown: %v", err)
	}
	checkCounts(t, p)
}

func isExpected(err error) bool {
	_, bad := err.(*crew.UnfinishedError)
	return !bad
}
