package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/crew-go/crew/jobs"
)

// queuer is the job store's named queues, or false with 501 answered:
// only the JetStream store keeps them.
func (a *API) queuer(w http.ResponseWriter, r *http.Request) (jobs.Queuer, bool) {
	q, ok := a.Jobs.(jobs.Queuer)
	if !ok {
		a.fail(w, r, http.StatusNotImplemented, "queues: not kept by this job store (they need the JetStream store)")
	}
	return q, ok
}

// listQueues answers GET /v1/queues: {"queues": [...]}, the default first,
// each with its limit across every crewd (0: none), its jobs waiting and
// taken (running, or held for a free worker), and whether it is paused.
func (a *API) listQueues(w http.ResponseWriter, r *http.Request) {
	if r.URL.RawQuery != "" {
		a.fail(w, r, http.StatusBadRequest, fmt.Sprintf("query %s: /v1/queues takes no parameters", quoteShort(r.URL.RawQuery)))
		return
	}
	q, ok := a.queuer(w, r)
	if !ok {
		return
	}
	qs, err := q.Queues(r.Context())
	if err != nil {
		a.queueError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"queues": qs})
}

// pauseQueue answers POST /v1/queues/{name}/pause: every crewd stops
// starting the queue's jobs (running ones go on, new ones are accepted and
// wait) until its resume; 200 with {"name", "paused": true}. An optional
// "?until=" (RFC 3339) resumes it then by itself.
func (a *API) pauseQueue(w http.ResponseWriter, r *http.Request) {
	var until time.Time
	for key, vals := range r.URL.Query() {
		switch {
		case key != "until" || len(vals) != 1:
			a.fail(w, r, http.StatusBadRequest, fmt.Sprintf("query parameter %s: want until, once", quoteShort(key)))
			return
		default:
			t, err := time.Parse(time.RFC3339, vals[0])
			if err != nil || !t.After(time.Now()) {
				a.fail(w, r, http.StatusBadRequest, fmt.Sprintf(`"until" %s: want a time to come in RFC 3339 such as "2026-11-25T18:00:00Z"`, quoteShort(vals[0])))
				return
			}
			until = t
		}
	}
	a.setPause(w, r, func(q jobs.Queuer, name string) error { return q.PauseQueue(r.Context(), name, until) }, true)
}

// resumeQueue answers POST /v1/queues/{name}/resume: 200 with {"name",
// "paused": false}.
func (a *API) resumeQueue(w http.ResponseWriter, r *http.Request) {
	if r.URL.RawQuery != "" {
		a.fail(w, r, http.StatusBadRequest, fmt.Sprintf("query %s: a resume takes no parameters", quoteShort(r.URL.RawQuery)))
		return
	}
	a.setPause(w, r, func(q jobs.Queuer, name string) error { return q.ResumeQueue(r.Context(), name) }, false)
}

func (a *API) setPause(w http.ResponseWriter, r *http.Request, set func(jobs.Queuer, string) error, paused bool) {
	q, ok := a.queuer(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	if err := jobs.CheckQueue(name); err != nil {
		a.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if err := set(q, name); err != nil {
		a.queueError(w, r, err)
		return
	}
	if a.Log != nil {
		a.Log.Info("job queue "+map[bool]string{true: "paused", false: "resumed"}[paused], "queue", name, "request_id", requestID(r.Context()))
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": name, "paused": paused})
}

// queueError answers a queue's store error: 400 for bad input, 404 for a
// queue that does not exist, 503 while the store is out, 500 for the rest.
func (a *API) queueError(w http.ResponseWriter, r *http.Request, err error) {
	var invalid *jobs.InvalidError
	switch {
	case errors.As(err, &invalid):
		a.fail(w, r, http.StatusBadRequest, invalid.Error())
	case errors.Is(err, jobs.ErrNotFound):
		// Not jobs.ErrNotFound's words, which speak of a job.
		a.fail(w, r, http.StatusNotFound, "no queue "+quoteShort(r.PathValue("name"))+": a queue exists once a crewd serves it (-job-queues)")
	case errors.Is(err, jobs.ErrUnavailable), errors.Is(err, jobs.ErrFull):
		a.unavailable(w, r, err)
	default:
		a.fail(w, r, http.StatusInternalServerError, err.Error())
	}
}
