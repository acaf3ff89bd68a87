package prom_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/prom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// newCollector returns a collector over an idle pool named name, with tasks.
func newCollector(t *testing.T, name string, tasks *prom.TaskMetrics) *prom.Collector {
	t.Helper()
	pool, err := crew.New(crew.WithName(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	c, err := prom.NewCollector(pool, prom.WithTaskMetrics(tasks))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTaskMetricsExposeExactHistograms(t *testing.T) {
	tasks, err := prom.NewTaskMetrics(
		prom.WithMaxTaskNames(2),
		prom.WithRunBuckets(0.01, 0.1, 1, math.Inf(+1)),
		prom.WithWaitBuckets(0.001, 0.01),
	)
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	for _, o := range []crew.Observation{
		{Name: "a", Wait: ms / 2, Run: 5 * ms, State: crew.Succeeded},
		{Name: "a", Wait: 2 * ms, Run: 50 * ms, State: crew.Failed},
		{Name: "b", Wait: 20 * ms, Run: 2 * time.Second, State: crew.Panicked},
		// Past the cap of two names: counted as "other". A bound is
		// inclusive: 1 ms falls in le="0.001", 100 ms in le="0.1".
		{Name: "c", Wait: ms, Run: 100 * ms, State: crew.TimedOut},
		// Never ran: its wait counts, its run does not.
		{Name: "other", Wait: 0, State: crew.Dropped},
		{Name: "d", Wait: 3 * ms, State: crew.Canceled},
		// Cancelled while running: both count.
		{Name: "a", Wait: ms, Run: ms, State: crew.Canceled},
		{Name: "", Wait: 10 * ms, Run: 10 * ms, State: crew.Succeeded},
	} {
		tasks.Observe(o)
	}
	c := newCollector(t, "exact", tasks)
	const want = `
# HELP crew_task_run_seconds Time task functions ran, by task name.
# TYPE crew_task_run_seconds histogram
crew_task_run_seconds_bucket{pool="exact",task="",le="0.01"} 1
crew_task_run_seconds_bucket{pool="exact",task="",le="0.1"} 1
crew_task_run_seconds_bucket{pool="exact",task="",le="1"} 1
crew_task_run_seconds_bucket{pool="exact",task="",le="+Inf"} 1
crew_task_run_seconds_sum{pool="exact",task=""} 0.01
crew_task_run_seconds_count{pool="exact",task=""} 1
crew_task_run_seconds_bucket{pool="exact",task="a",le="0.01"} 2
crew_task_run_seconds_bucket{pool="exact",task="a",le="0.1"} 3
crew_task_run_seconds_bucket{pool="exact",task="a",le="1"} 3
crew_task_run_seconds_bucket{pool="exact",task="a",le="+Inf"} 3
crew_task_run_seconds_sum{pool="exact",task="a"} 0.056
crew_task_run_seconds_count{pool="exact",task="a"} 3
crew_task_run_seconds_bucket{pool="exact",task="b",le="0.01"} 0
crew_task_run_seconds_bucket{pool="exact",task="b",le="0.1"} 0
crew_task_run_seconds_bucket{pool="exact",task="b",le="1"} 0
crew_task_run_seconds_bucket{pool="exact",task="b",le="+Inf"} 1
crew_task_run_seconds_sum{pool="exact",task="b"} 2
crew_task_run_seconds_count{pool="exact",task="b"} 1
crew_task_run_seconds_bucket{pool="exact",task="other",le="0.01"} 0
crew_task_run_seconds_bucket{pool="exact",task="other",le="0.1"} 1
crew_task_run_seconds_bucket{pool="exact",task="other",le="1"} 1
crew_task_run_seconds_bucket{pool="exact",task="other",le="+Inf"} 1
crew_task_run_seconds_sum{pool="exact",task="other"} 0.1
crew_task_run_seconds_count{pool="exact",task="other"} 1
# HELP crew_task_wait_seconds Time tasks waited in the queue before they started or were dropped, by task name.
# TYPE crew_task_wait_seconds histogram
crew_task_wait_seconds_bucket{pool="exact",task="",le="0.001"} 0
crew_task_wait_seconds_bucket{pool="exact",task="",le="0.01"} 1
crew_task_wait_seconds_bucket{pool="exact",task="",le="+Inf"} 1
crew_task_wait_seconds_sum{pool="exact",task=""} 0.01
crew_task_wait_seconds_count{pool="exact",task=""} 1
crew_task_wait_seconds_bucket{pool="exact",task="a",le="0.001"} 2
crew_task_wait_seconds_bucket{pool="exact",task="a",le="0.01"} 3
crew_task_wait_seconds_bucket{pool="exact",task="a",le="+Inf"} 3
crew_task_wait_seconds_sum{pool="exact",task="a"} 0.0035
crew_task_wait_seconds_count{pool="exact",task="a"} 3
crew_task_wait_seconds_bucket{pool="exact",task="b",le="0.001"} 0
crew_task_wait_seconds_bucket{pool="exact",task="b",le="0.01"} 0
crew_task_wait_seconds_bucket{pool="exact",task="b",le="+Inf"} 1
crew_task_wait_seconds_sum{pool="exact",task="b"} 0.02
crew_task_wait_seconds_count{pool="exact",task="b"} 1
crew_task_wait_seconds_bucket{pool="exact",task="other",le="0.001"} 2
crew_task_wait_seconds_bucket{pool="exact",task="other",le="0.01"} 3
crew_task_wait_seconds_bucket{pool="exact",task="other",le="+Inf"} 3
crew_task_wait_seconds_sum{pool="exact",task="other"} 0.004
crew_task_wait_seconds_count{pool="exact",task="other"} 3
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "crew_task_run_seconds", "crew_task_wait_seconds"); err != nil {
		t.Error(err)
	}
}

func TestTaskMetricsUnusedSeriesAreAbsent(t *testing.T) {
	tasks, err := prom.NewTaskMetrics()
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector(t, "idle", tasks)
	if n := testutil.CollectAndCount(c, "crew_task_run_seconds", "crew_task_wait_seconds"); n != 0 {
		t.Errorf("histogram series before any task: %d, want 0", n)
	}
	tasks.Observe(crew.Observation{Name: "x", Run: time.Millisecond, State: crew.Succeeded})
	if n := testutil.CollectAndCount(c, "crew_task_run_seconds", "crew_task_wait_seconds"); n != 2 {
		t.Errorf("histogram series after one named task: %d, want 2 (no unnamed, no other)", n)
	}
}

// TestTaskMetricsCapUnderConcurrency observes many names from many
// goroutines while scraping, and checks that the cap holds and that no
// observation is lost.
func TestTaskMetricsCapUnderConcurrency(t *testing.T) {
	const (
		max        = 10
		goroutines = 8
		names      = 50
		rounds     = 20
	)
	tasks, err := prom.NewTaskMetrics(prom.WithMaxTaskNames(max))
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector(t, "cap", tasks)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	scrapes := make(chan error, 1)
	go func() {
		defer close(scrapes)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := reg.Gather(); err != nil {
				scrapes <- err
				return
			}
		}
	}()
	for g := range goroutines {
		wg.Go(func() {
			for r := range rounds {
				for i := range names {
					name := fmt.Sprintf("task-%d", (i+g+r)%names)
					tasks.Observe(crew.Observation{Name: name, Wait: time.Microsecond, Run: time.Microsecond, State: crew.Succeeded})
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	if err := <-scrapes; err != nil {
		t.Fatalf("scrape during observations: %v", err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := histogramCounts(t, families, "crew_task_run_seconds")
	if len(counts) != max+1 {
		t.Errorf("series: %d (%v), want %d names and other", len(counts), counts, max)
	}
	if _, ok := counts[prom.OtherTask]; !ok {
		t.Errorf("no %q series in %v", prom.OtherTask, counts)
	}
	var total uint64
	for _, n := range counts {
		total += n
	}
	if want := uint64(goroutines * rounds * names); total != want {
		t.Errorf("observations counted: %d, want %d", total, want)
	}
}

func TestTaskMetricsZeroCapSendsEveryNameToOther(t *testing.T) {
	tasks, err := prom.NewTaskMetrics(prom.WithMaxTaskNames(0))
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector(t, "zero", tasks)
	tasks.Observe(crew.Observation{Name: "x", State: crew.Succeeded})
	tasks.Observe(crew.Observation{Name: "", State: crew.Succeeded})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := histogramCounts(t, families, "crew_task_wait_seconds")
	if want := map[string]uint64{prom.OtherTask: 1, "": 1}; !equalCounts(got, want) {
		t.Errorf("counts: %v, want %v", got, want)
	}
}

func TestObserveAllocatesNothing(t *testing.T) {
	tasks, err := prom.NewTaskMetrics(prom.WithMaxTaskNames(1))
	if err != nil {
		t.Fatal(err)
	}
	tasks.Observe(crew.Observation{Name: "known"}) // the first sight of a name allocates
	for _, name := range []string{"known", "", "past-the-cap", prom.OtherTask} {
		o := crew.Observation{Name: name, Wait: time.Millisecond, Run: time.Second, State: crew.Succeeded}
		if n := testing.AllocsPerRun(1000, func() { tasks.Observe(o) }); n != 0 {
			t.Errorf("Observe(%q): %v allocations, want 0", name, n)
		}
	}
}

func TestNewTaskMetricsRefusesMisuse(t *testing.T) {
	tests := []struct {
		name string
		opt  prom.TaskMetricsOption
	}{
		{"nil option", nil},
		{"negative cap", prom.WithMaxTaskNames(-1)},
		{"no run bucket", prom.WithRunBuckets()},
		{"only +Inf", prom.WithWaitBuckets(math.Inf(+1))},
		{"zero bound", prom.WithRunBuckets(0, 1)},
		{"negative bound", prom.WithRunBuckets(-1)},
		{"NaN bound", prom.WithWaitBuckets(math.NaN())},
		{"decreasing", prom.WithWaitBuckets(1, 0.5)},
		{"repeated", prom.WithRunBuckets(1, 1)},
		{"same nanosecond", prom.WithRunBuckets(1e-9, 1.0000001e-9)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := prom.NewTaskMetrics(tt.opt)
			if !errors.Is(err, crew.ErrInvalidOption) || m != nil {
				t.Errorf("NewTaskMetrics: %v, %v; want nil, ErrInvalidOption", m, err)
			}
		})
	}
}
