package memjobs

import (
	"context"
	"errors"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
)

// Runner runs jobs as long tasks on a crew pool, with their records in
// a Store. A job is refused, never queued unseen: a full queue answers
// crew.ErrQueueFull at once (the API's 503 with Retry-After), a closed pool
// crew.ErrClosed.
type Runner struct {
	Pool           *crew.Pool
	Store          *Store
	Kinds          *jobs.Kinds   // the kinds of job accepted
	DefaultTimeout time.Duration // a job's timeout when its spec gives none
	MaxTimeout     time.Duration // the longest a spec may give
}

var (
	_ jobs.KeyedRunner = (*Runner)(nil)
	_ jobs.Canceler    = (*Runner)(nil)
)

// errCanceled ends a job's task when the job was canceled.
var errCanceled = errors.New("job canceled")

// Cancel implements jobs.Canceler: a queued job's task returns at once
// when it starts, a running one's context is cancelled; the record says
// canceled, whatever the task then ends in.
func (r *Runner) Cancel(_ context.Context, id string) (jobs.Record, jobs.State, error) {
	if !jobs.ValidID(id) {
		return jobs.Record{}, "", jobs.ErrNotFound
	}
	e, ok := r.Store.get(id)
	if !ok {
		return jobs.Record{}, "", jobs.ErrNotFound
	}
	r.Store.mu.Lock()
	defer r.Store.mu.Unlock()
	rec := e.record()
	switch {
	case rec.State == jobs.Canceled:
		return rec, rec.State, nil
	case rec.State.Terminal():
		return rec, rec.State, &jobs.EndedError{State: rec.State}
	}
	e.mu.Lock()
	e.canceled = rec.State
	cancel := e.cancel
	e.mu.Unlock()
	if cancel != nil {
		cancel(errCanceled)
	}
	return e.record(), rec.State, nil
}

// Submit implements Runner.
func (r *Runner) Submit(_ context.Context, spec jobs.Spec) (jobs.Record, error) {
	job, err := r.Kinds.Prepare(spec, r.DefaultTimeout, r.MaxTimeout)
	if err != nil {
		return jobs.Record{}, err
	}
	if !job.RunAt.IsZero() {
		return jobs.Record{}, &jobs.InvalidError{Reason: `"run_at": a job due later needs the JetStream store; in memory every job runs now`}
	}
	e := &entry{id: jobs.NewID(), kind: spec.Kind, created: r.Store.now()}
	// The record exists before the task can end, so that every accepted
	// job has one.
	if err := r.Store.add(e); err != nil {
		return jobs.Record{}, err
	}
	t, err := r.Pool.TrySubmit(func(ctx context.Context) error {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		e.mu.Lock()
		if e.canceled != "" {
			e.mu.Unlock()
			return errCanceled // canceled while queued: never runs
		}
		e.cancel = cancel
		e.mu.Unlock()
		v, err := job.Run(jobs.WithInfo(ctx, jobs.Info{ID: e.id, Kind: spec.Kind, Attempt: 1}))
		if err == nil {
			e.mu.Lock()
			e.result = v
			e.mu.Unlock()
		}
		return err
	}, crew.Named("job:"+spec.Kind), crew.Timeout(job.Timeout))
	if err != nil {
		r.Store.remove(e.id)
		return jobs.Record{}, err
	}
	r.Store.mu.Lock()
	e.task = t
	r.Store.mu.Unlock()
	return e.record(), nil
}

// Get implements Runner.
func (r *Runner) Get(_ context.Context, id string) (jobs.Record, error) {
	if !jobs.ValidID(id) {
		return jobs.Record{}, jobs.ErrNotFound
	}
	e, ok := r.Store.get(id)
	if !ok {
		return jobs.Record{}, jobs.ErrNotFound
	}
	r.Store.mu.Lock()
	defer r.Store.mu.Unlock()
	return e.record(), nil
}
