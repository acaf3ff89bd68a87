package prom

import (
	"math"
	"testing"
	"time"
)

// TestHistogramSumCarries checks that the nanosecond sum goes on past 2^64
// instead of wrapping to a small number, which Prometheus would take for a
// counter reset.
func TestHistogramSumCarries(t *testing.T) {
	b, err := newBuckets("test", []float64{1})
	if err != nil {
		t.Fatal(err)
	}
	_, h := newHistograms(&b, &b)
	h.cells[h.sum].Store(math.MaxUint64 - 5)
	h.observe(10 * time.Nanosecond)
	if low, high := h.cells[h.sum].Load(), h.cells[h.sum+1].Load(); low != 4 || high != 1 {
		t.Fatalf("sum words: low %d, high %d; want 4 and 1", low, high)
	}
	if got, want := h.sumSeconds(), (0x1p64+4)/1e9; got != want {
		t.Errorf("sum: %v s, want %v s", got, want)
	}
	if n := h.count(); n != 1 {
		t.Errorf("count: %d, want 1", n)
	}
}

// TestBucketBoundsAreInclusive checks the le semantics at the nanosecond.
func TestBucketBoundsAreInclusive(t *testing.T) {
	b, err := newBuckets("test", []float64{0.001, 0.01})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := newHistograms(&b, &b)
	for _, d := range []time.Duration{0, time.Millisecond, time.Millisecond + 1, 10 * time.Millisecond, 10*time.Millisecond + 1, -1} {
		h.observe(d)
	}
	// 0, 1 ms and the negative one (clamped to 0) in le=0.001; 1 ms + 1 ns
	// and 10 ms in le=0.01; 10 ms + 1 ns in +Inf.
	want := []uint64{3, 2, 1}
	for i, w := range want {
		if got := h.bucket(i).Load(); got != w {
			t.Errorf("bucket %d: %d, want %d", i, got, w)
		}
	}
}
