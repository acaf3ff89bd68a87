package prom_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/prom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// poolMetrics are the names of the gauges and counters read from Stats.
var poolMetrics = []string{
	"crew_workers", "crew_workers_busy", "crew_workers_max",
	"crew_queue_length", "crew_queue_capacity", "crew_submitters_waiting",
	"crew_tasks_submitted_total", "crew_tasks_total",
}

func TestCollectorExposesHeldPoolExactly(t *testing.T) {
	s := newScene(t, "orders", 2, 4, 3)
	c, err := prom.NewCollector(s.pool, prom.WithTaskMetrics(s.tasks))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	const want = `
# HELP crew_queue_capacity Largest number of tasks the queue holds.
# TYPE crew_queue_capacity gauge
crew_queue_capacity{pool="orders"} 4
# HELP crew_queue_length Number of tasks in the queue, waiting for a worker.
# TYPE crew_queue_length gauge
crew_queue_length{pool="orders"} 4
# HELP crew_submitters_waiting Number of submitters blocked until the queue has room.
# TYPE crew_submitters_waiting gauge
crew_submitters_waiting{pool="orders"} 3
# HELP crew_tasks_submitted_total Tasks submitted, accepted or refused.
# TYPE crew_tasks_submitted_total counter
crew_tasks_submitted_total{pool="orders"} 13
# HELP crew_tasks_total Tasks by outcome: a terminal state of an accepted task (dropped: removed from the queue by shutdown), or rejected: refused at submission.
# TYPE crew_tasks_total counter
crew_tasks_total{outcome="canceled",pool="orders"} 0
crew_tasks_total{outcome="failed",pool="orders"} 1
crew_tasks_total{outcome="panicked",pool="orders"} 1
crew_tasks_total{outcome="dropped",pool="orders"} 0
crew_tasks_total{outcome="rejected",pool="orders"} 1
crew_tasks_total{outcome="succeeded",pool="orders"} 3
crew_tasks_total{outcome="timed_out",pool="orders"} 1
# HELP crew_workers Number of live worker goroutines.
# TYPE crew_workers gauge
crew_workers{pool="orders"} 2
# HELP crew_workers_busy Number of workers running a task.
# TYPE crew_workers_busy gauge
crew_workers_busy{pool="orders"} 2
# HELP crew_workers_max Largest number of workers, set by WithWorkers or Resize.
# TYPE crew_workers_max gauge
crew_workers_max{pool="orders"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), poolMetrics...); err != nil {
		t.Error(err)
	}
	// The same through CollectAndCompare, which registers the collector on
	// a pedantic registry of its own.
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), poolMetrics...); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}

	// The histograms count the finished tasks by name, the run time only of
	// those whose function ran.
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	wantCounts := map[string]uint64{"ok": 3, "boom": 1, "fail": 1, "slow": 1}
	for _, name := range []string{"crew_task_run_seconds", "crew_task_wait_seconds"} {
		got := histogramCounts(t, families, name)
		if !equalCounts(got, wantCounts) {
			t.Errorf("%s counts by task: %v, want %v", name, got, wantCounts)
		}
	}
}

// TestCollectorOutcomesAfterShutdown checks that tasks dropped by a soft
// shutdown are counted as dropped, apart from refusals, observed for their wait and not for a
// run time.
func TestCollectorOutcomesAfterShutdown(t *testing.T) {
	s := newScene(t, "batch", 1, 3, 0)
	c, err := prom.NewCollector(s.pool, prom.WithTaskMetrics(s.tasks))
	if err != nil {
		t.Fatal(err)
	}
	// Shutdown drops the three queued tasks at once, then waits for the held
	// one, which finishes when the scene releases it.
	done := make(chan error, 1)
	go func() { done <- s.pool.Shutdown(t.Context(), crew.Soft) }()
	deadline := time.Now().Add(10 * time.Second)
	for s.pool.Stats().Dropped < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("dropped: %d, want 3", s.pool.Stats().Dropped)
		}
		runtime.Gosched()
	}
	s.release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	const want = `
# HELP crew_tasks_total Tasks by outcome: a terminal state of an accepted task (dropped: removed from the queue by shutdown), or rejected: refused at submission.
# TYPE crew_tasks_total counter
crew_tasks_total{outcome="canceled",pool="batch"} 0
crew_tasks_total{outcome="failed",pool="batch"} 1
crew_tasks_total{outcome="panicked",pool="batch"} 1
crew_tasks_total{outcome="dropped",pool="batch"} 3
crew_tasks_total{outcome="rejected",pool="batch"} 1
crew_tasks_total{outcome="succeeded",pool="batch"} 4
crew_tasks_total{outcome="timed_out",pool="batch"} 1
# HELP crew_workers Number of live worker goroutines.
# TYPE crew_workers gauge
crew_workers{pool="batch"} 0
# HELP crew_queue_length Number of tasks in the queue, waiting for a worker.
# TYPE crew_queue_length gauge
crew_queue_length{pool="batch"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "crew_tasks_total", "crew_workers", "crew_queue_length"); err != nil {
		t.Error(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	run := histogramCounts(t, families, "crew_task_run_seconds")
	wait := histogramCounts(t, families, "crew_task_wait_seconds")
	if run["queued"] != 0 || wait["queued"] != 3 {
		t.Errorf("dropped tasks: run count %d, wait count %d; want 0 and 3", run["queued"], wait["queued"])
	}
	if run["held"] != 1 || wait["held"] != 1 {
		t.Errorf("held task: run count %d, wait count %d; want 1 and 1", run["held"], wait["held"])
	}
}

func TestCollectorWithoutTaskMetricsHasNoHistograms(t *testing.T) {
	pool, err := crew.New(crew.WithName("bare"), crew.WithWorkers(3), crew.WithQueueSize(8))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	c, err := prom.NewCollector(pool)
	if err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c); n != 7+7 { // 7 other metrics, tasks_total has 7 series
		t.Errorf("series: %d, want 14", n)
	}
	if n := testutil.CollectAndCount(c, "crew_task_run_seconds", "crew_task_wait_seconds"); n != 0 {
		t.Errorf("histogram series without TaskMetrics: %d, want 0", n)
	}
}

func TestNewCollectorRefusesMisuse(t *testing.T) {
	pool, err := crew.New()
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tasks, err := prom.NewTaskMetrics()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prom.NewCollector(pool, prom.WithTaskMetrics(tasks)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		pool *crew.Pool
		opts []prom.CollectorOption
	}{
		{"nil pool", nil, nil},
		{"nil option", pool, []prom.CollectorOption{nil}},
		{"nil TaskMetrics", pool, []prom.CollectorOption{prom.WithTaskMetrics(nil)}},
		{"TaskMetrics given twice", pool, []prom.CollectorOption{prom.WithTaskMetrics(tasks)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := prom.NewCollector(tt.pool, tt.opts...)
			if !errors.Is(err, crew.ErrInvalidOption) || c != nil {
				t.Errorf("NewCollector: %v, %v; want nil, ErrInvalidOption", c, err)
			}
		})
	}
}

// histogramCounts returns the sample count of each series of the histogram
// family name, by task label.
func histogramCounts(t *testing.T, families []*dto.MetricFamily, name string) map[string]uint64 {
	t.Helper()
	counts := map[string]uint64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "task" {
					counts[l.GetValue()] = m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return counts
}

func equalCounts(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
