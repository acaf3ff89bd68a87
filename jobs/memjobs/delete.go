package memjobs

import (
	"context"

	"github.com/crew-go/crew/jobs"
)

var _ jobs.Deleter = (*Runner)(nil)

// Delete implements jobs.Deleter: an ended job's record is forgotten (its
// idempotency key with it).
func (r *Runner) Delete(_ context.Context, id string) (jobs.Record, error) {
	if !jobs.ValidID(id) {
		return jobs.Record{}, jobs.ErrNotFound
	}
	r.Store.mu.Lock()
	defer r.Store.mu.Unlock()
	e, ok := r.Store.byID[id]
	if !ok {
		return jobs.Record{}, jobs.ErrNotFound
	}
	rec := e.record(r.Store.now)
	if !rec.State.Terminal() {
		return rec, &jobs.LiveError{State: rec.State}
	}
	r.Store.removeLocked(id)
	return rec, nil
}
