package memjobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	DefaultTimeout time.Duration // a job's timeout when its spec gives none (0: jobs.Timeouts's default)
	MaxTimeout     time.Duration // the longest a spec may give (0: jobs.Timeouts's default)
}

var (
	_ jobs.KeyedRunner = (*Runner)(nil)
	_ jobs.Canceler    = (*Runner)(nil)
	_ jobs.Lister      = (*Runner)(nil)
	_ jobs.Retrier     = (*Runner)(nil)
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
	r.Store.mu.Lock()
	defer r.Store.mu.Unlock()
	e, ok := r.Store.byID[id]
	if !ok {
		return jobs.Record{}, "", jobs.ErrNotFound
	}
	rec := e.record(r.Store.now)
	switch {
	case rec.State == jobs.Canceled:
		return rec, rec.State, nil
	case rec.State.Terminal():
		return rec, rec.State, &jobs.EndedError{State: rec.State}
	}
	u := e.run
	u.mu.Lock()
	u.canceled = rec.State
	cancel := u.cancel
	u.mu.Unlock()
	if cancel != nil {
		cancel(errCanceled)
	}
	if e.wait != nil {
		// It never runs: its own waiting jobs are told (after.go).
		e.wait = nil
		r.ended(e)
	}
	return e.record(r.Store.now), rec.State, nil
}

// Submit implements Runner. A job of a kind only declared (jobs.Declare)
// is refused, jobs.ErrNotRunHere: the job would run here, where nothing
// can run it.
func (r *Runner) Submit(_ context.Context, spec jobs.Spec) (jobs.Record, error) {
	job, err := r.prepare(spec)
	if err != nil {
		return jobs.Record{}, err
	}
	e := &entry{id: jobs.NewID(), kind: spec.Kind, spec: spec, run: &run{}}
	if len(job.After) > 0 {
		return r.submitWaiting(e, job)
	}
	// The record exists before the task can end, so that every accepted
	// job has one.
	if err := r.Store.add(e); err != nil {
		return jobs.Record{}, err
	}
	r.Store.mu.Lock()
	defer r.Store.mu.Unlock()
	if err := r.start(e, job); err != nil {
		r.Store.removeLocked(e.id)
		return jobs.Record{}, err
	}
	return e.record(r.Store.now), nil
}

// prepare checks spec as Submit does. A kind only declared
// (jobs.Declare) is refused, jobs.ErrNotRunHere: nothing else runs a job
// submitted here.
func (r *Runner) prepare(spec jobs.Spec) (jobs.Prepared, error) {
	def, longest := jobs.Timeouts(r.DefaultTimeout, r.MaxTimeout)
	job, err := r.Kinds.Prepare(spec, def, longest)
	if err != nil {
		return jobs.Prepared{}, err
	}
	if !r.Kinds.Runs(spec.Kind) {
		return jobs.Prepared{}, fmt.Errorf("memjobs: %s job: %w (memjobs runs its jobs in the process that submits them: register the kind, with its function)", spec.Kind, jobs.ErrNotRunHere)
	}
	if !job.RunAt.IsZero() {
		return jobs.Prepared{}, &jobs.InvalidError{Reason: `"run_at": a job due later needs the JetStream store; in memory every job runs now`}
	}
	return job, nil
}

// start submits e's run, e.run, to the pool. r.Store.mu must be held: no
// one reads e.run's task before it is set.
func (r *Runner) start(e *entry, job jobs.Prepared) error {
	u := e.run
	t, err := r.Pool.TrySubmit(func(ctx context.Context) error {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		u.mu.Lock()
		if u.canceled != "" {
			u.mu.Unlock()
			return errCanceled // canceled while queued: never runs
		}
		u.cancel = cancel
		u.mu.Unlock()
		// Its progress, kept in memory at most once a second (as a
		// durable store writes it) and dropped at its end.
		progress := jobs.NewProgressWriter(func(p jobs.ProgressReport) {
			u.mu.Lock()
			u.progress = &p
			u.mu.Unlock()
		})
		ctx = jobs.WithProgress(ctx, progress)
		v, err := func() (json.RawMessage, error) {
			defer progress.Stop() // a panic too ends its progress
			info := jobs.Info{ID: e.id, Kind: e.kind, Attempt: 1, After: e.spec.After}
			return job.Run(jobs.WithGetter(jobs.WithInfo(ctx, info), r.Get))
		}()
		u.mu.Lock()
		defer u.mu.Unlock()
		u.progress = nil
		if u.ended.IsZero() {
			u.ended = r.Store.now()
		}
		if err == nil {
			u.result = v
		}
		if _, ok := jobs.SnoozedFor(err); ok {
			return fmt.Errorf("%w: in memory a job runs once, and a snooze ends it as a failure would (the JetStream store runs it again)", err)
		}
		return err
	}, crew.Named("job:"+e.kind), crew.Timeout(job.Timeout))
	if err != nil {
		return err
	}
	u.task = t
	if len(r.Store.waiters[e.id]) > 0 {
		r.watch(e) // released, with jobs waiting for it (after.go)
	}
	return nil
}

// Get implements Runner.
func (r *Runner) Get(_ context.Context, id string) (jobs.Record, error) {
	if !jobs.ValidID(id) {
		return jobs.Record{}, jobs.ErrNotFound
	}
	r.Store.mu.Lock()
	defer r.Store.mu.Unlock()
	e, ok := r.Store.byID[id]
	if !ok {
		return jobs.Record{}, jobs.ErrNotFound
	}
	return e.record(r.Store.now), nil
}
