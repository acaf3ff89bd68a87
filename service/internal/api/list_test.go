package api_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

// await polls job id until it is in state, up to 10 s.
func (f *fixture) await(t *testing.T, id, state string) answer {
	t.Helper()
	var rec answer
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if rec = f.do(t, "GET", "/v1/jobs/"+id, ""); rec.body["state"] == state {
			return rec
		}
	}
	t.Fatalf("job %s: %v, want %s", id, rec.body, state)
	return rec
}

// ids are the ids of a page's jobs.
func ids(t *testing.T, a answer) []string {
	t.Helper()
	list, ok := a.body["jobs"].([]any)
	if !ok {
		t.Fatalf("no jobs list: %d %v", a.code, a.body)
	}
	var out []string
	for _, j := range list {
		out = append(out, j.(map[string]any)["id"].(string))
	}
	return out
}

// TestListCountsAndRetry: GET /v1/jobs pages newest first with its cursor
// and filters by state and kind; /v1/jobs/counts names every state; POST
// /v1/jobs/{id}/retry queues an ended job again (200, its record), answers
// a second retry the same, 409 for a succeeded job naming its state.
func TestListCountsAndRetry(t *testing.T) {
	f := newFixture(t)
	var posted []string
	for n := range 5 {
		a := f.do(t, "POST", "/v1/jobs", fmt.Sprintf(`{"kind":"factorial","n":%d}`, n))
		posted = append(posted, a.body["id"].(string))
		f.await(t, posted[n], "succeeded")
	}
	a := f.do(t, "POST", "/v1/jobs", `{"kind":"sleep","duration":"1m","timeout":"10ms"}`)
	timed := a.body["id"].(string)
	f.await(t, timed, "timed_out")
	posted = append(posted, timed)
	slices.Reverse(posted)

	var got []string
	for path, pages := "/v1/jobs?limit=4", 0; ; pages++ {
		a := f.do(t, "GET", path, "")
		if a.code != 200 || pages > 2 {
			t.Fatalf("GET %s: %d %v", path, a.code, a.body)
		}
		got = append(got, ids(t, a)...)
		next, _ := a.body["next"].(string)
		if next == "" {
			break
		}
		path = "/v1/jobs?limit=4&after=" + url.QueryEscape(next)
	}
	if !slices.Equal(got, posted) {
		t.Fatalf("the pages: %v, want %v (newest first)", got, posted)
	}
	if a := f.do(t, "GET", "/v1/jobs?state=timed_out", ""); a.code != 200 || !slices.Equal(ids(t, a), []string{timed}) || a.body["next"] != nil {
		t.Fatalf("state=timed_out: %d %v", a.code, a.body)
	}
	if a := f.do(t, "GET", "/v1/jobs?kind=factorial&state=succeeded&limit=1000", ""); a.code != 200 || len(ids(t, a)) != 5 {
		t.Fatalf("kind=factorial&state=succeeded: %d %v", a.code, a.body)
	}
	if a := f.do(t, "GET", "/v1/jobs?state=failed", ""); a.code != 200 || fmt.Sprint(a.body["jobs"]) != "[]" {
		t.Fatalf("no failed jobs: %d %v, want an empty list", a.code, a.body)
	}
	a = f.do(t, "GET", "/v1/jobs/counts", "")
	if counts, _ := a.body["counts"].(map[string]any); a.code != 200 || len(counts) != 10 || counts["succeeded"] != 5.0 || counts["timed_out"] != 1.0 || counts["queued"] != 0.0 {
		t.Fatalf("counts: %d %v", a.code, a.body)
	}

	// A retry, twice while the pool is paused: the same answer.
	_ = f.pool.Pause()
	first := f.do(t, "POST", "/v1/jobs/"+timed+"/retry", "")
	second := f.do(t, "POST", "/v1/jobs/"+timed+"/retry", "")
	if first.code != 200 || first.body["state"] != "queued" || first.body["retries"] != 1.0 || first.body["id"] != timed ||
		second.code != 200 || fmt.Sprint(second.body) != fmt.Sprint(first.body) {
		t.Fatalf("retry: %d %v, then %d %v", first.code, first.body, second.code, second.body)
	}
	if a := f.do(t, "GET", "/v1/jobs?limit=1", ""); !slices.Equal(ids(t, a), []string{timed}) {
		t.Fatalf("the retried job does not list first: %v", a.body)
	}
	_ = f.pool.Resume()
	again := f.await(t, timed, "timed_out")
	if errs, _ := again.body["errors"].([]any); len(errs) != 2 || again.body["retries"] != 1.0 || again.body["spec"] == nil {
		t.Fatalf("the retried job's record: %v, want both runs' errors, its retry and its spec", again.body)
	}
	if a := f.do(t, "POST", "/v1/jobs/"+posted[1]+"/retry", ""); a.code != 409 || !strings.Contains(a.body["error"].(string), "has succeeded: only a failed, timed_out, canceled or not_run job is retried") {
		t.Fatalf("retry of a succeeded job: %d %v", a.code, a.body)
	}
}

