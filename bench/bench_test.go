package bench

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew"
)

// quick shrinks the scenarios whose size is not set by -benchtime (S5's
// inputs); cmd/crewbench passes it in its -quick mode.
var quick = flag.Bool("quick", false, "smaller S5 inputs, for CI")

var procs = runtime.GOMAXPROCS(0)

// submitters runs b.N calls of submit split over n goroutines.
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

func perTask(b *testing.B, tasksPerOp int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tasksPerOp), "ns/task")
}

// BenchmarkS1Overhead: an empty task, submitted by 1 and by GOMAXPROCS
// goroutines into pools of GOMAXPROCS and of 1000 workers; ns/op is the
// cost of one task, waited for at the end with the contender's own
// mechanism or a WaitGroup.
func BenchmarkS1Overhead(b *testing.B) {
	for _, workers := range []int{procs, 1000} {
		for _, subs := range []int{1, procs} {
			for _, c := range Contenders {
				b.Run(fmt.Sprintf("workers=%d/submitters=%d/lib=%s", workers, subs, c.Name), func(b *testing.B) {
					r := c.New(Config{Workers: workers, Task: func() {}})
					defer r.Close()
					b.ReportAllocs()
					b.ResetTimer()
					submitters(b, subs, r.Go)
					r.Wait()
					b.StopTimer()
				})
			}
		}
	}
}

// S2Batches are S2's batch sizes.
var S2Batches = []int{1, 10, 100, 1024, 4096}

// BenchmarkS2CPU: batches of ~72 ns CPU tasks on GOMAXPROCS workers, one
// submitter, waiting for the whole batch; sequential is the same work in
// a loop.
func BenchmarkS2CPU(b *testing.B) {
	task := func() { Sink.Store(CPUTask()) }
	for _, batch := range S2Batches {
		b.Run(fmt.Sprintf("batch=%d/lib=sequential", batch), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for range batch {
					task()
				}
			}
			perTask(b, batch)
		})
		for _, c := range Contenders {
			b.Run(fmt.Sprintf("batch=%d/lib=%s", batch, c.Name), func(b *testing.B) {
				r := c.New(Config{Workers: procs, Task: task})
				defer r.Close()
				b.ReportAllocs()
				for b.Loop() {
					for range batch {
						r.Go()
					}
					r.Wait()
				}
				perTask(b, batch)
			})
		}
	}
}

// S2MapBatches are the batch sizes of S2's Map and ForEach contenders.
var S2MapBatches = []int{10, 100, 1024, 4096, 16384}

// BenchmarkS2Map: S2's work as a data-parallel batch, out[i] = Elem(in[i])
// over a slice, by each of Batches on GOMAXPROCS workers (pools started
// once, outside the timed loop); sequential is the plain loop. ns/op is
// the time of one batch, allocs/op its allocations.
func BenchmarkS2Map(b *testing.B) {
	for _, n := range S2MapBatches {
		in := make([]uint64, n)
		for i := range in {
			in[i] = uint64(i)
		}
		for _, c := range Batches {
			b.Run(fmt.Sprintf("batch=%d/lib=%s", n, c.Name), func(b *testing.B) {
				r := c.New(procs, in)
				defer r.Close()
				var out []uint64
				b.ReportAllocs()
				for b.Loop() {
					out = r.Run()
				}
				Sink.Store(out[n-1])
				perTask(b, n)
			})
		}
	}
}

// BenchmarkS4Latency: the time from a submit into an idle pool of
// GOMAXPROCS workers until the task starts. Each sample follows a 200 µs
// pause so that the workers have parked; run it with -benchtime=Nx for N
// samples.
func BenchmarkS4Latency(b *testing.B) {
	epoch := time.Now()
	var started atomic.Int64
	task := func() { started.Store(int64(time.Since(epoch))) }
	for _, c := range Contenders {
		b.Run("lib="+c.Name, func(b *testing.B) {
			r := c.New(Config{Workers: procs, Task: task})
			defer r.Close()
			// Warm up: workers exist, then go idle.
			r.Go()
			r.Wait()
			lat := make([]float64, 0, b.N)
			b.ResetTimer()
			for range b.N {
				time.Sleep(200 * time.Microsecond)
				t0 := int64(time.Since(epoch))
				r.Go()
				r.Wait()
				lat = append(lat, float64(started.Load()-t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(percentile(lat, 0.50), "p50-ns")
			b.ReportMetric(percentile(lat, 0.99), "p99-ns")
		})
	}
}

func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted)-1) + 0.5)
	return sorted[i]
}

