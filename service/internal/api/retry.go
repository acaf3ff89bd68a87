package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/crew-go/crew/jobs"
)

// retryJob answers POST /v1/jobs/{id}/retry: a job that failed, timed out,
// was canceled or was not run is queued again under its id with fresh
// attempts, 200 with its record (queued, its retries counted, its earlier
// errors kept); a job not yet ended is answered as it is, 200, so that a
// retry repeated is answered like the first; 409 naming the state of a
// succeeded job, or of one whose record keeps no spec to run; 404 for an
// unknown one.
func (a *API) retryJob(w http.ResponseWriter, r *http.Request) {
	id, ok := a.jobID(w, r)
	if !ok {
		return
	}
	retrier, ok := a.Jobs.(jobs.Retrier)
	if !ok {
		a.fail(w, r, http.StatusNotImplemented, "retry: not taken by this job store")
		return
	}
	rec, err := retrier.Retry(r.Context(), id)
	var (
		ended   *jobs.EndedError
		invalid *jobs.InvalidError
	)
	switch {
	case errors.As(err, &ended):
		a.fail(w, r, http.StatusConflict, fmt.Sprintf("job %s has %s: only a failed, timed_out, canceled or not_run job is retried", id, ended.State))
	case errors.Is(err, jobs.ErrNoSpec):
		a.fail(w, r, http.StatusConflict, fmt.Sprintf("job %s cannot run again: %v", id, err))
	case errors.As(err, &invalid):
		// Its kind or its bounds changed since it was accepted.
		a.fail(w, r, http.StatusConflict, fmt.Sprintf("job %s cannot run again: %s", id, invalid.Reason))
	default:
		a.jobAnswer(w, r, id, rec, err)
	}
}
