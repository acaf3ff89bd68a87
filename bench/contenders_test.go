package bench

import (
	"context"
	"fmt"
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

// TestBatchesComputeEveryElement proves that every Map and ForEach
// contender of S2 computes out[i] = Elem(in[i]) for every element, batch
// after batch, on one and on several workers.
func TestBatchesComputeEveryElement(t *testing.T) {
	for _, c := range Batches {
		for _, workers := range []int{1, 3} {
			for _, n := range []int{1, 10, 1000} {
				t.Run(fmt.Sprintf("%s/workers=%d/n=%d", c.Name, workers, n), func(t *testing.T) {
					in := make([]uint64, n)
					for i := range in {
						in[i] = uint64(i)*2654435761 + 1
					}
					r := c.New(workers, in)
					defer r.Close()
					for round := 1; round <= 2; round++ {
						out := r.Run()
						if len(out) != n {
							t.Fatalf("round %d: %d outputs, want %d", round, len(out), n)
						}
						for i := range out {
							if want := Elem(in[i]); out[i] != want {
								t.Fatalf("round %d: out[%d] = %d, want %d", round, i, out[i], want)
							}
							out[i] = 0 // a contender that skips an element next round is caught
						}
					}
				})
			}
		}
	}
}

// TestContendersRunBurstAtOnce proves what S8's ideal assumes: a burst of
// bound tasks on a pool of bound workers runs all of them at once, warm
// or not. Each task waits until all bound have started; a contender that
// ran fewer at once would stall (caught within 10 s, then released).
func TestContendersRunBurstAtOnce(t *testing.T) {
	const bound = 8
	type round struct {
		started    atomic.Int64
		all, start chan struct{}
	}
	for _, c := range Contenders {
		t.Run(c.Name, func(t *testing.T) {
			var cur atomic.Pointer[round]
			task := func() {
				rd := cur.Load()
				if rd.started.Add(1) == bound {
					close(rd.all)
				}
				<-rd.start
			}
			r := c.New(Config{Workers: bound, Task: task})
			defer r.Close()
			for burst := range 3 {
				rd := &round{all: make(chan struct{}), start: make(chan struct{})}
				cur.Store(rd)
				done := make(chan struct{})
				go func() {
					defer close(done)
					runN(r, bound)
				}()
				var stalled bool
				select {
				case <-rd.all:
				case <-time.After(10 * time.Second):
					stalled = true
				}
				close(rd.start)
				<-done
				if stalled {
					t.Fatalf("burst %d: the %d tasks did not all run at once", burst, bound)
				}
			}
		})
	}
}