// S5Inputs and S5Limits are the semaphore-and-pool article's grid.
var (
	S5Inputs      = []int{1, 10, 100, 1000, 10000, 100000}
	S5QuickInputs = []int{1, 100, 1000}
	S5Limits      = []int{10, 100, 1000}
)

// S5Contenders are the ways the semaphore-and-pool article compared, and crew's. Each is
// started per op (as in the article) unless its name ends in -shared: then
// one pool lives across ops, as crew and pond are meant to be used.
// crew-group-limit-shared is one pool of S5PoolWorkers workers shared by
// every limit, each op a group with Limit(limit); crew-map-shared is
// crew.Map over the inputs on a pool of limit workers.
var S5Contenders = []string{
	"crew-go", "crew-go-shared", "crew-group-shared", "crew-group-limit-shared", "crew-map-shared",
	"chansem", "xsemaphore", "chanpool", "errgroup", "conc", "pond-group-shared",
}

// S5PoolWorkers is the size of crew-group-limit-shared's pool.
const S5PoolWorkers = 1000

// BenchmarkS5SemVsPool: n inputs, each a simulated API call (APICall,
// ~1 µs of CPU), with at most limit at once; results go to a slice.
func BenchmarkS5SemVsPool(b *testing.B) {
	inputs := S5Inputs
	if *quick {
		inputs = S5QuickInputs
	}
	ctx := context.Background()
	for _, limit := range S5Limits {
		for _, n := range inputs {
			in := make([]uint64, n)
			for i := range in {
				in[i] = uint64(i)
			}
			out := make([]uint64, n)
			var next atomic.Int64
			task := func() {
				i := next.Add(1) - 1
				out[i] = APICall(in[i])
			}
			call := func(_ context.Context, v uint64) (uint64, error) { return APICall(v), nil }
			for _, name := range S5Contenders {
				b.Run(fmt.Sprintf("limit=%d/inputs=%d/lib=%s", limit, n, name), func(b *testing.B) {
					cfg := Config{Workers: limit, Task: task}
					var op func()
					switch name {
					case "crew-map-shared":
						p := newCrewPool(Config{Workers: limit, Queue: DefaultQueue})
						defer p.Close()
						op = func() {
							res, err := crew.Map(ctx, p, in, call)
							if err != nil || len(res) != n {
								b.Fatal(err)
							}
						}
					case "crew-group-limit-shared":
						p := newCrewPool(Config{Workers: S5PoolWorkers, Queue: DefaultQueue})
						defer p.Close()
						r := NewCrewGroupOn(p, false, task, crew.Limit(limit))
						op = func() { runN(r, n) }
					default:
						base, shared := strings.CutSuffix(name, "-shared")
						c, ok := Lookup(base)
						if !ok {
							b.Fatalf("no contender %s", base)
						}
						if shared {
							r := c.New(cfg)
							defer r.Close()
							op = func() { runN(r, n) }
						} else {
							op = func() {
								r := c.New(cfg)
								runN(r, n)
								r.Close()
							}
						}
					}
					b.ReportAllocs()
					for b.Loop() {
						next.Store(0)
						op()
					}
				})
			}
		}
	}
}

func runN(r Runner, n int) {
	for range n {
		r.Go()
	}
	r.Wait()
}

// BenchmarkS6Timeout: long tasks with a per-task timeout. case=ok: 1024
// tasks of ~72 ns that check their context, with a 1 s timeout that never
// fires, on GOMAXPROCS workers. case=fire: 200 tasks that wait for their
// context, with a 1 ms timeout that always fires, on 100 workers.
// crew-submit uses crew.Timeout; every other contender runs the same task
// inside context.WithTimeout (TimeoutWrapper).
func BenchmarkS6Timeout(b *testing.B) {
	cases := []struct {
		name           string
		tasks, workers int
		timeout        time.Duration
		task           func(context.Context) error
	}{
		{"ok", 1024, procs, time.Second, func(ctx context.Context) error {
			Sink.Store(CPUTask())
			return ctx.Err()
		}},
		{"fire", 200, 100, time.Millisecond, func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		}},
	}
	for _, tc := range cases {
		for _, c := range Contenders {
			b.Run(fmt.Sprintf("case=%s/lib=%s", tc.name, c.Name), func(b *testing.B) {
				r := c.New(Config{Workers: tc.workers, LongTask: tc.task, Timeout: tc.timeout})
				defer r.Close()
				b.ReportAllocs()
				for b.Loop() {
					for range tc.tasks {
						r.Go()
					}
					r.Wait()
				}
				perTask(b, tc.tasks)
			})
		}
	}
}

