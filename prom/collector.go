package prom

import (
	"github.com/crew-go/crew"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector is a prometheus.Collector over one crew.Pool. Each scrape takes
// one pool.Stats() snapshot and sends its gauges and counters, so the
// numbers of a scrape agree with each other; with WithTaskMetrics it also
// sends the run-time and queue-wait histograms by task name. Every series
// carries the pool's name (crew.WithName) as the label pool.
//
// The pool pays nothing for the gauges and counters between scrapes: they
// are the pool's own counts. Only the histograms cost the pool anything,
// in its observer (see TaskMetrics).
type Collector struct {
	pool  *crew.Pool
	tasks *TaskMetrics

	workers       *prometheus.Desc
	busy          *prometheus.Desc
	maxWorkers    *prometheus.Desc
	queueLength   *prometheus.Desc
	queueCapacity *prometheus.Desc
	waiting       *prometheus.Desc
	submitted     *prometheus.Desc
	outcomes      *prometheus.Desc
	run           *prometheus.Desc
	wait          *prometheus.Desc
}

// CollectorOption configures NewCollector. Options are created by the
// functions of this package only.
type CollectorOption interface {
	apply(*Collector) error
}

type collectorOptionFunc func(*Collector) error

func (f collectorOptionFunc) apply(c *Collector) error { return f(c) }

// WithTaskMetrics makes the collector export the histograms of m, which
// must be the observer of the collector's pool. A TaskMetrics may be given
// to one collector only: NewCollector refuses it the second time, as two
// pools' tasks in one histogram would be counted under both pools' names.
func WithTaskMetrics(m *TaskMetrics) CollectorOption {
	return collectorOptionFunc(func(c *Collector) error {
		if m == nil {
			return invalid("nil TaskMetrics")
		}
		c.tasks = m
		return nil
	})
}

// outcomes are the outcome label values: the terminal states of accepted
// tasks, then rejected for refusals at submission.
var outcomes = [...]string{
	crew.Succeeded.String(), crew.Failed.String(), crew.Panicked.String(), crew.TimedOut.String(),
	crew.Canceled.String(), crew.Dropped.String(), "rejected",
}

// NewCollector returns a collector over pool. It returns an error wrapping
// crew.ErrInvalidOption for a nil pool or option, and for a TaskMetrics
// already given to another collector.
func NewCollector(pool *crew.Pool, opts ...CollectorOption) (*Collector, error) {
	if pool == nil {
		return nil, invalid("nil pool")
	}
	c := &Collector{pool: pool}
	for _, o := range opts {
		if o == nil {
			return nil, invalid("nil CollectorOption")
		}
		if err := o.apply(c); err != nil {
			return nil, err
		}
	}
	if c.tasks != nil && !c.tasks.attached.CompareAndSwap(false, true) {
		return nil, invalid("TaskMetrics already given to another collector")
	}
	pl := prometheus.Labels{"pool": pool.Name()}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("crew_"+name, help, labels, pl)
	}
	c.workers = desc("workers", "Number of live worker goroutines.")
	c.busy = desc("workers_busy", "Number of workers running a task.")
	c.maxWorkers = desc("workers_max", "Largest number of workers, set by WithWorkers or Resize.")
	c.queueLength = desc("queue_length", "Number of tasks in the queue, waiting for a worker.")
	c.queueCapacity = desc("queue_capacity", "Largest number of tasks the queue holds.")
	c.waiting = desc("submitters_waiting", "Number of submitters blocked until the queue has room.")
	c.submitted = desc("tasks_submitted_total", "Tasks submitted, accepted or refused.")
	c.outcomes = desc("tasks_total", "Tasks by outcome: a terminal state of an accepted task (dropped: removed from the queue by shutdown), or rejected: refused at submission.", "outcome")
	c.run = desc("task_run_seconds", "Time task functions ran, by task name.", "task")
	c.wait = desc("task_wait_seconds", "Time tasks waited in the queue before they started or were dropped, by task name.", "task")
	return c, nil
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.workers
	ch <- c.busy
	ch <- c.maxWorkers
	ch <- c.queueLength
	ch <- c.queueCapacity
	ch <- c.waiting
	ch <- c.submitted
	ch <- c.outcomes
	if c.tasks != nil {
		ch <- c.run
		ch <- c.wait
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stats()
	gauge := func(d *prometheus.Desc, v int) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	gauge(c.workers, s.Workers)
	gauge(c.busy, s.Busy)
	gauge(c.maxWorkers, s.MaxWorkers)
	gauge(c.queueLength, s.Queued)
	gauge(c.queueCapacity, s.QueueCapacity)
	gauge(c.waiting, s.Waiting)
	ch <- prometheus.MustNewConstMetric(c.submitted, prometheus.CounterValue, float64(s.Submitted))
	counts := [len(outcomes)]uint64{s.Succeeded, s.Failed, s.Panicked, s.TimedOut, s.Canceled, s.Dropped, s.Rejected}
	for i, outcome := range outcomes {
		ch <- prometheus.MustNewConstMetric(c.outcomes, prometheus.CounterValue, float64(counts[i]), outcome)
	}
	if c.tasks != nil {
		c.tasks.collect(ch, c.run, c.wait)
	}
}
