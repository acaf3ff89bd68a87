package load_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew/service/internal/load"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunCountsEveryAnswer(t *testing.T) {
	var jobs, factorials atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/v1/jobs":
			jobs.Add(1)
			w.WriteHeader(http.StatusAccepted)
		case "/v1/factorial":
			if strings.Count(string(body), "20") != 5 {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			if factorials.Add(1)%10 == 0 {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}
	}))
	defer srv.Close()
	var progress strings.Builder
	r, err := load.Run(context.Background(), load.Options{URL: srv.URL, Mode: "mixed", Numbers: 5, Requests: 200,
		Concurrency: 4, Progress: time.Millisecond}, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 200 || r.Status[202] != 100 || r.Status[200] != 90 || r.Status[503] != 10 || len(r.Errors) != 0 {
		t.Fatalf("report: %+v", r)
	}
	if r.P50 <= 0 || r.P99 < r.P50 || r.Max < r.P99 || !strings.Contains(r.String(), "p99") {
		t.Fatalf("latencies: %+v\n%s", r, r)
	}
	// A rate of 200/s for 20 requests takes about 100 ms, not less.
	start := time.Now()
	if _, err := load.Run(context.Background(), load.Options{URL: srv.URL, Mode: "jobs", Numbers: 1, Requests: 20, Concurrency: 8, Rate: 200}, nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 90*time.Millisecond {
		t.Fatalf("20 requests at 200/s took %v", d)
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []load.Options{
		{URL: "localhost:8080", Mode: "jobs", Numbers: 1, Requests: 1, Concurrency: 1},
		{URL: "http://x", Mode: "all", Numbers: 1, Requests: 1, Concurrency: 1},
		{URL: "http://x", Mode: "jobs", Numbers: 1, Concurrency: 1},
		{URL: "http://x", Mode: "jobs", Numbers: 1, Requests: 1, Duration: time.Second, Concurrency: 1},
		{URL: "http://x", Mode: "jobs", Numbers: 1, Requests: 1, Concurrency: 0},
	} {
		if _, err := load.Run(context.Background(), o, nil); err == nil {
			t.Errorf("Run(%+v) accepted", o)
		}
	}
}
