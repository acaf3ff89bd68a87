package jsjobs

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// Collector exports the store's availability as Ready sees it, the runs of
// jobs put off for an outage (natsjs_messages_total{outcome="unavailable"}
// counts them too, by stream), and the jobs' run times.
func (r *Runner) Collector() prometheus.Collector { return storeCollector{r} }

type storeCollector struct{ r *Runner }

var (
	storeUpDesc = prometheus.NewDesc("crewd_job_store_up",
		"1 while the job store (the jobs' stream and the records' bucket) answers this replica, 0 during an outage.", nil, nil)
	storeHandBacksDesc = prometheus.NewDesc("crewd_job_store_unavailable_total",
		"Runs of jobs put off, without costing an attempt, because the job store could not be reached: each job runs again a moment later.", nil, nil)
)

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- storeUpDesc
	ch <- storeHandBacksDesc
	c.r.runs.Describe(ch)
	c.r.cancels.Describe(ch)
	c.r.backoffs.Describe(ch)
	c.r.reruns.Describe(ch)
	c.r.ticks.Describe(ch)
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	up := 1.0
	if _, err := c.r.StoreDown(); err != nil {
		up = 0
	}
	ch <- prometheus.MustNewConstMetric(storeUpDesc, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(storeHandBacksDesc, prometheus.CounterValue, float64(c.r.StoreHandBacks()))
	c.r.runs.Collect(ch)
	c.r.cancels.Collect(ch)
	c.r.backoffs.Collect(ch)
	c.r.reruns.Collect(ch)
	c.r.ticks.Collect(ch)
}

// interrupted labels a run that ended by its context (a hard stop, a lost
// lease): the job is queued again, not ended.
const interrupted = "interrupted"

// newRunHistogram is crewd_job_run_seconds: the pool's
// crew_task_run_seconds{task="job"} by kind and outcome, with the run's
// trace as exemplar.
func newRunHistogram() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "crewd_job_run_seconds",
		Help: "Time a durable job's run took, by kind and how it ended (succeeded, failed, timed_out, interrupted); " +
			"a sampled run leaves its trace id as an exemplar.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1 ms to 4.4 min
	}, []string{"kind", "outcome"})
}

// observeRun records one run's time, its trace as exemplar.
func (r *Runner) observeRun(ctx context.Context, kind, outcome string, d time.Duration) {
	o := r.runs.WithLabelValues(kind, outcome)
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		if e, ok := o.(prometheus.ExemplarObserver); ok {
			e.ObserveWithExemplar(d.Seconds(), prometheus.Labels{"trace_id": sc.TraceID().String()})
			return
		}
	}
	o.Observe(d.Seconds())
}

// newCancelCounter is crewd_jobs_canceled_total: the jobs canceled, by
// the state they were in.
func newCancelCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crewd_jobs_canceled_total",
		Help: "Jobs canceled, by the state they were in when the cancel was recorded (scheduled, queued, running, retrying).",
	}, []string{"state"})
}

// newBackoffCounter is crewd_job_backoffs_total: the runs that left their
// job retrying, by kind and why (failed, timed_out, snoozed).
func newBackoffCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crewd_job_backoffs_total",
		Help: "Runs that left their job retrying after a backoff, by kind and why (failed, timed_out, snoozed).",
	}, []string{"kind", "why"})
}

// newRerunCounter is crewd_jobs_rerun_total: the ended jobs run again by
// Retry, by the state they had ended in.
func newRerunCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crewd_jobs_rerun_total",
		Help: "Ended jobs run again by a retry request (dead letters), by the state they had ended in (failed, timed_out, canceled, not_run).",
	}, []string{"state"})
}

// newTickCounter is crewd_job_ticks_total: periodic jobs' ticks, by
// whether they submitted their job or were skipped (periodic.go).
func newTickCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crewd_job_ticks_total",
		Help: "Ticks of periodic jobs handled here, by outcome: submitted (the tick's job) or skipped (taken after its next tick was due).",
	}, []string{"outcome"})
}
