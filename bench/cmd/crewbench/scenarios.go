package main

import (
	"strings"

	"github.com/crew-go/crew/bench/internal/report"
)

// run says how the driver runs one scenario.
type run struct {
	sc *report.Scenario
	// more are parts of the scenario with benchmarks of their own, run with
	// it into the same raw file and shown as sections of their own.
	more       []*report.Scenario
	benchtime  string // full mode
	quickTime  string // -quick mode
	extraUnits []string
}

// parts is the run's scenario followed by its other parts.
func (r run) parts() []*report.Scenario {
	return append([]*report.Scenario{r.sc}, r.more...)
}

// benchPattern is the -test.bench pattern that selects the run's
// benchmarks.
func (r run) benchPattern() string {
	var names []string
	for _, sc := range r.parts() {
		names = append(names, sc.Bench)
	}
	return "^Benchmark(" + strings.Join(names, "|") + ")$"
}

// S2's goal for crew's Map and ForEach, against the sequential loop on
// the same run: at most 1.1× at 10 elements.
func s2MapGoal(config string) (float64, bool) {
	return 1.1, config == "batch=10"
}

func only(config string, max float64) func(string) (float64, bool) {
	return func(c string) (float64, bool) { return max, c == config }
}

func everywhere(max float64) func(string) (float64, bool) {
	return func(string) (float64, bool) { return max, true }
}

