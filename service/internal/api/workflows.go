package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/crew-go/crew/jobs"
)

// Workflows (jobs.SubmitWorkflow): named steps, each a job of
// POST /v1/jobs's body waiting for the steps it names, submitted in one
// request and read as one object, the workflow's own job. A workflow is
// stored whole or not at all: its submit commits within the request
// timeout, and a crewd killed before that leaves no step to run (its steps
// are canceled twice the request timeout after the submit began).

// workflowFields are the fields of POST /v1/workflows's body.
var workflowFields = bodyFields{
	example: `{"steps":[{"name":"a","job":{"kind":"sleep","duration":"1s"}},{"name":"b","after":["a"],"job":{"kind":"factorial","n":5}}]}`,
	want: map[string]string{
		"steps": fmt.Sprintf(`an array of 1 to %d steps, each {"name", "job" (a POST /v1/jobs body), "after" (the names of the steps it waits for)}`, jobs.MaxSteps),
	},
}

// workflowBody is POST /v1/workflows's body.
type workflowBody struct {
	Steps []struct {
		Name  string                     `json:"name"`
		After []string                   `json:"after"`
		Job   map[string]json.RawMessage `json:"job"`
	} `json:"steps"`
}

// postWorkflow submits a workflow: 202 {"id", "state", "steps": {name: id}},
// or 400 naming the fault (a cycle, a step unknown, a job refused), or 503
// (the store out, or too slow to take the steps within the request
// timeout), nothing left to run.
func (a *API) postWorkflow(w http.ResponseWriter, r *http.Request) {
	var body workflowBody
	if !a.decode(w, r, &body, workflowFields) {
		return
	}
	canceler, ok := a.Jobs.(jobs.Canceler)
	if !ok {
		a.fail(w, r, http.StatusNotImplemented, "workflows: not taken by this job store")
		return
	}
	steps := make([]jobs.Step, len(body.Steps))
	for i, s := range body.Steps {
		if s.Job == nil {
			a.fail(w, r, http.StatusBadRequest, fmt.Sprintf(`step %q: "job" is required: %s`, quoteShort(s.Name), jobFields.example))
			return
		}
		spec, err := jobSpec(s.Job)
		if err != nil {
			a.fail(w, r, http.StatusBadRequest, fmt.Sprintf("step %s: %v", quoteShort(s.Name), err))
			return
		}
		spec.Submitter = submitter(r)
		steps[i] = jobs.Step{Name: s.Name, Spec: spec, After: s.After}
	}
	rec, kept, err := jobs.SubmitWorkflow(r.Context(), canceler, steps, jobs.WithCommitWithin(a.RequestTimeout))
	var invalid *jobs.InvalidError
	switch {
	case errors.As(err, &invalid):
		a.fail(w, r, http.StatusBadRequest, invalid.Error())
		return
	case errors.Is(err, jobs.ErrFull), errors.Is(err, jobs.ErrUnavailable), errors.Is(err, jobs.ErrNotCommitted):
		a.unavailable(w, r, err)
		return
	case err != nil:
		a.poolError(w, r, err)
		return
	}
	ids := make(map[string]string, len(kept))
	for _, s := range kept {
		ids[s.Name] = s.ID
	}
	w.Header().Set("Location", "/v1/workflows/"+rec.ID)
	writeJSON(w, http.StatusAccepted, map[string]any{"id": rec.ID, "state": rec.State, "steps": ids})
}

// workflowView is a workflow as GET /v1/workflows/{id} answers it: its
// state (waiting while a step has not ended, its own job's once all have:
// succeeded), its
// steps' counts by state, and each step with its state.
type workflowView struct {
	ID       string         `json:"id"`
	State    jobs.State     `json:"state"`
	Created  time.Time      `json:"created"`
	Finished time.Time      `json:"finished,omitzero"`
	Counts   jobs.Counts    `json:"counts"`
	Steps    []workflowStep `json:"steps"`
}

type workflowStep struct {
	Name     string     `json:"name"`
	ID       string     `json:"id"`
	After    []string   `json:"after,omitempty"`
	State    jobs.State `json:"state"`
	Error    string     `json:"error,omitempty"`
	Attempts int        `json:"attempts,omitempty"`
	Finished time.Time  `json:"finished,omitzero"`
}

