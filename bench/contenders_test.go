package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestContendersRunEveryTask proves that every contender runs each task
// once, that Wait waits for all of them, and that the bound holds.
func TestContendersRunEveryTask(t *testing.T) {
	for _, c := range Contenders {
		t.Run(c.Name, func(t *testing.T) {
			var ran, running, peak atomic.Int64
			task := func() {
				n := running.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(50 * time.Microsecond)
				running.Add(-1)
				ran.Add(1)
			}
			r := c.New(Config{Workers: 3, Queue: 8, Task: task})
			defer r.Close()
			for round := 1; round <= 2; round++ {
				done := make(chan struct{})
				go func() {
					defer close(done)
					submitters(&testing.B{N: 100}, 2, r.Go)
				}()
				<-done
				r.Wait()
				if got := ran.Load(); got != int64(100*round) {
					t.Fatalf("round %d: %d tasks ran, want %d", round, got, 100*round)
				}
			}
			if c.Name != "goroutines" && peak.Load() > 3 {
				t.Fatalf("%d tasks ran at once, bound 3", peak.Load())
			}
		})
	}
}

// TestContendersTimeout proves that each contender's long task sees its
// timeout, natively or through TimeoutWrapper.
func TestContendersTimeout(t *testing.T) {
	for _, c := range Contenders {
		t.Run(c.Name, func(t *testing.T) {
			var timedOut atomic.Int64
			task := func(ctx context.Context) error {
				<-ctx.Done()
				if ctx.Err() == context.DeadlineExceeded {
					timedOut.Add(1)
				}
				return ctx.Err()
			}
			r := c.New(Config{Workers: 4, LongTask: task, Timeout: time.Millisecond})
			for range 8 {
				r.Go()
			}
			r.Wait()
			// crew's Task.Wait returns at the timeout, before the function
			// does; Close waits for the workers.
			r.Close()
			if got := timedOut.Load(); got != 8 {
				t.Fatalf("%d tasks saw their deadline, want 8", got)
			}
		})
	}
}

func TestRunS3(t *testing.T) {
	c, _ := Lookup("crew-go")
	res := RunS3(c, 200, 50, time.Millisecond)
	if res.Wall < 4*time.Millisecond || res.PeakGoroutines < 2 || res.TotalAlloc == 0 {
		t.Fatalf("implausible result %+v", res)
	}
}
