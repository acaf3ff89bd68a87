package api

import (
	"context"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/prometheus/client_golang/prometheus"
)

// JobCounts is a Prometheus collector of the jobs in each state, as the
// store counts them at scrape time: crewd_jobs{state}, every state
// exported (0 for none), the failed ones being the dead letters; and
// crewd_jobs_counted, 1 when the count answered within its timeout, 0
// when it did not (the store out, or slow), when crewd_jobs is left out
// rather than guessed. Through JetStream every replica counts the same
// shared store: aggregate with max, not sum.
type JobCounts struct {
	lister  jobs.Lister
	timeout time.Duration
}

// CountTimeout bounds a scrape's count of the jobs: well within
// Prometheus's scrape timeout (10 s by default).
const CountTimeout = 2 * time.Second

// NewJobCounts returns the collector of l's counts, each count bounded
// by timeout.
func NewJobCounts(l jobs.Lister, timeout time.Duration) *JobCounts {
	return &JobCounts{lister: l, timeout: timeout}
}

var (
	jobsDesc = prometheus.NewDesc("crewd_jobs",
		"Jobs in the store by state at scrape time (failed: the dead letters, until retried or expired). Replicas share a durable store: aggregate with max.",
		[]string{"state"}, nil)
	countedDesc = prometheus.NewDesc("crewd_jobs_counted",
		"1 if the scrape's count of the jobs by state (crewd_jobs) answered within its timeout, else 0 and crewd_jobs is left out.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *JobCounts) Describe(ch chan<- *prometheus.Desc) {
	ch <- jobsDesc
	ch <- countedDesc
}

// Collect implements prometheus.Collector: one count per scrape.
func (c *JobCounts) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	counts, err := c.lister.Counts(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(countedDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(countedDesc, prometheus.GaugeValue, 1)
	for _, st := range jobs.States {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(counts[st]), string(st))
	}
}
