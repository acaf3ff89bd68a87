package jsjobs

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// partitionMetrics are what a Partitioned exports of each partition
// beside the store's metrics (collector): whether its store answers, the
// submits it stored and those it left for another partition (no answer
// within Failover, or its store out), and its runs put off for an outage.
// A partition's backlog is its stream's consumers' lag, which natsjs
// exports by stream (natsjs_consumer_lag).
type partitionMetrics struct {
	up, submits, handBacks *prometheus.Desc
	stored, left           []atomic.Uint64 // by partition
}

func newPartitionMetrics(ns string, n int) *partitionMetrics {
	return &partitionMetrics{
		up: prometheus.NewDesc(ns+"_job_partition_up",
			"1 while a partition of the job store (its stream and its bucket) answers this process, 0 during its outage.",
			[]string{"partition"}, nil),
		submits: prometheus.NewDesc(ns+"_job_partition_submits_total",
			"Submits a partition was given, by outcome: stored, or left for the next partition (no answer within the failover deadline, or its store out: the job went to another under a new id).",
			[]string{"partition", "outcome"}, nil),
		handBacks: prometheus.NewDesc(ns+"_job_partition_unavailable_total",
			"Runs of a partition's jobs put off, without costing an attempt, because its store could not be reached.",
			[]string{"partition"}, nil),
		stored: make([]atomic.Uint64, n),
		left:   make([]atomic.Uint64, n),
	}
}

// partitionCollector is a Partitioned's Collector: the store's metrics
// and each partition's, of parts.
type partitionCollector struct {
	collector
	parts []*Runner
	m     *partitionMetrics
}

func (c partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	c.collector.Describe(ch)
	m := c.m
	ch <- m.up
	ch <- m.submits
	ch <- m.handBacks
}

func (c partitionCollector) Collect(ch chan<- prometheus.Metric) {
	c.collector.Collect(ch)
	m := c.m
	for k, r := range c.parts {
		label := strconv.Itoa(k)
		up := 1.0
		if r.health.down.Load() {
			up = 0
		}
		ch <- prometheus.MustNewConstMetric(m.up, prometheus.GaugeValue, up, label)
		ch <- prometheus.MustNewConstMetric(m.submits, prometheus.CounterValue, float64(m.stored[k].Load()), label, "stored")
		ch <- prometheus.MustNewConstMetric(m.submits, prometheus.CounterValue, float64(m.left[k].Load()), label, "left")
		ch <- prometheus.MustNewConstMetric(m.handBacks, prometheus.CounterValue, float64(r.health.handbacks.Load()), label)
	}
}
