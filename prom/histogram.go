package prom

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/crew-go/crew"
	"github.com/prometheus/client_golang/prometheus"
)

// defaultBuckets are the upper bounds, in seconds, of both histograms unless
// WithRunBuckets or WithWaitBuckets says otherwise: from 100 µs, the cost of
// a few hand-offs, to a minute, past the long tasks of seed 000 (1-30 s).
var defaultBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
}

// buckets are a histogram's upper bounds, kept both in seconds for the
// exposition and in nanoseconds so that Observe compares integers.
type buckets struct {
	seconds []float64
	nanos   []time.Duration
}

func newBuckets(option string, bounds []float64) (buckets, error) {
	if n := len(bounds); n > 0 && math.IsInf(bounds[n-1], +1) {
		bounds = bounds[:n-1] // the +Inf bucket is always there
	}
	if len(bounds) == 0 {
		return buckets{}, invalid("%s: no bucket", option)
	}
	b := buckets{seconds: make([]float64, len(bounds)), nanos: make([]time.Duration, len(bounds))}
	for i, s := range bounds {
		if math.IsNaN(s) || math.IsInf(s, 0) || s <= 0 {
			return buckets{}, invalid("%s: bound %v, want a positive number of seconds", option, s)
		}
		if i > 0 && s <= bounds[i-1] {
			return buckets{}, invalid("%s: bounds not increasing at %v", option, s)
		}
		b.seconds[i] = s
		b.nanos[i] = time.Duration(math.Round(s * 1e9))
		if i > 0 && b.nanos[i] == b.nanos[i-1] {
			return buckets{}, invalid("%s: bounds %v and %v are the same nanosecond", option, bounds[i-1], s)
		}
	}
	return b, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: prom: "+format, append([]any{crew.ErrInvalidOption}, args...)...)
}

// histogram is a lock-free histogram of durations. Observe adds to one
// bucket and to the sum, both atomically; the count is the total of the
// buckets, so a scrape always shows a count equal to its +Inf bucket. A
// scrape that races an observation may show its bucket without its sum, or
// the reverse, for that one scrape.
type histogram struct {
	b      *buckets
	counts []atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sum    atomic.Uint64   // float64 bits of the sum in nanoseconds
}

func newHistogram(b *buckets) histogram {
	return histogram{b: b, counts: make([]atomic.Uint64, len(b.nanos)+1)}
}

func (h *histogram) observe(d time.Duration) {
	if d < 0 {
		d = 0 // a clock is monotonic; this is only a guard
	}
	// A linear scan: task durations cluster, so the loop is short and its
	// branches predictable, as in client_golang below 35 buckets.
	i := 0
	for ; i < len(h.b.nanos) && d > h.b.nanos[i]; i++ {
	}
	h.counts[i].Add(1)
	// The sum is a float64 updated by compare-and-swap, as in client_golang:
	// an integer sum of nanoseconds would wrap after 584 years of task time,
	// which a thousand busy workers accumulate in about 200 days.
	for {
		old := h.sum.Load()
		next := math.Float64bits(math.Float64frombits(old) + float64(d))
		if h.sum.CompareAndSwap(old, next) {
			return
		}
	}
}

func (h *histogram) count() uint64 {
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	return n
}

// metric returns the histogram as a const metric of desc.
func (h *histogram) metric(desc *prometheus.Desc, labelValues ...string) prometheus.Metric {
	cumulative := make(map[float64]uint64, len(h.b.seconds))
	var n uint64
	for i, upper := range h.b.seconds {
		n += h.counts[i].Load()
		cumulative[upper] = n
	}
	n += h.counts[len(h.b.seconds)].Load()
	sum := math.Float64frombits(h.sum.Load()) / 1e9
	return prometheus.MustNewConstHistogram(desc, n, sum, cumulative, labelValues...)
}
