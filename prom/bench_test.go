package prom_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/prom"
	"github.com/prometheus/client_golang/prometheus"
)

// submitters runs b.N submissions split over n goroutines, as the core's
// benchmark does.
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

// observers are the variants of BenchmarkGo: no observer (the core alone),
// an empty observer (the core's clock reads alone) and TaskMetrics with a
// registered Collector (the whole cost of this package).
var observers = []struct {
	name string
	make func(b *testing.B, opts ...crew.Option) *crew.Pool
}{
	{"observer=none", func(b *testing.B, opts ...crew.Option) *crew.Pool {
		return newBenchPool(b, opts...)
	}},
	{"observer=empty", func(b *testing.B, opts ...crew.Option) *crew.Pool {
		return newBenchPool(b, append(opts, crew.WithObserver(func(crew.Observation) {}))...)
	}},
	{"observer=prom", func(b *testing.B, opts ...crew.Option) *crew.Pool {
		tasks, err := prom.NewTaskMetrics()
		if err != nil {
			b.Fatal(err)
		}
		p := newBenchPool(b, append(opts, crew.WithObserver(tasks.Observe))...)
		c, err := prom.NewCollector(p, prom.WithTaskMetrics(tasks))
		if err != nil {
			b.Fatal(err)
		}
		prometheus.NewPedanticRegistry().MustRegister(c)
		return p
	}},
}

func newBenchPool(b *testing.B, opts ...crew.Option) *crew.Pool {
	p, err := crew.New(opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}

// BenchmarkGo is the core's BenchmarkGo (pool_bench_test.go), run once per
// observer variant so that the rows can be compared within one run: submit
// and run an empty short task, waited for with a WaitGroup. The task=named
// rows give every task a name, which costs Observe a map lookup.
func BenchmarkGo(b *testing.B) {
	for _, size := range []int{runtime.GOMAXPROCS(0), 1000} {
		for _, subs := range []int{1, runtime.GOMAXPROCS(0)} {
			for _, named := range []bool{false, true} {
				var opts []crew.TaskOption
				label := "unnamed"
				if named {
					opts = []crew.TaskOption{crew.Named("bench")}
					label = "named"
				}
				for _, o := range observers {
					b.Run(fmt.Sprintf("workers=%d/submitters=%d/task=%s/%s", size, subs, label, o.name), func(b *testing.B) {
						p := o.make(b, crew.WithWorkers(size))
						var wg sync.WaitGroup
						task := func() { wg.Done() }
						b.ReportAllocs()
						b.ResetTimer()
						wg.Add(b.N)
						submitters(b, subs, func() { _ = p.Go(task, opts...) })
						wg.Wait()
					})
				}
			}
		}
	}
}

// BenchmarkObserve is the cost of TaskMetrics.Observe alone, on one
// goroutine and on all of them at once.
func BenchmarkObserve(b *testing.B) {
	for _, name := range []string{"", "bench", "past-the-cap"} {
		tasks, err := prom.NewTaskMetrics(prom.WithMaxTaskNames(1))
		if err != nil {
			b.Fatal(err)
		}
		tasks.Observe(crew.Observation{Name: "bench"})
		o := crew.Observation{Name: name, Wait: 3 * time.Microsecond, Run: 40 * time.Microsecond, State: crew.Succeeded}
		b.Run(fmt.Sprintf("name=%q", name), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tasks.Observe(o)
			}
		})
		b.Run(fmt.Sprintf("name=%q/parallel", name), func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					tasks.Observe(o)
				}
			})
		})
	}
}
