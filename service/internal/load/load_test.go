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
	"sync"
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

// TestPostsSpreadOverReplicas: with several URLs the posts go to each in
// turn, as a Service spreads them: 30 posts, 10 a replica.
func TestPostsSpreadOverReplicas(t *testing.T) {
	var posts [3]atomic.Int64
	var urls []string
	for i := range posts {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			posts[i].Add(1)
			w.WriteHeader(http.StatusAccepted)
		}))
		defer srv.Close()
		urls = append(urls, srv.URL)
	}
	r, err := load.Run(context.Background(), load.Options{URL: strings.Join(urls, ","), Mode: "jobs", Numbers: 1, Requests: 30, Concurrency: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status[202] != 30 || posts[0].Load() != 10 || posts[1].Load() != 10 || posts[2].Load() != 10 {
		t.Fatalf("30 posts over three replicas: %d, %d, %d accepted of %d; want 10 each", posts[0].Load(), posts[1].Load(), posts[2].Load(), r.Status[202])
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []load.Options{
		{URL: "localhost:8080", Mode: "jobs", Numbers: 1, Requests: 1, Concurrency: 1},
		{URL: "http://x,localhost:8080", Mode: "jobs", Numbers: 1, Requests: 1, Concurrency: 1},
		{URL: "http://x,", Mode: "jobs", Numbers: 1, Requests: 1, Concurrency: 1},
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

// fakeCrewd is a crewd for -wait: it accepts every job with the next
// number as its id, answers GET /v1/jobs/counts with counts(ask), ask
// counting its asks from 0 (404 when counts is nil), and job n's record
// with record(n). It notes whether the first ask of the counts came before
// the first post, the most counts asks in flight at once, and the reads of
// a record made before ended was set.
type fakeCrewd struct {
	counts func(ask int64) string
	record func(n uint64) string
	ended  atomic.Bool // set by counts when it answers that the jobs ended

	posted, asks, reads, early atomic.Int64
	askedFirst                 atomic.Bool
	mu                         sync.Mutex
	inFlight, maxInFlight      int
}

func (f *fakeCrewd) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost:
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"id":"%016x","state":"queued"}`, f.posted.Add(1))
	case r.URL.Path == "/v1/jobs/counts":
		if f.counts == nil {
			http.NotFound(w, r)
			return
		}
		f.mu.Lock()
		f.inFlight++
		f.maxInFlight = max(f.maxInFlight, f.inFlight)
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			f.inFlight--
			f.mu.Unlock()
		}()
		ask := f.asks.Add(1) - 1
		if ask == 0 && f.posted.Load() == 0 {
			f.askedFirst.Store(true)
		}
		time.Sleep(time.Millisecond) // long enough for a second ask to overlap, if one were sent
		answer := f.counts(ask)
		if answer == "" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, answer)
	default:
		if !f.ended.Load() {
			f.early.Add(1)
		}
		f.reads.Add(1)
		n, _ := strconv.ParseUint(strings.TrimPrefix(r.URL.Path, "/v1/jobs/"), 16, 64)
		fmt.Fprint(w, f.record(n))
	}
}

// countsJSON is GET /v1/jobs/counts's answer with the states in n and
// every other state 0.
func countsJSON(n map[string]int) string {
	all := map[string]int{}
	for _, st := range []string{"scheduled", "queued", "running", "retrying", "succeeded", "failed", "timed_out", "canceled", "not_run"} {
		all[st] = n[st]
	}
	b, _ := json.Marshal(map[string]any{"counts": all})
	return string(b)
}

// endedAt is a record that ended at start + n s: job 3 timed out, every
// other one succeeded.
func endedAt(start time.Time) func(n uint64) string {
	return func(n uint64) string {
		state := "succeeded"
		if n == 3 {
			state = "timed_out"
		}
		fin := start.Add(time.Duration(n) * time.Second).UTC().Format(time.RFC3339Nano)
		return fmt.Sprintf(`{"state":%q,"finished":%q}`, state, fin)
	}
}

// TestWaitAsksTheCountsWhileTheJobsRun: with crewd's counts, -wait reads
// them before the first post, then only them, one at a time, while the
// jobs run; no job's record is read until the ended jobs have grown by as
// many as were accepted (other clients' jobs still live), and the report
// comes from the records.
func TestWaitAsksTheCountsWhileTheJobsRun(t *testing.T) {
	const jobs, k = 30, 4 // the k-th ask after the baseline says ended
	start := time.Now()
	f := &fakeCrewd{record: endedAt(start)}
	f.counts = func(ask int64) string {
		// Before: 9 ended and 3 of other clients' jobs running, which
		// stay running throughout.
		switch {
		case ask == 0:
			return countsJSON(map[string]int{"succeeded": 7, "failed": 2, "running": 3})
		case ask < k-1:
			return countsJSON(map[string]int{"succeeded": 7, "failed": 2, "running": 3, "queued": jobs})
		case ask == k-1: // all but one ended: not enough
			return countsJSON(map[string]int{"succeeded": 7 + jobs - 2, "failed": 2, "timed_out": 1, "running": 4})
		}
		f.ended.Store(true)
		return countsJSON(map[string]int{"succeeded": 7 + jobs - 1, "failed": 2, "timed_out": 1, "running": 3})
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	r, err := load.Run(context.Background(), load.Options{URL: srv.URL, Mode: "jobs", Numbers: 1, Requests: jobs,
		Concurrency: 4, Wait: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.early.Load(); n > 0 {
		t.Fatalf("%d GET /v1/jobs/{id} before the counts said the jobs ended", n)
	}
	f.mu.Lock()
	most := f.maxInFlight
	f.mu.Unlock()
	if !f.askedFirst.Load() || f.asks.Load() != k+1 || most != 1 {
		t.Fatalf("counts asked first %v, %d times (want %d), at most %d at once (want 1)",
			f.askedFirst.Load(), f.asks.Load(), k+1, most)
	}
	if f.reads.Load() != jobs {
		t.Fatalf("%d reads of records, want one per job (%d)", f.reads.Load(), jobs)
	}
	j := r.Jobs
	if j == nil || j.Accepted != jobs || j.Ended != jobs || j.Completed != jobs-1 {
		t.Fatalf("jobs report %+v, want %d accepted and ended, one timed out", j, jobs)
	}
	if j.Complete < (jobs-1)*time.Second || j.Complete > (jobs+1)*time.Second {
		t.Fatalf("complete %v, want the last job's finished (%d s after the start)", j.Complete, jobs)
	}
}

// TestWaitWithoutCounts: a crewd that does not answer the counts (an
// older one's 404), or whose counts fail during the wait, still has every
// job awaited through its record, each queued on its first read.
func TestWaitWithoutCounts(t *testing.T) {
	for _, c := range []struct {
		name   string
		counts func(ask int64) string
		asks   int64
	}{
		{"404", nil, 0},
		{"failing during the wait", func(ask int64) string {
			if ask == 0 {
				return countsJSON(nil)
			}
			return ""
		}, 2},
		{"not every state named", func(int64) string { return `{"counts":{"queued":0,"succeeded":0}}` }, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			const jobs = 20
			start := time.Now()
			var mu sync.Mutex
			seen := map[uint64]bool{}
			f := &fakeCrewd{counts: c.counts}
			f.record = func(n uint64) string {
				mu.Lock()
				defer mu.Unlock()
				if !seen[n] {
					seen[n] = true
					return `{"state":"queued"}`
				}
				return endedAt(start)(n)
			}
			srv := httptest.NewServer(f)
			defer srv.Close()
			r, err := load.Run(context.Background(), load.Options{URL: srv.URL, Mode: "jobs", Numbers: 1, Requests: jobs,
				Concurrency: 4, Wait: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if f.asks.Load() != c.asks || f.reads.Load() != 2*jobs {
				t.Fatalf("counts asked %d times (want %d), records read %d times (want %d)", f.asks.Load(), c.asks, f.reads.Load(), 2*jobs)
			}
			if j := r.Jobs; j == nil || j.Accepted != jobs || j.Ended != jobs || j.Completed != jobs-1 ||
				j.Complete < (jobs-1)*time.Second || j.Complete > (jobs+1)*time.Second {
				t.Fatalf("jobs report %+v, want %d accepted and ended, one timed out, complete at %d s", j, jobs, jobs)
			}
		})
	}
}

// TestWaitReadsTheJobsWhenNoneIsLive: counts whose ended jobs never grow
// by the jobs accepted (records evicted meanwhile) end the wait when no
// job is live, and every job is then read from its record.
func TestWaitReadsTheJobsWhenNoneIsLive(t *testing.T) {
	const jobs = 20
	f := &fakeCrewd{record: endedAt(time.Now())}
	f.counts = func(ask int64) string {
		switch ask {
		case 0:
			return countsJSON(map[string]int{"succeeded": 50})
		case 1:
			return countsJSON(map[string]int{"succeeded": 20, "queued": jobs})
		}
		f.ended.Store(true)
		return countsJSON(map[string]int{"succeeded": 40})
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	r, err := load.Run(context.Background(), load.Options{URL: srv.URL, Mode: "jobs", Numbers: 1, Requests: jobs,
		Concurrency: 4, Wait: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.early.Load() > 0 || f.asks.Load() != 3 || f.reads.Load() != jobs {
		t.Fatalf("%d records read before no job was live, %d reads in all (want %d), counts asked %d times (want 3)",
			f.early.Load(), f.reads.Load(), jobs, f.asks.Load())
	}
	if j := r.Jobs; j == nil || j.Ended != jobs || j.Completed != jobs-1 {
		t.Fatalf("jobs report %+v, want %d ended, one timed out", j, jobs)
	}
}

// TestWaitOnTheCountsEndsWithTheContext: an interrupted wait on counts
// that never say ended returns the interruption, without reading a record.
func TestWaitOnTheCountsEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &fakeCrewd{record: endedAt(time.Now())}
	f.counts = func(ask int64) string {
		if ask == 3 {
			cancel()
		}
		return countsJSON(map[string]int{"running": 1})
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	_, err := load.Run(ctx, load.Options{URL: srv.URL, Mode: "jobs", Numbers: 1, Requests: 5, Concurrency: 2, Wait: true}, nil)
	if err == nil || err.Error() != "waiting for the jobs: context canceled" || f.reads.Load() != 0 {
		t.Fatalf("err %v after %d reads of records, want %q and none", err, f.reads.Load(), "waiting for the jobs: context canceled")
	}
}

// TestWaitStopsTrustingStillCounts: counts that never move (another
// client's job live for ever, the run's records evicted as they end) end
// the wait on the counts after a while, and every record is read.
func TestWaitStopsTrustingStillCounts(t *testing.T) {
	defer load.SetCountsStill(100 * time.Millisecond)()
	const jobs = 10
	f := &fakeCrewd{record: endedAt(time.Now())}
	f.counts = func(ask int64) string {
		if ask >= 1 {
			f.ended.Store(true)
		}
		return countsJSON(map[string]int{"running": 1, "succeeded": 7})
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	r, err := load.Run(context.Background(), load.Options{URL: srv.URL, Mode: "jobs", Numbers: 1, Requests: jobs,
		Concurrency: 4, Wait: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.asks.Load() < 3 || f.reads.Load() != jobs {
		t.Fatalf("counts asked %d times, %d records read (want %d)", f.asks.Load(), f.reads.Load(), jobs)
	}
	if j := r.Jobs; j == nil || j.Ended != jobs {
		t.Fatalf("jobs report %+v, want %d ended", j, jobs)
	}
}

// TestWaitForARetryingJobsEnd: a job read retrying (or scheduled) has not
// ended: -wait reads it again until it has.
func TestWaitForARetryingJobsEnd(t *testing.T) {
	const jobs = 4
	var mu sync.Mutex
	read := map[uint64]int{}
	f := &fakeCrewd{record: func(n uint64) string {
		mu.Lock()
		defer mu.Unlock()
		read[n]++
		switch read[n] {
		case 1:
			return `{"state":"retrying"}`
		case 2:
			return `{"state":"scheduled"}`
		}
		return fmt.Sprintf(`{"state":"failed","finished":%q}`, time.Now().UTC().Format(time.RFC3339Nano))
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	r, err := load.Run(context.Background(), load.Options{URL: srv.URL, Mode: "jobs", Numbers: 1, Requests: jobs,
		Concurrency: 2, Wait: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.reads.Load() != 3*jobs {
		t.Fatalf("%d reads of records, want %d (retrying, scheduled, failed)", f.reads.Load(), 3*jobs)
	}
	if j := r.Jobs; j == nil || j.Ended != jobs || j.Completed != 0 || j.Complete <= 0 {
		t.Fatalf("jobs report %+v, want %d ended, none succeeded", j, jobs)
	}
}