// TestListWithoutALister: a job store that does not list, count or retry
// answers 501 to those routes.
func TestListWithoutALister(t *testing.T) {
	f := newFixture(t)
	f.api.Jobs = unavailable{}
	for _, req := range [][2]string{{"GET", "/v1/jobs"}, {"GET", "/v1/jobs/counts"}, {"POST", "/v1/jobs/0123456789abcdef/retry"}} {
		if a := f.do(t, req[0], req[1], ""); a.code != 501 || !strings.Contains(a.body["error"].(string), "not taken by this job store") {
			t.Fatalf("%s %s: %d %v", req[0], req[1], a.code, a.body)
		}
	}
}

// unavailableLister is a Lister whose store cannot be reached.
type unavailableLister struct{ unavailable }

func (unavailableLister) List(context.Context, jobs.Query) (jobs.Page, error) {
	return jobs.Page{}, fmt.Errorf("%w: nats: timeout", jobs.ErrUnavailable)
}

func (unavailableLister) Counts(context.Context) (jobs.Counts, error) {
	return nil, fmt.Errorf("%w: nats: timeout", jobs.ErrUnavailable)
}

// TestListUnavailableAnswers503: a list or counts while the store is out
// is a 503 with Retry-After, never an empty list.
func TestListUnavailableAnswers503(t *testing.T) {
	f := newFixture(t)
	f.api.Jobs = unavailableLister{}
	for _, path := range []string{"/v1/jobs", "/v1/jobs/counts"} {
		if a := f.do(t, "GET", path, ""); a.code != 503 || a.header.Get("Retry-After") != "2" {
			t.Fatalf("GET %s: %d %v", path, a.code, a.body)
		}
	}
}

// endsRunner counts ends as a store would, noting the minutes asked.
type endsRunner struct {
	unavailable
	asked *int
}

func (e endsRunner) EndsPerMinute(_ context.Context, minutes int) ([]jobs.Ends, error) {
	*e.asked = minutes
	return []jobs.Ends{{Minute: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC), Counts: jobs.Counts{jobs.Succeeded: 7}}}, nil
}

// TestJobEnds: GET /v1/jobs/ends asks the store for 60 minutes, or the
// minutes given; a bad or unknown parameter is a 400 naming it, a store
// that does not count ends a 501.
func TestJobEnds(t *testing.T) {
	f := newFixture(t)
	var asked int
	f.api.Jobs = endsRunner{asked: &asked}
	a := f.do(t, "GET", "/v1/jobs/ends", "")
	mins, _ := a.body["minutes"].([]any)
	if a.code != 200 || asked != 60 || len(mins) != 1 || !strings.Contains(fmt.Sprint(mins[0]), "succeeded:7") {
		t.Fatalf("GET /v1/jobs/ends: %d %v, asked %d minutes", a.code, a.body, asked)
	}
	if a := f.do(t, "GET", "/v1/jobs/ends?minutes=5", ""); a.code != 200 || asked != 5 {
		t.Fatalf("?minutes=5: %d, asked %d", a.code, asked)
	}
	for q, want := range map[string]string{
		"minutes=0":    `minutes "0": want 1 to 1440`,
		"minutes=1441": `minutes "1441"`,
		"minutes=x":    `minutes "x"`,
		"minutes=":     "minutes",
		"state=failed": `query parameter "state"`,
	} {
		if a := f.do(t, "GET", "/v1/jobs/ends?"+q, ""); a.code != 400 || !strings.Contains(fmt.Sprint(a.body["error"]), want) {
			t.Errorf("?%s: %d %v, want 400 naming %q", q, a.code, a.body, want)
		}
	}
	f.api.Jobs = unavailable{}
	if a := f.do(t, "GET", "/v1/jobs/ends", ""); a.code != 501 {
		t.Fatalf("a store that counts no ends: %d %v", a.code, a.body)
	}
}