// BenchmarkS7SlowTasks is the worker-pool governance article's measure, 100 tasks of 10 ms on 5
// workers: time to the first completed task, average task run time and
// average time to completion (both from submit of the first task), total
// time. Run it with -benchtime=1x; the metrics average over b.N.
func BenchmarkS7SlowTasks(b *testing.B) {
	const tasks, workers = 100, 5
	for _, c := range Contenders {
		b.Run("lib="+c.Name, func(b *testing.B) {
			epoch := time.Now()
			var next atomic.Int64
			starts := make([]time.Duration, tasks)
			ends := make([]time.Duration, tasks)
			task := func() {
				i := next.Add(1) - 1
				starts[i] = time.Since(epoch)
				time.Sleep(10 * time.Millisecond)
				ends[i] = time.Since(epoch)
			}
			r := c.New(Config{Workers: workers, Task: task})
			defer r.Close()
			var first, avgRun, avgDone, total time.Duration
			for range b.N {
				next.Store(0)
				t0 := time.Since(epoch)
				for range tasks {
					r.Go()
				}
				r.Wait()
				total += time.Since(epoch) - t0
				f := ends[0]
				var run, done time.Duration
				for i := range tasks {
					f = min(f, ends[i])
					run += ends[i] - starts[i]
					done += ends[i] - t0
				}
				first += f - t0
				avgRun += run / tasks
				avgDone += done / tasks
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(b.N) / 1e6 }
			b.ReportMetric(ms(first), "first-ms")
			b.ReportMetric(ms(avgRun), "avg-run-ms")
			b.ReportMetric(ms(avgDone), "avg-done-ms")
			b.ReportMetric(ms(total), "total-ms")
		})
	}
}

// S8's grid: the task's duration, the bounds (each burst is bound tasks on
// a pool of bound workers) and the pauses before each burst.
var (
	S8Task   = time.Millisecond
	S8Bounds = []int{8, 64, 1000}
	S8Pauses = []time.Duration{0, time.Millisecond, 10 * time.Millisecond}
)

// BenchmarkS8WarmBurst: a warm pool of bound workers (one burst already
// run, so every worker has started) takes a burst of bound tasks that each
// sleep S8Task, after a pause: none (the workers have just finished), 1 ms
// or 10 ms (they have parked). All bound tasks may run at once, so the
// ideal burst takes one task's duration whatever the cores; x-ideal is the
// median burst's wall time (first submit to the end of Wait) over S8Task,
// x-ideal-max the worst burst's. floor is one time.Sleep(S8Task) on the
// caller: what the timer alone adds. Run it with -benchtime=Nx for N
// bursts; ns/op includes the pauses and the warm-up and means nothing.
func BenchmarkS8WarmBurst(b *testing.B) {
	task := func() { time.Sleep(S8Task) }
	for _, pause := range S8Pauses {
		for _, bound := range S8Bounds {
			name := fmt.Sprintf("pause=%v/bound=%d/lib=", pause, bound)
			b.Run(name+"floor", func(b *testing.B) { bursts(b, pause, task) })
			for _, c := range Contenders {
				b.Run(name+c.Name, func(b *testing.B) {
					r := c.New(Config{Workers: bound, Task: task})
					defer r.Close()
					burst := func() { runN(r, bound) }
					burst() // warm-up: every worker has started
					bursts(b, pause, burst)
				})
			}
		}
	}
}

// bursts runs b.N bursts, each after pause, and reports the median and
// the worst wall time over S8Task.
func bursts(b *testing.B, pause time.Duration, burst func()) {
	x := make([]float64, 0, b.N)
	for range b.N {
		if pause > 0 {
			time.Sleep(pause)
		}
		t0 := time.Now()
		burst()
		x = append(x, float64(time.Since(t0))/float64(S8Task))
	}
	slices.Sort(x)
	b.ReportMetric(percentile(x, 0.5), "x-ideal")
	b.ReportMetric(x[len(x)-1], "x-ideal-max")
}
