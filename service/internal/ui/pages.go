package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/service/internal/auth"
)

func urlQuery(s string) string { return url.QueryEscape(s) }

// next is where a login goes back to: a page of the UI, nothing else.
func next(r *http.Request) string { return uiPath(r.FormValue("next")) }

func (u *UI) loginForm(w http.ResponseWriter, r *http.Request) {
	if u.Auth == nil {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	u.render(w, http.StatusOK, "login", view{Data: map[string]string{"Next": next(r)}})
}

// login takes a token from the form and sets the session to it; the
// token is never logged, echoed or put in a URL.
func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	if why := auth.Foreign(r, false); why != "" {
		u.message(w, r, http.StatusForbidden, why)
		return
	}
	if u.Auth == nil {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	token, ok := auth.Bearer("Bearer " + strings.TrimSpace(r.PostFormValue("token")))
	var caller auth.Caller
	if ok {
		caller, ok = u.Auth.Tokens().Lookup(token)
	}
	if !ok {
		if u.Log != nil {
			u.Log.InfoContext(r.Context(), "audit", "who", "-", "action", "UI login", "status", http.StatusUnauthorized, "outcome", "refused")
		}
		u.render(w, http.StatusUnauthorized, "login", view{Data: map[string]string{"Next": next(r), "Error": "That token is not one of crewd's."}})
		return
	}
	if u.Log != nil {
		u.Log.InfoContext(r.Context(), "audit", "who", caller.Name, "action", "UI login", "status", http.StatusSeeOther, "outcome", "done")
	}
	setSession(w, r, token)
	http.Redirect(w, r, next(r), http.StatusSeeOther)
}

func (u *UI) logout(w http.ResponseWriter, r *http.Request) {
	if why := auth.Foreign(r, u.LocalOnly && u.Auth == nil); why != "" {
		u.message(w, r, http.StatusForbidden, why)
		return
	}
	clearSession(w, r)
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// overview is the jobs by state and the queues.
func (u *UI) overview(w http.ResponseWriter, r *http.Request, v view) {
	type stateCount struct {
		State jobs.State
		N     int
	}
	data := struct {
		Counts  []stateCount
		Queues  []jobs.QueueInfo
		Errors  []string
		Now     string
		Queuing bool
		Store   string
		Ends    *endsChart
		Backlog *backlogChart
		// Replicas and Groups: when the store says (Replicating).
		Replicating bool
		Replicas    []jobs.Replica
		Groups      []jobs.StoreGroup
	}{Now: time.Now().UTC().Format(time.TimeOnly), Store: "answering", Backlog: backlogChartOf(u.backlog.snapshot())}
	if u.Ready != nil {
		if err := u.Ready(); err != nil {
			data.Store = "not answering: " + err.Error()
		}
	}
	if lister, ok := u.Jobs.(jobs.Lister); ok {
		counts, err := lister.Counts(r.Context())
		if err != nil {
			data.Errors = append(data.Errors, "counts: "+err.Error())
		}
		for _, st := range jobs.States {
			data.Counts = append(data.Counts, stateCount{st, counts[st]})
		}
	}
	if ec, ok := u.Jobs.(jobs.EndCounter); ok {
		ends, err := ec.EndsPerMinute(r.Context(), 60)
		if err != nil {
			data.Errors = append(data.Errors, "jobs ended a minute: "+err.Error())
		} else {
			c := chartOf(ends)
			data.Ends = &c
		}
	}
	if rl, ok := u.Jobs.(jobs.ReplicaLister); ok {
		reps, err := rl.Replicas(r.Context())
		if err != nil {
			data.Errors = append(data.Errors, "replicas: "+err.Error())
		}
		data.Replicating, data.Replicas = true, reps
	}
	if si, ok := u.Jobs.(jobs.StoreInspector); ok {
		groups, err := si.StoreGroups(r.Context())
		if err != nil {
			data.Errors = append(data.Errors, "the store's replicas: "+err.Error())
		}
		data.Groups = groups
	}
	if q, ok := u.Jobs.(jobs.Queuer); ok {
		data.Queuing = true
		qs, err := q.Queues(r.Context())
		if err != nil {
			data.Errors = append(data.Errors, "queues: "+err.Error())
		}
		data.Queues = qs
	}
	v.Data = data
	u.render(w, http.StatusOK, "overview", v)
}

// maxScan bounds the records a page of jobs filtered by text reads (each
// a read of its record from the store): such a filter looks at the newest
// records of the state, kind and queue asked for, page by page, and says
// when it stopped.
const maxScan = 2000

// scanPage is the size of the pages such a filter reads after the first.
const scanPage = 250

// jobList is a page of jobs, newest first, filtered by state, kind and
// queue (the store's own filters: its index, no scan), and by text (a
// job's id, arguments, error or submitter containing it: read here, at
// most maxScan records).
func (u *UI) jobList(w http.ResponseWriter, r *http.Request, v view) {
	lister, ok := u.Jobs.(jobs.Lister)
	if !ok {
		u.message(w, r, http.StatusNotImplemented, "This job store lists no jobs.")
		return
	}
	q := jobs.Query{State: jobs.State(r.FormValue("state")), Kind: r.FormValue("kind"), Queue: r.FormValue("queue"), After: r.FormValue("after"), Limit: 50}
	text := strings.TrimSpace(r.FormValue("q"))
	if err := q.Validate(); err != nil {
		u.message(w, r, http.StatusBadRequest, err.Error())
		return
	}
	match := func(rec jobs.Record) bool {
		if text == "" {
			return true
		}
		spec := ""
		if rec.Spec != nil {
			spec = string(rec.Spec.Args)
		}
		for _, field := range []string{rec.ID, rec.Error, rec.Submitter, string(rec.Result), spec} {
			if strings.Contains(field, text) {
				return true
			}
		}
		return false
	}
	var found []jobs.Record
	next, scanned, limited := "", 0, false
	for {
		page, err := lister.List(r.Context(), q)
		if err != nil {
			u.message(w, r, http.StatusServiceUnavailable, "The jobs cannot be listed now: "+err.Error())
			return
		}
		for _, rec := range page.Jobs {
			if match(rec) {
				found = append(found, rec)
			}
		}
		scanned += len(page.Jobs)
		next = page.Next
		if text == "" || next == "" || len(found) >= 50 {
			break
		}
		if scanned >= maxScan {
			limited = true
			break
		}
		// Then larger pages: a page's matches are all shown (its cursor
		// is past them), so at most 49 + scanPage rows.
		q.After, q.Limit = next, scanPage
	}
	nextPage := ""
	if next != "" {
		nextPage = "/ui/jobs?" + url.Values{"state": {string(q.State)}, "kind": {q.Kind}, "queue": {q.Queue}, "q": {text}, "after": {next}}.Encode()
	}
	v.Data = struct {
		Jobs        []jobs.Record
		State       jobs.State
		Kind, Queue string
		Text        string
		States      []jobs.State
		Next, Back  string
		Scanned     int
		Limited     bool
	}{found, q.State, q.Kind, q.Queue, text, jobs.States, nextPage, r.URL.RequestURI(), scanned, limited}
	u.render(w, http.StatusOK, "jobs", v)
}

// job is one job's record.
func (u *UI) job(w http.ResponseWriter, r *http.Request, v view) {
	id := r.PathValue("id")
	if !jobs.ValidID(id) {
		u.message(w, r, http.StatusBadRequest, "That is no job id.")
		return
	}
	rec, err := u.Jobs.Get(r.Context(), id)
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		u.message(w, r, http.StatusNotFound, fmt.Sprintf("No job %s (unknown, or its record was evicted).", id))
		return
	case err != nil:
		u.message(w, r, http.StatusServiceUnavailable, "The job cannot be read now: "+err.Error())
		return
	}
	pretty, _ := json.MarshalIndent(rec, "", "  ")
	_, deletes := u.Jobs.(jobs.Deleter)
	v.Data = struct {
		Job       jobs.Record
		JSON      string
		Back      string
		CanRetry  bool
		CanDelete bool
		Priority  int
		Timeline  []event
		TraceURL  string
	}{rec, string(pretty), r.URL.RequestURI(), rec.State.Terminal() && rec.State != jobs.Succeeded, deletes && rec.State.Terminal(), priorityOf(rec), timeline(rec), traceLink(u.TraceURL, rec.Trace)}
	u.render(w, http.StatusOK, "job", v)
}

func (u *UI) cancel(r *http.Request) (string, int, error) {
	id := r.PathValue("id")
	status, err := u.cancelJob(r.Context(), id)
	return id, status, err
}

func (u *UI) retry(r *http.Request) (string, int, error) {
	id := r.PathValue("id")
	status, err := u.retryJob(r.Context(), id)
	return id, status, err
}

// cancelJob cancels job id; the status says how it went.
func (u *UI) cancelJob(ctx context.Context, id string) (int, error) {
	c, ok := u.Jobs.(jobs.Canceler)
	if !ok || !jobs.ValidID(id) {
		return http.StatusBadRequest, errors.New("this job cannot be canceled here")
	}
	_, _, err := c.Cancel(ctx, id)
	var ended *jobs.EndedError
	switch {
	case errors.As(err, &ended):
		return http.StatusConflict, fmt.Errorf("job %s has ended: %s", id, ended.State)
	case errors.Is(err, jobs.ErrNotFound):
		return http.StatusNotFound, fmt.Errorf("no job %s", id)
	case err != nil:
		return http.StatusServiceUnavailable, err
	}
	return http.StatusOK, nil
}

// retryJob runs job id again; the status says how it went.
func (u *UI) retryJob(ctx context.Context, id string) (int, error) {
	re, ok := u.Jobs.(jobs.Retrier)
	if !ok || !jobs.ValidID(id) {
		return http.StatusBadRequest, errors.New("this job cannot be retried here")
	}
	_, err := re.Retry(ctx, id)
	var ended *jobs.EndedError
	switch {
	case errors.As(err, &ended):
		return http.StatusConflict, fmt.Errorf("job %s has %s: only a failed, timed_out, canceled or not_run job is retried", id, ended.State)
	case errors.Is(err, jobs.ErrNotFound):
		return http.StatusNotFound, fmt.Errorf("no job %s", id)
	case err != nil:
		return http.StatusConflict, err
	}
	return http.StatusOK, nil
}

func (u *UI) deleteOne(r *http.Request) (string, int, error) {
	id := r.PathValue("id")
	status, err := u.deleteJob(r.Context(), id)
	return id, status, err
}

// deleteJob deletes ended job id; the status says how it went.
func (u *UI) deleteJob(ctx context.Context, id string) (int, error) {
	d, ok := u.Jobs.(jobs.Deleter)
	if !ok || !jobs.ValidID(id) {
		return http.StatusBadRequest, errors.New("this job cannot be deleted here")
	}
	_, err := d.Delete(ctx, id)
	var live *jobs.LiveError
	switch {
	case errors.As(err, &live):
		return http.StatusConflict, fmt.Errorf("job %s is %s: only an ended job is deleted (cancel it first)", id, live.State)
	case errors.Is(err, jobs.ErrNotFound):
		return http.StatusNotFound, fmt.Errorf("no job %s", id)
	case err != nil:
		return http.StatusConflict, err
	}
	return http.StatusOK, nil
}

func (u *UI) pause(paused bool) func(r *http.Request) (string, int, error) {
	return func(r *http.Request) (string, int, error) {
		name := r.PathValue("name")
		q, ok := u.Jobs.(jobs.Queuer)
		if !ok || jobs.CheckQueue(name) != nil {
			return name, http.StatusBadRequest, errors.New("no such queue here")
		}
		var err error
		if paused {
			err = q.PauseQueue(r.Context(), name, time.Time{})
		} else {
			err = q.ResumeQueue(r.Context(), name)
		}
		switch {
		case errors.Is(err, jobs.ErrNotFound):
			return name, http.StatusNotFound, fmt.Errorf("no queue %s", name)
		case err != nil:
			return name, http.StatusServiceUnavailable, err
		}
		return name, http.StatusOK, nil
	}
}