// stepsOf is v's steps as its workflow keeps them.
func (v workflowView) stepsOf() []jobs.WorkflowStep {
	steps := make([]jobs.WorkflowStep, len(v.Steps))
	for i, s := range v.Steps {
		steps[i] = jobs.WorkflowStep{Name: s.Name, ID: s.ID, After: s.After}
	}
	return steps
}

// getWorkflow answers a workflow: its own job's record and each step's,
// read 16 at a time.
func (a *API) getWorkflow(w http.ResponseWriter, r *http.Request) {
	if v, ok := a.workflow(w, r); ok {
		writeJSON(w, http.StatusOK, v)
	}
}

// cancelWorkflow cancels every step not ended (what waits on a step
// canceled is canceled in turn; the workflow's own job then ends, counting
// them), and answers the workflow as it is then.
func (a *API) cancelWorkflow(w http.ResponseWriter, r *http.Request) {
	v, ok := a.workflow(w, r)
	if !ok {
		return
	}
	canceler, ok := a.Jobs.(jobs.Canceler)
	if !ok {
		a.fail(w, r, http.StatusNotImplemented, "cancel: not taken by this job store")
		return
	}
	if err := jobs.CancelWorkflow(r.Context(), canceler, v.stepsOf()); err != nil {
		a.jobAnswer(w, r, v.ID, jobs.Record{}, err)
		return
	}
	if v, ok = a.workflow(w, r); ok {
		writeJSON(w, http.StatusOK, v)
	}
}

// retryWorkflow runs again the steps that ended without success and what
// waits on them (jobs.RetryWorkflow), and answers the workflow as it is
// then.
func (a *API) retryWorkflow(w http.ResponseWriter, r *http.Request) {
	v, ok := a.workflow(w, r)
	if !ok {
		return
	}
	re, ok := a.Jobs.(jobs.Retrier)
	if !ok {
		a.fail(w, r, http.StatusNotImplemented, "retry: not taken by this job store")
		return
	}
	if _, err := jobs.RetryWorkflow(r.Context(), re, v.stepsOf()); err != nil {
		if errors.Is(err, jobs.ErrUnavailable) || errors.Is(err, jobs.ErrFull) {
			a.unavailable(w, r, err)
		} else {
			a.fail(w, r, http.StatusConflict, err.Error())
		}
		return
	}
	if v, ok = a.workflow(w, r); ok {
		writeJSON(w, http.StatusOK, v)
	}
}

// workflow reads the workflow of the request's id, or answers why not.
func (a *API) workflow(w http.ResponseWriter, r *http.Request) (workflowView, bool) {
	id, ok := a.jobID(w, r)
	if !ok {
		return workflowView{}, false
	}
	rec, err := a.Jobs.Get(r.Context(), id)
	if err != nil {
		a.jobAnswer(w, r, id, rec, err)
		return workflowView{}, false
	}
	steps, err := jobs.WorkflowOf(rec)
	if err != nil {
		a.fail(w, r, http.StatusNotFound, "no workflow "+strconv.Quote(id)+" (the job of that id is no workflow's)")
		return workflowView{}, false
	}
	v := workflowView{ID: id, State: rec.State, Created: rec.Created, Finished: rec.Finished, Counts: jobs.Counts{}, Steps: make([]workflowStep, len(steps))}
	recs, errs := jobs.GetAll(r.Context(), a.Jobs.Get, jobs.StepIDs(steps))
	for i, s := range steps {
		sr := recs[i]
		v.Steps[i] = workflowStep{Name: s.Name, ID: s.ID, After: s.After, State: sr.State, Error: sr.Error, Attempts: sr.Attempts, Finished: sr.Finished}
	}
	for i, err := range errs {
		switch {
		case errors.Is(err, jobs.ErrNotFound):
			v.Steps[i].State = "" // its record expired or was deleted
		case err != nil:
			a.jobAnswer(w, r, v.Steps[i].ID, jobs.Record{}, err)
			return workflowView{}, false
		}
		if st := v.Steps[i].State; st != "" {
			v.Counts[st]++
			if !st.Terminal() {
				v.State = jobs.Waiting // running again, since a retry
			}
		}
	}
	return v, true
}
