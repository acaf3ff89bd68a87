package memjobs

import (
	"context"
	"slices"

	"github.com/crew-go/crew/jobs"
)

// Retry implements jobs.Retrier, in memory: a job that failed, timed out,
// was canceled or was not run is submitted to the pool again under its id,
// as a new run with its kept spec; its record is queued, Retries counts
// the retry, and Errors keeps the error of the run before. The pool's
// refusal (crew.ErrQueueFull, crew.ErrClosed) leaves the record as it was.
// The retried job lists as submitted now.
func (r *Runner) Retry(_ context.Context, id string) (jobs.Record, error) {
	if !jobs.ValidID(id) {
		return jobs.Record{}, jobs.ErrNotFound
	}
	s := r.Store
	// One lock from the check to the submit: of two retries at once, the
	// second finds the job queued, and answers it as it is.
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if !ok {
		return jobs.Record{}, jobs.ErrNotFound
	}
	rec := e.record(r.Store.now)
	switch {
	case !rec.State.Terminal():
		return rec, nil
	case rec.State == jobs.Succeeded:
		return rec, &jobs.EndedError{State: rec.State}
	}
	job, err := r.prepare(e.spec)
	if err != nil {
		return rec, err // its kind gone, or its bounds narrowed, since it was accepted
	}
	before := e.run
	e.run = &run{}
	if len(job.After) > 0 {
		// A job with parents waits for them again (after.go).
		r.wait(e, job)
	} else if err := r.start(e, job); err != nil {
		e.run = before
		return rec, err
	}
	e.errors, e.retries = rec.Errors, e.retries+1
	s.order = slices.DeleteFunc(s.order, func(o *entry) bool { return o == e })
	e.submitted = s.now()
	s.appendLocked(e)
	return e.record(r.Store.now), nil
}
