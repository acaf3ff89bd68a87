package jobs

import (
	"context"
	"time"

	"github.com/crew-go/crew"
)

// PoolRunner runs jobs as long tasks on a crew pool, with their records in
// a Store. A job is refused, never queued unseen: a full queue answers
// crew.ErrQueueFull at once (the API's 503 with Retry-After), a closed pool
// crew.ErrClosed.
type PoolRunner struct {
	Pool           *crew.Pool
	Store          *Store
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
}

var _ Runner = (*PoolRunner)(nil)

// Submit implements Runner.
func (r *PoolRunner) Submit(_ context.Context, spec Spec) (Record, error) {
	timeout, err := spec.Validate(r.DefaultTimeout, r.MaxTimeout)
	if err != nil {
		return Record{}, err
	}
	e := &entry{id: newID(), kind: spec.Kind, created: r.Store.now()}
	// The record exists before the task can end, so that every accepted
	// job has one.
	if err := r.Store.add(e); err != nil {
		return Record{}, err
	}
	t, err := r.Pool.TrySubmit(func(ctx context.Context) error {
		v, err := spec.Run(ctx)
		if err == nil {
			e.mu.Lock()
			e.result = v
			e.mu.Unlock()
		}
		return err
	}, crew.Named("job:"+spec.Kind), crew.Timeout(timeout))
	if err != nil {
		r.Store.remove(e.id)
		return Record{}, err
	}
	r.Store.mu.Lock()
	e.task = t
	r.Store.mu.Unlock()
	return e.record(), nil
}

// Get implements Runner.
func (r *PoolRunner) Get(_ context.Context, id string) (Record, error) {
	if !ValidID(id) {
		return Record{}, ErrNotFound
	}
	e, ok := r.Store.get(id)
	if !ok {
		return Record{}, ErrNotFound
	}
	r.Store.mu.Lock()
	defer r.Store.mu.Unlock()
	return e.record(), nil
}
