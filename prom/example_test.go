package prom_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/prom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
)

// Example wires a pool to Prometheus: the task histograms first, as the
// pool's observer, then the pool, then the collector over both. Serve reg
// with promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).
func Example() {
	tasks, err := prom.NewTaskMetrics()
	if err != nil {
		panic(err)
	}
	pool, err := crew.New(crew.WithName("images"), crew.WithObserver(tasks.Observe))
	if err != nil {
		panic(err)
	}
	collector, err := prom.NewCollector(pool, prom.WithTaskMetrics(tasks))
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector)

	for range 3 {
		_ = pool.Go(func() { /* resize an image */ }, crew.Named("resize"))
	}
	_ = pool.Go(func() { panic("corrupt image") }, crew.Named("resize"))
	// Once Shutdown returns, every task has been counted and observed.
	if err := pool.Shutdown(context.Background(), crew.Drain); err != nil {
		panic(err)
	}

	printLines(reg, "crew_tasks_total", `outcome="succeeded"`, `outcome="panicked"`)
	printLines(reg, "crew_task_run_seconds", "_count")
	// Output:
	// crew_tasks_total{outcome="panicked",pool="images"} 1
	// crew_tasks_total{outcome="succeeded",pool="images"} 3
	// crew_task_run_seconds_count{pool="images",task="resize"} 4
}

// The collector reads the pool's Stats once per scrape; here an idle pool.
func ExampleCollector() {
	pool, err := crew.New(crew.WithName("mail"), crew.WithWorkers(4), crew.WithQueueSize(100))
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	collector, err := prom.NewCollector(pool)
	if err != nil {
		panic(err)
	}
	text, err := testutil.CollectAndFormat(collector, expfmt.TypeTextPlain, "crew_workers_max", "crew_queue_capacity")
	if err != nil {
		panic(err)
	}
	fmt.Print(string(text))
	// Output:
	// # HELP crew_queue_capacity Largest number of tasks the queue holds.
	// # TYPE crew_queue_capacity gauge
	// crew_queue_capacity{pool="mail"} 100
	// # HELP crew_workers_max Largest number of workers, set by WithWorkers or Resize.
	// # TYPE crew_workers_max gauge
	// crew_workers_max{pool="mail"} 4
}

// Observe takes what the pool reports of each finished task; here it is
// called directly, with made-up durations, to show the histograms.
func ExampleTaskMetrics() {
	tasks, err := prom.NewTaskMetrics(prom.WithRunBuckets(0.1, 1), prom.WithWaitBuckets(0.001))
	if err != nil {
		panic(err)
	}
	pool, err := crew.New(crew.WithName("reports"), crew.WithObserver(tasks.Observe))
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	collector, err := prom.NewCollector(pool, prom.WithTaskMetrics(tasks))
	if err != nil {
		panic(err)
	}

	tasks.Observe(crew.Observation{Name: "pdf", Wait: 200 * time.Microsecond, Run: 300 * time.Millisecond, State: crew.Succeeded})
	tasks.Observe(crew.Observation{Name: "pdf", Wait: 5 * time.Millisecond, Run: 2 * time.Second, State: crew.TimedOut})

	text, err := testutil.CollectAndFormat(collector, expfmt.TypeTextPlain, "crew_task_run_seconds")
	if err != nil {
		panic(err)
	}
	fmt.Print(string(text))
	// Output:
	// # HELP crew_task_run_seconds Time task functions ran, by task name.
	// # TYPE crew_task_run_seconds histogram
	// crew_task_run_seconds_bucket{pool="reports",task="pdf",le="0.1"} 0
	// crew_task_run_seconds_bucket{pool="reports",task="pdf",le="1"} 1
	// crew_task_run_seconds_bucket{pool="reports",task="pdf",le="+Inf"} 2
	// crew_task_run_seconds_sum{pool="reports",task="pdf"} 2.3
	// crew_task_run_seconds_count{pool="reports",task="pdf"} 2
}

// WithMaxTaskNames bounds the series: names past the cap share
// task="other", and unnamed tasks have task="".
func ExampleTaskMetricsOption() {
	tasks, err := prom.NewTaskMetrics(prom.WithMaxTaskNames(2))
	if err != nil {
		panic(err)
	}
	pool, err := crew.New(crew.WithName("jobs"), crew.WithObserver(tasks.Observe))
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	collector, err := prom.NewCollector(pool, prom.WithTaskMetrics(tasks))
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector)

	for _, name := range []string{"a", "b", "c", "d", "a", ""} {
		tasks.Observe(crew.Observation{Name: name, State: crew.Succeeded})
	}
	printLines(reg, "crew_task_wait_seconds", "_count")
	// Output:
	// crew_task_wait_seconds_count{pool="jobs",task=""} 1
	// crew_task_wait_seconds_count{pool="jobs",task="a"} 2
	// crew_task_wait_seconds_count{pool="jobs",task="b"} 1
	// crew_task_wait_seconds_count{pool="jobs",task="other"} 2
}

// A TaskMetrics belongs to one pool, so a second collector may not take it.
func ExampleCollectorOption() {
	tasks, err := prom.NewTaskMetrics()
	if err != nil {
		panic(err)
	}
	pool, err := crew.New(crew.WithObserver(tasks.Observe))
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	_, err = prom.NewCollector(pool, prom.WithTaskMetrics(tasks))
	fmt.Println(err)
	_, err = prom.NewCollector(pool, prom.WithTaskMetrics(tasks))
	fmt.Println(errors.Is(err, crew.ErrInvalidOption), err)
	// Output:
	// <nil>
	// true crew: invalid option: prom: TaskMetrics already given to another collector
}

// printLines prints the sample lines of the metric family name, in the
// text format, that contain any of parts.
func printLines(reg *prometheus.Registry, name string, parts ...string) {
	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	for _, f := range families {
		if f.GetName() == name {
			if _, err := expfmt.MetricFamilyToText(&buf, f); err != nil {
				panic(err)
			}
		}
	}
	lines := bufio.NewScanner(&buf)
	for lines.Scan() {
		line := lines.Text()
		for _, p := range parts {
			if !strings.HasPrefix(line, "#") && strings.Contains(line, p) {
				fmt.Println(line)
				break
			}
		}
	}
}
