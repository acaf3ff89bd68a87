package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestBenchRuns runs every contender on a few messages: the benchmark
// works, and each of our consumers (and the floor) acks everything it is
// given.
func TestBenchRuns(t *testing.T) {
	cfg := config{messages: 300, concurrency: 4, latencyFor: 200 * time.Millisecond, rounds: 1}
	res, err := run(cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2*len(contenders) {
		t.Fatalf("%d results, want %d", len(res), 2*len(contenders))
	}
	for _, r := range res {
		if r.perSecond <= 0 || r.p50 <= 0 || r.p99 < r.p50 {
			t.Errorf("%s: %+v", r.contender, r)
		}
	}
	if tab := table(cfg, res); !strings.Contains(tab, "| 1ms | crew") {
		t.Errorf("table:\n%s", tab)
	}
}
