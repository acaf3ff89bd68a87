package jsjobs

import (
	"context"
	"time"

	"github.com/crew-go/crew/jobs"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes returns the counts so far.
func (r *Runner) Outcomes() Outcomes {
	c := &r.instruments.counts
	return Outcomes{
		Succeeded: c.succeeded.Load(), Failed: c.failed.Load(), TimedOut: c.timedOut.Load(),
		Retried: c.retried.Load(), Snoozed: c.snoozed.Load(),
		Requeued: c.requeued.Load(), Skipped: c.skipped.Load(), Canceled: c.canceled.Load(),
		RetriedByHand: c.retriedByHand.Load(), LateEnds: c.late.Load(),
		Ticks: c.ticks.Load(), TicksSkipped: c.ticksSkipped.Load(),
	}
}

// Collector exports the store's availability as StoreDown sees it, the
// runs of jobs put off for an outage (natsjs_messages_total{outcome=
// "unavailable"} counts them too, by stream), the jobs' run times, the
// counts above by their labels, and each queue as Queues read it at most
// queuesEvery before (queueGauges): the same on every process, as a
// stream's lag.
func (r *Runner) Collector() prometheus.Collector {
	return collector{r.instruments, r.stats, r.Queues}
}

// storeStats are what a store's collector reads of it at a scrape.
type storeStats struct {
	up                      bool   // the store answers (health)
	handbacks, reads, tries uint64 // runs handed back for an outage; hedged reads and the tries they sent
}

// stats reads r's storeStats.
func (r *Runner) stats() storeStats {
	return storeStats{up: !r.health.down.Load(), handbacks: r.health.handbacks.Load(), reads: r.reads.reads.Load(), tries: r.reads.tries.Load()}
}

// collector exports a store's instruments (a Partitioned's partitions
// share theirs), its stats (whether it is up, the jobs it handed back,
// its reads), and its queues.
type collector struct {
	in     *instruments
	stats  func() storeStats
	queues func(context.Context) ([]jobs.QueueInfo, error)
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.in.storeUp
	ch <- c.in.storeHandBacks
	ch <- c.in.storeReads
	ch <- c.in.storeReadTries
	ch <- c.in.queueJobs
	ch <- c.in.queueLimit
	ch <- c.in.queuePaused
	ch <- c.in.queueOldest
	for _, v := range []prometheus.Collector{c.in.runs, c.in.cancels, c.in.backoffs, c.in.reruns, c.in.ticks, c.in.deletes} {
		v.Describe(ch)
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	up := 0.0
	if s.up {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(c.in.storeUp, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(c.in.storeHandBacks, prometheus.CounterValue, float64(s.handbacks))
	ch <- prometheus.MustNewConstMetric(c.in.storeReads, prometheus.CounterValue, float64(s.reads))
	ch <- prometheus.MustNewConstMetric(c.in.storeReadTries, prometheus.CounterValue, float64(s.tries))
	for _, v := range []prometheus.Collector{c.in.runs, c.in.cancels, c.in.backoffs, c.in.reruns, c.in.ticks, c.in.deletes} {
		v.Collect(ch)
	}
	for _, q := range c.in.queues.snapshot(c.queues) {
		ch <- prometheus.MustNewConstMetric(c.in.queueJobs, prometheus.GaugeValue, float64(q.Waiting), q.Name, "waiting")
		ch <- prometheus.MustNewConstMetric(c.in.queueJobs, prometheus.GaugeValue, float64(q.Taken), q.Name, "taken")
		ch <- prometheus.MustNewConstMetric(c.in.queueLimit, prometheus.GaugeValue, float64(q.Limit), q.Name)
		paused := 0.0
		if q.Paused {
			paused = 1
		}
		ch <- prometheus.MustNewConstMetric(c.in.queuePaused, prometheus.GaugeValue, paused, q.Name)
		age := 0.0
		if !q.OldestWaiting.IsZero() {
			age = max(time.Since(q.OldestWaiting).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(c.in.queueOldest, prometheus.GaugeValue, age, q.Name)
	}
}
