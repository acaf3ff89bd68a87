package crew_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/crew-go/crew"
)

// BenchmarkGroupGo is the per-task cost of an errgroup-shaped group: b.N
// tasks into one group, then Wait.
func BenchmarkGroupGo(b *testing.B) {
	p, _ := crew.New()
	defer p.Close()
	task := func() error { return nil }
	b.ReportAllocs()
	g, _ := crew.NewGroup(context.Background(), p)
	for b.Loop() {
		_ = g.Go(task)
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkResultsGo is the per-task cost of a typed result group.
func BenchmarkResultsGo(b *testing.B) {
	p, _ := crew.New()
	defer p.Close()
	task := func(context.Context) (int, error) { return 1, nil }
	b.ReportAllocs()
	r, _ := crew.NewResults[int](context.Background(), p)
	for b.Loop() {
		_ = r.Go(task)
	}
	if _, err := r.Wait(); err != nil {
		b.Fatal(err)
	}
}

// apiCall stands for the rate-limited external call of the
// semaphore-and-pool article's batch, as about 100 ns of CPU so that the
// benchmark measures the machinery around it.
func apiCall() error {
	sink = cpuTask()
	return nil
}

// BenchmarkBatch is the semaphore-and-pool article's matrix: batches of 1 to 100,000 calls with
// at most 10, 100 or 1,000 at once, run by crew (a long-lived pool of that
// bound, a group per batch), by a channel semaphore (a goroutine per call)
// and by a channel pool started per batch, as the semaphore-and-pool article did.
func BenchmarkBatch(b *testing.B) {
	for _, limit := range []int{10, 100, 1000} {
		p, _ := crew.New(crew.WithWorkers(limit))
		for _, n := range []int{1, 10, 100, 1000, 10000, 100000} {
			if testing.Short() && n > 1000 {
				continue
			}
			name := fmt.Sprintf("limit=%d/n=%d", limit, n)
			b.Run(name+"/crew", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					g, _ := crew.NewGroup(context.Background(), p)
					for range n {
						_ = g.Go(apiCall)
					}
					if err := g.Wait(); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/semaphore", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					sem := make(chan struct{}, limit)
					var wg sync.WaitGroup
					for range n {
						sem <- struct{}{}
						wg.Go(func() {
							_ = apiCall()
							<-sem
						})
					}
					wg.Wait()
				}
			})
			b.Run(name+"/prestarted-pool", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					jobs := make(chan func() error)
					var wg sync.WaitGroup
					for range limit {
						wg.Go(func() {
							for f := range jobs {
								_ = f()
							}
						})
					}
					for range n {
						jobs <- apiCall
					}
					close(jobs)
					wg.Wait()
				}
			})
		}
		_ = p.Close()
	}
}
