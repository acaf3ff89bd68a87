package jsjobs

import (
	"context"
	"errors"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/natsjs"
)

// interrupted counts the first run of a job that a killed process held in
// its journal, started and not ended (natsjs.WithRecovered, as the process
// starts again on it): a first run writes its record only at its end, so
// without this its rerun would read attempt 1 again. The record is written
// queued, one attempt, over no record at all: a run that wrote its record
// (any but a first one, at its start) was counted then, and a job that
// moved on meanwhile is left as it is. A store that does not answer leaves
// the run uncounted, at-least-once as before.
func (r *Runner) interrupted(ctx context.Context, rc natsjs.Recovered) {
	if !rc.Started {
		return // held for a free worker, never run
	}
	what, id := r.layout.parse(rc.Subject)
	if what != aJob || !jobs.ValidID(id) {
		return
	}
	if _, _, err := r.store.load(ctx, id); !errors.Is(err, jobs.ErrNotFound) {
		return
	}
	rec, _, err := r.store.message(ctx, id, r.store.anyReplica)
	if err != nil {
		return // not waiting any more: ended, or canceled, meanwhile
	}
	rec.State, rec.Attempts, rec.Deliveries = jobs.Queued, 1, max(rc.Delivered, 1)
	rec.Error = "interrupted: the process running it was killed; it runs again"
	if _, err := r.store.swap(ctx, rec, 0); err != nil && !errors.Is(err, errChanged) {
		r.logWarn("a job's run cut short by a kill could not be counted", "job", id, "error", err)
	}
}
