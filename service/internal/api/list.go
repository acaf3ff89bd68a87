package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/crew-go/crew/jobs"
)

// listJobs answers GET /v1/jobs?state=…&kind=…&queue=…&limit=…&after=…: 200 with
// {"jobs": [...], "next": "..."}, a page of records newest first and the
// cursor of the next page (none on the last). Every parameter is
// optional; an unknown one, one given twice, an unknown state, a limit
// that is not an integer from 1 to jobs.MaxLimit and a cursor the store
// did not make are 400 naming the parameter.
func (a *API) listJobs(w http.ResponseWriter, r *http.Request) {
	lister, ok := a.Jobs.(jobs.Lister)
	if !ok {
		a.fail(w, r, http.StatusNotImplemented, "listing jobs: not taken by this job store")
		return
	}
	q, err := listQuery(r.URL.RawQuery)
	if err != nil {
		a.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.RequestTimeout)
	defer cancel()
	page, err := lister.List(ctx, q)
	if a.listError(w, r, err) {
		return
	}
	if page.Jobs == nil {
		page.Jobs = []jobs.Record{} // [] in JSON, not null
	}
	writeJSON(w, http.StatusOK, page)
}

// countsAnswer is GET /v1/jobs/counts's body.
type countsAnswer struct {
	Counts jobs.Counts `json:"counts"`
}

// jobCounts answers GET /v1/jobs/counts: 200 with {"counts": {...}}, the
// jobs in each state, every state named (0 for none), so that a client
// or a dashboard reads the same keys each time. It takes no parameters.
func (a *API) jobCounts(w http.ResponseWriter, r *http.Request) {
	lister, ok := a.Jobs.(jobs.Lister)
	if !ok {
		a.fail(w, r, http.StatusNotImplemented, "counting jobs: not taken by this job store")
		return
	}
	if r.URL.RawQuery != "" {
		a.fail(w, r, http.StatusBadRequest, fmt.Sprintf("query %s: /v1/jobs/counts takes no parameters", quoteShort(r.URL.RawQuery)))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.RequestTimeout)
	defer cancel()
	counts, err := lister.Counts(ctx)
	if a.listError(w, r, err) {
		return
	}
	all := make(jobs.Counts, len(jobs.States))
	for _, st := range jobs.States {
		all[st] = counts[st]
	}
	writeJSON(w, http.StatusOK, countsAnswer{all})
}

// jobEnds answers GET /v1/jobs/ends?minutes=N (default 60, at most a
// day): {"minutes": [{"minute", "counts"}, ...]}, the jobs ended in each
// of the last N minutes by end state, oldest first, the current minute
// last; from the store's index, never a scan of the store.
func (a *API) jobEnds(w http.ResponseWriter, r *http.Request) {
	ec, ok := a.Jobs.(jobs.EndCounter)
	if !ok {
		a.fail(w, r, http.StatusNotImplemented, "jobs ended a minute: not counted by this job store")
		return
	}
	minutes := 60
	q := r.URL.Query()
	for k := range q {
		if k != "minutes" {
			a.fail(w, r, http.StatusBadRequest, fmt.Sprintf("query parameter %s: /v1/jobs/ends takes minutes", quoteShort(k)))
			return
		}
	}
	if v := q.Get("minutes"); v != "" || q.Has("minutes") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > jobs.MaxEndsMinutes {
			a.fail(w, r, http.StatusBadRequest, fmt.Sprintf("minutes %s: want 1 to %d", quoteShort(v), jobs.MaxEndsMinutes))
			return
		}
		minutes = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.RequestTimeout)
	defer cancel()
	ends, err := ec.EndsPerMinute(ctx, minutes)
	if a.listError(w, r, err) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"minutes": ends})
}

// listError answers a List's or a Counts' error, if any: 400 for a query
// the store refuses, 503 while the store is out.
func (a *API) listError(w http.ResponseWriter, r *http.Request, err error) bool {
	var invalid *jobs.InvalidError
	switch {
	case err == nil:
		return false
	case errors.As(err, &invalid):
		a.fail(w, r, http.StatusBadRequest, invalid.Reason)
	case errors.Is(err, jobs.ErrUnavailable):
		a.unavailable(w, r, err)
	default:
		a.poolError(w, r, err)
	}
	return true
}

// listParams are GET /v1/jobs's parameters, and what each wants.
var listParams = map[string]string{
	"state": "one of " + strings.Join(stateNames(), ", "),
	"kind":  "a kind of job, such as sleep",
	"queue": "a queue's name (default: the jobs that name none)",
	"limit": fmt.Sprintf("an integer from 1 to %d (%d if not given)", jobs.MaxLimit, jobs.DefaultLimit),
	"after": `the "next" of the page before, as it was given`,
}

func stateNames() []string {
	names := make([]string, len(jobs.States))
	for i, st := range jobs.States {
		names[i] = string(st)
	}
	return names
}

// listQuery reads GET /v1/jobs's query string, strictly: a malformed one,
// an unknown parameter, one given twice, a limit that is not an integer
// from 1 to jobs.MaxLimit and an unknown state are errors naming the
// parameter. (The store checks the cursor.)
func listQuery(raw string) (jobs.Query, error) {
	var q jobs.Query
	values, err := url.ParseQuery(raw)
	if err != nil {
		return q, fmt.Errorf("malformed query string: %v", err)
	}
	var unknown []string
	for name := range values {
		if _, ok := listParams[name]; !ok {
			unknown = append(unknown, quoteShort(name))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		if len(unknown) > 3 {
			unknown = append(unknown[:3], fmt.Sprintf("and %d more", len(unknown)-3))
		}
		known := make([]string, 0, len(listParams))
		for name := range listParams {
			known = append(known, strconv.Quote(name))
		}
		slices.Sort(known)
		return q, fmt.Errorf("unknown query parameter %s: want only %s", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	for _, name := range []string{"after", "kind", "limit", "queue", "state"} {
		if n := len(values[name]); n > 1 {
			return q, fmt.Errorf("%q given %d times: give it once", name, n)
		}
	}
	q.State, q.Kind, q.Queue, q.After = jobs.State(values.Get("state")), values.Get("kind"), values.Get("queue"), values.Get("after")
	if q.State != "" && !q.State.Known() {
		return q, fmt.Errorf(`"state" %s: want %s`, quoteShort(string(q.State)), listParams["state"])
	}
	if s, ok := values["limit"]; ok {
		n, err := strconv.Atoi(s[0])
		if err != nil || n < 1 || n > jobs.MaxLimit {
			return q, fmt.Errorf(`"limit" %s: want %s`, quoteShort(s[0]), listParams["limit"])
		}
		q.Limit = n
	}
	return q, nil
}