func scenarios(s3Tasks, s3Limit int) []run {
	return []run{
		{sc: &report.Scenario{
			ID: "S1", Bench: "S1Overhead", Title: "overhead of an empty task",
			Desc: "An empty task, submitted b.N times by 1 and by GOMAXPROCS goroutines into a pool of GOMAXPROCS or of 1000 workers, waited for once at the end. ns/op is the cost of one task. `chanpool-1024` is the floor for any pool: one channel hand-off between goroutines.",
			Unit: "ns/op", Extra: []string{"B/op", "allocs/op"}, Ref: "crew-go",
			Goals: []report.Goal{
				{Text: "crew's `Go` at most 1.2× the channel pool (`chanpool-1024`) in every configuration.", Libs: []string{"crew-go"}, Unit: "ns/op", OverLib: "chanpool-1024", Max: everywhere(1.2)},
			},
		}, benchtime: "300ms", quickTime: "2000x"},
		{sc: &report.Scenario{
			ID: "S2", Bench: "S2CPU", Title: "batches of small CPU tasks",
			Desc: "Batches of 1 to 4,096 tasks of ~72 ns of CPU each (10 × factorial(20) over uint64) on GOMAXPROCS workers, one submitter that waits for the whole batch; `sequential` does the same work in a loop. ns/task is ns/op ÷ batch.",
			Unit: "ns/task", Extra: []string{"ns/op", "B/op", "allocs/op"}, Ref: "crew-go", Base: "sequential", Chart: report.LineChart,
		}, more: []*report.Scenario{{
			ID: "S2-map", Bench: "S2Map", Title: "Map and ForEach over a slice",
			Desc: "S2's work as a data-parallel batch: out[i] = bench.Elem(in[i]) (the S2 task on one input) over slices of 10 to 16,384 elements, on GOMAXPROCS workers, pools started once outside the timed loop. `sequential` is the plain loop; `floor` is the hand-split floor (GOMAXPROCS long-lived goroutines, each a fixed contiguous share, signalled per batch: what no pool can beat); `crew-map` is `crew.Map` (a new output slice per call, as `conc-map`); `crew-foreach` and `conc-foreach` run over the indices and write out[i]; `crew-go` is `Pool.Go` in a loop with a closure per element and a WaitGroup; `errgroup` is `SetLimit(GOMAXPROCS)` and `Go` in a loop, a new group per batch. ns/op is one batch; allocs/op its allocations. The chart shows ns/op ÷ the sequential loop's in the same run.",
			Unit: "ns/op", Extra: []string{"ns/task", "B/op", "allocs/op"}, Ref: "crew-map", Base: "sequential", Chart: report.LineChart, OverBase: true,
			Goals: []report.Goal{
				{Text: "crew's Map and ForEach at most 1.1× the sequential loop at 10 elements.", Libs: []string{"crew-map", "crew-foreach"}, Unit: "ns/op", OverLib: "sequential", Max: s2MapGoal},
				{Text: "crew's Map and ForEach at most 1.1× the hand-split floor (`floor`) at 1,024 elements.", Libs: []string{"crew-map", "crew-foreach"}, Unit: "ns/op", OverLib: "floor", Max: only("batch=1024", 1.1)},
				{Text: "crew's Map and ForEach at most 1.05× the hand-split floor (`floor`) at 16,384 elements.", Libs: []string{"crew-map", "crew-foreach"}, Unit: "ns/op", OverLib: "floor", Max: only("batch=16384", 1.05)},
				{Text: "crew's Map and ForEach allocate as much per call at 4,096 elements as at 1,024 (O(1) allocations per call).", Libs: []string{"crew-map", "crew-foreach"}, Unit: "allocs/op", OverConfig: "batch=1024", Max: only("batch=4096", 1)},
			},
		}}, benchtime: "300ms", quickTime: "50x"},
		{sc: &report.Scenario{
			ID: "S3", Bench: "S3SlowTasks", Title: "many slow tasks",
			Desc: "N tasks that each sleep 10 ms with at most L at once, each contender in a fresh process (the driver re-executes itself). ns/op is the wall time of the whole run; peak-rss-B is VmHWM; total-alloc-B is runtime.MemStats.TotalAlloc over the run; peak-goroutines is sampled every 500 µs. crew: WithWorkers(L), WithQueueSize(1024). `goroutines` has no bound: one goroutine per task.",
			Unit: "ns/op", Extra: []string{"peak-rss-B", "total-alloc-B", "peak-goroutines"}, Ref: "crew-go",
		}, extraUnits: []string{"peak-rss-B", "total-alloc-B"}},
		{sc: &report.Scenario{
			ID: "S4", Bench: "S4Latency", Title: "latency from submit to start",
			Desc: "Time from a submit into an idle pool of GOMAXPROCS workers until the task's first instruction, each sample after a 200 µs pause (the workers have parked, or exited where a pool keeps none). ns/op includes the pause and means nothing here.",
			Unit: "p50-ns", Extra: []string{"p99-ns"}, Ref: "crew-go",
		}, benchtime: "2000x", quickTime: "100x", extraUnits: []string{"p99-ns"}},
		{sc: &report.Scenario{
			ID: "S5", Bench: "S5SemVsPool", Title: "semaphore against pool (the semaphore-and-pool article)",
			Desc: "n inputs, each a simulated API call (bench.APICall: ~1 µs of CPU, 14 × the S2 task), results written to a slice, at most `limit` at once. Each contender is started per op, as in the article (the channel pool starts its `limit` goroutines per op), except `-shared` ones: one long-lived pool across ops, as crew and pond are meant to be used. `crew-group-shared`: a pool of `limit` workers, a group per op; `crew-group-limit-shared`: one pool of 1,000 workers for every limit, a group with `crew.Limit(limit)` per op; `crew-map-shared`: `crew.Map` over the inputs on a pool of `limit` workers. The target: crew's group at or below the better of the semaphore and the pool in every cell.",
			Unit: "ns/op", Extra: []string{"B/op", "allocs/op"}, Ref: "crew-group-shared", Chart: report.LineChart, PerX: true, Target: &report.Target{Lib: "crew-group-shared", Against: []string{"chansem", "chanpool"}},
		}, benchtime: "150ms", quickTime: "20x"},
		{sc: &report.Scenario{
			ID: "S6", Bench: "S6Timeout", Title: "long tasks with a timeout",
			Desc: "case=ok: 1,024 tasks of ~72 ns that check their context, 1 s timeout that never fires, GOMAXPROCS workers. case=fire: 200 tasks that wait for their context, 1 ms timeout that always fires, 100 workers. `crew-submit` uses `crew.Timeout`; every other contender (crew-go included) runs the same task inside `context.WithTimeout`, built once per runner. Note that crew's `Task.Wait` returns at the timeout, not when the function returns.",
			Unit: "ns/task", Extra: []string{"B/op", "allocs/op"}, Ref: "crew-submit",
		}, benchtime: "300ms", quickTime: "20x"},
		{sc: &report.Scenario{
			ID: "S7", Bench: "S7SlowTasks", Title: "the worker-pool governance article: 100 tasks of 10 ms on 5 workers",
			Desc: "Time to the first completed task, average run time of a task (start to end), average time from the first submit to each task's end, and total time. The ideal is 10 ms first, 10 ms run, 110 ms done and 200 ms total; `goroutines` ignores the bound of 5.",
			Unit: "total-ms", Extra: []string{"first-ms", "avg-run-ms", "avg-done-ms"}, Ref: "crew-go",
		}, benchtime: "1x", quickTime: "1x", extraUnits: []string{"first-ms"}},
		{sc: &report.Scenario{
			ID: "S8", Bench: "S8WarmBurst", Title: "a burst on a warm pool",
			Desc: "A pool of `bound` workers, warm (one burst already run, so every worker has started), takes a burst of `bound` tasks that each sleep 1 ms, after a pause: 0 (the workers have just finished a task), 1 ms or 10 ms (they have parked). All the tasks may run at once, so the ideal burst takes one task's duration whatever the cores. x-ideal is the median burst's wall time (first submit to the end of the wait) ÷ 1 ms, x-ideal-max the worst burst's; `floor` is one 1 ms sleep on the caller, what the timer alone adds. The goal for crew: at most 1.05× the ideal, like its peers.",
			Unit: "x-ideal", Extra: []string{"x-ideal-max"}, Ref: "crew-go", Base: "floor", Chart: report.LineChart,
			Goals: []report.Goal{
				{Text: "crew's bursts at most 1.05× the ideal (one task's duration).", Libs: []string{"crew-go", "crew-submit", "crew-group"}, Unit: "x-ideal", Max: everywhere(1.05)},
			},
		}, benchtime: "40x", quickTime: "3x"},
	}
}

