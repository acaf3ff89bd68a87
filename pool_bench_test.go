package crew_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew"
)

// submitters runs b.N submissions split over n goroutines.
func submitters(b *testing.B, n int, submit func()) {
	var wg sync.WaitGroup
	per := b.N / n
	for i := range n {
		k := per
		if i == 0 {
			k += b.N % n
		}
		wg.Go(func() {
			for range k {
				submit()
			}
		})
	}
	wg.Wait()
}

func poolSizes() []int { return []int{runtime.GOMAXPROCS(0), 1000} }

func submitterCounts() []int { return []int{1, runtime.GOMAXPROCS(0)} }

// BenchmarkGo is the short-task path: submit and run an empty task, waited
// for with a WaitGroup.
func BenchmarkGo(b *testing.B) {
	for _, size := range poolSizes() {
		for _, subs := range submitterCounts() {
			b.Run(fmt.Sprintf("workers=%d/submitters=%d", size, subs), func(b *testing.B) {
				p, err := crew.New(crew.WithWorkers(size))
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close()
				var wg sync.WaitGroup
				task := func() { wg.Done() }
				b.ReportAllocs()
				b.ResetTimer()
				wg.Add(b.N)
				submitters(b, subs, func() { _ = p.Go(task) })
				wg.Wait()
			})
		}
	}
}

// BenchmarkChannelPool is the floor to compare with: GOMAXPROCS goroutines
// reading a buffered channel of functions.
func BenchmarkChannelPool(b *testing.B) {
	for _, subs := range submitterCounts() {
		b.Run(fmt.Sprintf("submitters=%d", subs), func(b *testing.B) {
			ch := make(chan func(), 1024)
			var workers sync.WaitGroup
			for range runtime.GOMAXPROCS(0) {
				workers.Go(func() {
					for f := range ch {
						f()
					}
				})
			}
			var wg sync.WaitGroup
			task := func() { wg.Done() }
			b.ReportAllocs()
			b.ResetTimer()
			wg.Add(b.N)
			submitters(b, subs, func() { ch <- task })
			wg.Wait()
			b.StopTimer()
			close(ch)
			workers.Wait()
		})
	}
}

var sink uint64

func factorial(n uint64) uint64 {
	r := uint64(1)
	for i := uint64(2); i <= n; i++ {
		r *= i
	}
	return r
}

// cpuTask is about 72 ns of CPU: ten factorials of 20. It is not inlined,
// so that every contender runs the same machine code per element: an
// inlined copy's speed depends on where the linker puts it.
//
//go:noinline
func cpuTask() uint64 {
	var s uint64
	for range 10 {
		s += factorial(20)
	}
	return s
}

// BenchmarkFactorialBatch runs 1024 small CPU tasks per op; divide ns/op by
// 1024 for the cost per task.
func BenchmarkFactorialBatch(b *testing.B) {
	const batch = 1024
	b.Run("crew", func(b *testing.B) {
		p, _ := crew.New()
		defer p.Close()
		var wg sync.WaitGroup
		var mu sync.Mutex
		task := func() {
			v := cpuTask()
			_ = v
			wg.Done()
		}
		_ = &mu
		b.ReportAllocs()
		for b.Loop() {
			wg.Add(batch)
			for range batch {
				_ = p.Go(task)
			}
			wg.Wait()
		}
	})
	b.Run("sequential", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var s uint64
			for range batch {
				s += cpuTask()
			}
			sink = s
		}
	})
}

// BenchmarkSubmitTimeout is the long-task path: submit a task with a timeout
// and wait for its handle.
func BenchmarkSubmitTimeout(b *testing.B) {
	p, _ := crew.New()
	defer p.Close()
	ctx := context.Background()
	task := func(context.Context) error { return nil }
	b.ReportAllocs()
	var last *crew.Task
	for b.Loop() {
		t, err := p.Submit(ctx, task, crew.Timeout(time.Second))
		if err != nil {
			b.Fatal(err)
		}
		last = t
	}
	last.Wait()
}

// BenchmarkGoObserver is the core's cost of observing every task: the same
// short tasks with no observer and with an empty one (clock readings only).
func BenchmarkGoObserver(b *testing.B) {
	for _, observed := range []bool{false, true} {
		b.Run(fmt.Sprintf("observer=%v", observed), func(b *testing.B) {
			opts := []crew.Option{}
			if observed {
				opts = append(opts, crew.WithObserver(func(crew.Observation) {}))
			}
			p, _ := crew.New(opts...)
			defer p.Close()
			var wg sync.WaitGroup
			task := func() { wg.Done() }
			b.ReportAllocs()
			b.ResetTimer()
			wg.Add(b.N)
			for range b.N {
				_ = p.Go(task, crew.Named("task"))
			}
			wg.Wait()
		})
	}
}

// BenchmarkForEach runs ForEach and Map over slices of small CPU tasks
// (cpuTask, about 72 ns) beside the plain loop over the same slice and the
// hand-split floor: the data-parallel path must beat the loop on a batch
// large enough to share, cost about what the loop costs on a tiny one, and
// come close to the floor, which no pool can beat.
func BenchmarkForEach(b *testing.B) {
	p, _ := crew.New()
	defer p.Close()
	for _, n := range []int{10, 100, 1024, 4096, 16384} {
		in := make([]int, n)
		out := make([]uint64, n)
		b.Run(fmt.Sprintf("n=%d/sequential", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i := range in {
					out[i] = cpuTask()
				}
			}
		})
		b.Run(fmt.Sprintf("n=%d/floor", n), func(b *testing.B) {
			run, stop := handSplit(runtime.GOMAXPROCS(0), n, func(i int) { out[i] = cpuTask() })
			defer stop()
			b.ReportAllocs()
			for b.Loop() {
				run()
			}
		})
		b.Run(fmt.Sprintf("n=%d/ForEach", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = crew.ForEach(context.Background(), p, in, func(_ context.Context, i int) error {
					out[i] = cpuTask()
					return nil
				})
			}
		})
		b.Run(fmt.Sprintf("n=%d/Map", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = crew.Map(context.Background(), p, in, func(_ context.Context, _ int) (uint64, error) {
					return cpuTask(), nil
				})
			}
		})
	}
}

// handSplit is the floor for a data-parallel batch of n elements: workers
// goroutines started once, each owning a fixed contiguous share; run does
// one batch (a send to each, a receive from each) and stop ends them. No
// queue, no claiming, no allocation per batch.
func handSplit(workers, n int, elem func(int)) (run, stop func()) {
	workers = min(workers, n)
	start := make([]chan struct{}, workers)
	done := make(chan struct{}, workers)
	for w := range workers {
		start[w] = make(chan struct{})
		lo, hi := w*n/workers, (w+1)*n/workers
		go func() {
			for range start[w] {
				for i := lo; i < hi; i++ {
					elem(i)
				}
				done <- struct{}{}
			}
		}()
	}
	run = func() {
		for _, c := range start {
			c <- struct{}{}
		}
		for range start {
			<-done
		}
	}
	stop = func() {
		for _, c := range start {
			close(c)
		}
	}
	return run, stop
}
