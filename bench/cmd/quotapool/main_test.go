package main

import (
	"testing"
	"time"
)

// TestRun: a short run at each bound counts every task and orders its
// percentiles.
func TestRun(t *testing.T) {
	for _, w := range []string{"", "quota", "1"} {
		r, err := run(options{rate: 200, iters: 10, workers: w, duration: 100 * time.Millisecond, poisson: w == "1"})
		if err != nil {
			t.Fatal(err)
		}
		if r.tasks != 20 || r.bound < 1 || r.p50 <= 0 || r.p99 < r.p50 || r.p999 < r.p99 || r.pmax < r.p999 {
			t.Fatalf("-workers %q: %v", w, r)
		}
	}
	if _, err := run(options{rate: 1, workers: "lots", duration: time.Second}); err == nil {
		t.Fatal("-workers lots: no error")
	}
}