func headlines(runs []run) []report.Headline {
	sc := map[string]*report.Scenario{}
	for _, r := range runs {
		for _, p := range r.parts() {
			sc[p.ID] = p
		}
	}
	is := func(s string) func(string) bool { return func(c string) bool { return strings.Contains(c, s) } }
	return []report.Headline{
		{Label: "S1 ns/op", Scenario: sc["S1"], Unit: "ns/op"},
		{Label: "S2 ns/task", Scenario: sc["S2"], Unit: "ns/task"},
		{Label: "S2-map ns/op", Scenario: sc["S2-map"], Unit: "ns/op"},
		{Label: "S3 wall", Scenario: sc["S3"], Unit: "ns/op"},
		{Label: "S3 peak RSS", Scenario: sc["S3"], Unit: "peak-rss-B"},
		{Label: "S4 p50", Scenario: sc["S4"], Unit: "p50-ns"},
		{Label: "S4 p99", Scenario: sc["S4"], Unit: "p99-ns"},
		{Label: "S5 ns/op", Scenario: sc["S5"], Unit: "ns/op"},
		{Label: "S5 B/op", Scenario: sc["S5"], Unit: "B/op"},
		{Label: "S6 ok ns/task", Scenario: sc["S6"], Unit: "ns/task", Filter: is("case=ok")},
		{Label: "S6 fire ns/task", Scenario: sc["S6"], Unit: "ns/task", Filter: is("case=fire")},
		{Label: "S7 first", Scenario: sc["S7"], Unit: "first-ms"},
		{Label: "S7 total", Scenario: sc["S7"], Unit: "total-ms"},
		{Label: "S8 burst", Scenario: sc["S8"], Unit: "x-ideal"},
	}
}
