package load_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
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
	if r.P50 <= 0 || r.P99 < r.P50 || r.P999 < r.P99 || r.Max < r.P999 || !strings.Contains(r.String(), "p99.9") {
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

// TestRateIsOpenLoop: with -rate a request's latency counts from when it
// was due, so a client that falls behind a slow server shows the delay
// (coordinated omission) and the report counts the late sends.
func TestRateIsOpenLoop(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond)
	}))
	defer srv.Close()
	// One client, a request due every millisecond, each taking 5 ms: the
	// 20th is due at 19 ms and sent at about 95 ms.
	r, err := load.Run(context.Background(), load.Options{URL: srv.URL, Mode: "factorial", Numbers: 1, Requests: 20,
		Concurrency: 1, Rate: 1000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Max < 50*time.Millisecond || r.Late < 10 || !strings.Contains(r.String(), "late") {
		t.Fatalf("a client behind by up to 75 ms: max %v, late %d\n%s", r.Max, r.Late, r)
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []load.Options{
		{URL: "localhost:8080", Mode: "jobs", Numbers: 1, Requests: 1, Concurrency: 1},
		{URL: "http://x", Mode: "all", Numbers: 1, Requests: 1, Concurrency: 1},
		{URL: "http://x", Mode: "jobs", Numbers: 1, Concurrency: 1},
		{URL: "http://x", Mode: "jobs", Numbers: 1, Requests: 1, Duration: time.Second, Concurrency: 1},
		{URL: "http://x", Mode: "jobs", Numbers: 1, Requests: 1, Concurrency: 0},
		{URL: "http://x", Mode: "jobs", Numbers: 1, Requests: 1, Concurrency: 1, Sleep: "20ms-5ms"},
		{URL: "http://x", Mode: "jobs", Numbers: 1, Requests: 1, Concurrency: 1, Sleep: "soon"},
		{URL: "http://x", Mode: "factorial", Numbers: 1, Requests: 1, Concurrency: 1, Wait: true},
		{URL: "http://x", Mode: "jobs", Numbers: 1, Requests: 1, Concurrency: 1, Workers: -1},
	} {
		if _, err := load.Run(context.Background(), o, nil); err == nil {
			t.Errorf("Run(%+v) accepted", o)
		}
	}
}

// TestWaitReportsTheJobsRate: with -wait, every job accepted is asked for
// until it ends; the report counts them, sums their sleeps (spread over
// -sleep's range) and takes the completion from the latest "finished".
func TestWaitReportsTheJobsRate(t *testing.T) {
	var posted, asked atomic.Int64
	start := time.Now()
	var sleeps atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost:
			var spec struct{ Kind, Duration string }
			if err := json.NewDecoder(r.Body).Decode(&spec); err != nil || spec.Kind != "sleep" {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			d, err := time.ParseDuration(spec.Duration)
			if err != nil || d < 5*time.Millisecond || d > 20*time.Millisecond {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			sleeps.Add(int64(d))
			n := posted.Add(1)
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"id":"%016x","state":"queued"}`, n)
		default:
			// Queued on the first ask, then ended at start + its number s.
			n, _ := strconv.ParseUint(strings.TrimPrefix(r.URL.Path, "/v1/jobs/"), 16, 64)
			if asked.Add(1)%2 == 1 {
				fmt.Fprint(w, `{"state":"queued"}`)
				return
			}
			fin := start.Add(time.Duration(n) * time.Second).UTC().Format(time.RFC3339Nano)
			fmt.Fprintf(w, `{"state":"succeeded","finished":%q}`, fin)
		}
	}))
	defer srv.Close()
	r, err := load.Run(context.Background(), load.Options{URL: srv.URL, Mode: "jobs", Numbers: 1, Requests: 40,
		Concurrency: 4, Sleep: "5ms-20ms", Wait: true, Workers: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	j := r.Jobs
	if j == nil || j.Accepted != 40 || j.Ended != 40 || j.Completed != 40 {
		t.Fatalf("jobs report %+v, want 40 accepted and ended", j)
	}
	if j.Work != time.Duration(sleeps.Load()) || j.Ideal() != j.Work/4 {
		t.Fatalf("work %v, ideal %v; the server saw %v of sleeps", j.Work, j.Ideal(), time.Duration(sleeps.Load()))
	}
	if mean := j.Work / 40; mean < 10*time.Millisecond || mean > 15*time.Millisecond {
		t.Fatalf("mean sleep %v, want about 12.5ms over 5ms-20ms", mean)
	}
	if j.Complete < 39*time.Second || j.Complete > 41*time.Second {
		t.Fatalf("complete %v, want the last job's finished (40 s after the start)", j.Complete)
	}
	if !strings.Contains(r.String(), "ideal") {
		t.Fatalf("no ideal line:\n%s", r)
	}
}

// TestWaitOutlivesTheDuration: with -duration, the jobs accepted are still
// awaited after the sending ends (the wait once shared the sending's
// deadline, and every job's record failed with "context deadline
// exceeded").
func TestWaitOutlivesTheDuration(t *testing.T) {
	var posted atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"id":"%016x","state":"queued"}`, posted.Add(1))
			return
		}
		fmt.Fprintf(w, `{"state":"succeeded","finished":%q}`, time.Now().UTC().Format(time.RFC3339Nano))
	}))
	defer srv.Close()
	r, err := load.Run(context.Background(), load.Options{URL: srv.URL, Mode: "jobs", Numbers: 1, Duration: 100 * time.Millisecond,
		Rate: 200, Concurrency: 4, Wait: true, Workers: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if j := r.Jobs; j == nil || j.Accepted == 0 || j.Ended != j.Accepted {
		t.Fatalf("jobs report %+v, want every accepted job ended", j)
	}
}
