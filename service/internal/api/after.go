package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/crew-go/crew/jobs"
)

// afterFields are the fields of POST /v1/jobs/{id}/after's body.
var afterFields = bodyFields{
	example: `{"after":["0123456789abcdef"]}`,
	want: map[string]string{
		"after": fmt.Sprintf("an array of job ids to add to the ones it waits for (at most %d in all)", jobs.MaxAfter),
	},
}

// afterBody is POST /v1/jobs/{id}/after's body.
type afterBody struct {
	After []string `json:"after"`
}

// addAfter answers POST /v1/jobs/{id}/after: a waiting job (a batch's
// callback) takes more parents while it waits, 200 with its record; a
// parent already there is skipped, so a request repeated is answered
// like the first; 409 for a job that no longer waits; 400 naming a
// parent refused (unknown, waiting itself, the job itself, too many), with
// nothing added; 404 for an unknown job.
func (a *API) addAfter(w http.ResponseWriter, r *http.Request) {
	id, ok := a.jobID(w, r)
	if !ok {
		return
	}
	var body afterBody
	if !a.decode(w, r, &body, afterFields) {
		return
	}
	adder, ok := a.Jobs.(jobs.ParentAdder)
	if !ok {
		a.fail(w, r, http.StatusNotImplemented, "after: not taken by this job store")
		return
	}
	rec, err := adder.AddAfter(r.Context(), id, body.After...)
	var invalid *jobs.InvalidError
	switch {
	case errors.Is(err, jobs.ErrNotWaiting):
		a.fail(w, r, http.StatusConflict, fmt.Sprintf("job %s is %s: only a waiting job takes more parents", id, rec.State))
	case errors.As(err, &invalid):
		a.fail(w, r, http.StatusBadRequest, invalid.Error())
	default:
		a.jobAnswer(w, r, id, rec, err)
	}
}
