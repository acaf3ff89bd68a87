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
// a few hand-offs, to a minute, past the long tasks of the goapp worker-pool article (1-30 s).
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

// histogram is a lock-free histogram of durations. Observe makes two
// atomic adds, one to its bucket and one to the sum; the count is the total
// of the buckets, so a scrape always shows a count equal to its +Inf bucket.
// A scrape that races an observation may show its bucket without its sum,
// or the reverse, for that one scrape.
//
// A task's two histograms, run time and queue wait, share one array of
// cells, interleaved: the two sums (two words each: nanoseconds, then how
// many times they wrapped), then the buckets, not cumulative, in pairs, run
// then wait, the last pair for +Inf. The length is rounded up to whole
// 64-byte cache lines, and Go's allocator places such an array on a line
// boundary, so the sums and the first two buckets of both histograms (up to
// 250 µs with the default bounds) share one cache line: a short task's
// observation moves one line between the cores of two workers, not six.
type histogram struct {
	b     *buckets
	cells []atomic.Uint64 // shared with the task's other histogram
	sum   int             // the sum's low word; the high word follows
	first int             // bucket i is cells[first+2*i]
}

// newHistograms returns the run and wait histograms of one task name.
func newHistograms(run, wait *buckets) (histogram, histogram) {
	pairs := max(len(run.nanos), len(wait.nanos)) + 1
	cells := make([]atomic.Uint64, (4+2*pairs+7)/8*8)
	return histogram{b: run, cells: cells, sum: 0, first: 4},
		histogram{b: wait, cells: cells, sum: 2, first: 5}
}

func (h *histogram) bucket(i int) *atomic.Uint64 { return &h.cells[h.first+2*i] }

func (h *histogram) observe(d time.Duration) {
	if d < 0 {
		d = 0 // a clock is monotonic; this is only a guard
	}
	// A linear scan: task durations cluster, so the loop is short and its
	// branches predictable, as in client_golang below 35 buckets.
	i := 0
	for ; i < len(h.b.nanos) && d > h.b.nanos[i]; i++ {
	}
	h.bucket(i).Add(1)
	// An integer sum is one add where a float64 needs a compare-and-swap
	// loop, which two workers observing at once make retry. 2^64 ns is 584
	// years of task time, which a thousand busy workers accumulate in about
	// 200 days: the carry goes to a second word. A scrape between the wrap
	// and the carry may show a sum 584 years short, once.
	if v := uint64(d); h.cells[h.sum].Add(v) < v {
		h.cells[h.sum+1].Add(1)
	}
}

func (h *histogram) count() uint64 {
	var n uint64
	for i := range len(h.b.nanos) + 1 {
		n += h.bucket(i).Load()
	}
	return n
}

func (h *histogram) sumSeconds() float64 {
	high := h.cells[h.sum+1].Load()
	low := h.cells[h.sum].Load()
	return (float64(high)*0x1p64 + float64(low)) / 1e9
}

// metric returns the histogram as a const metric of desc.
func (h *histogram) metric(desc *prometheus.Desc, labelValues ...string) prometheus.Metric {
	cumulative := make(map[float64]uint64, len(h.b.seconds))
	var n uint64
	for i, upper := range h.b.seconds {
		n += h.bucket(i).Load()
		cumulative[upper] = n
	}
	n += h.bucket(len(h.b.seconds)).Load()
	return prometheus.MustNewConstHistogram(desc, n, h.sumSeconds(), cumulative, labelValues...)
}
