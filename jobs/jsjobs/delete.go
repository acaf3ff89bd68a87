package jsjobs

import (
	"context"
	"errors"

	"github.com/crew-go/crew/jobs"
)

// Delete implements jobs.Deleter: the ended job's record is purged from
// the bucket over the revision read (purge), so that a Retry or a cancel
// written meanwhile is read again rather than deleted; the index drops
// it as its tail reads the purge (tail.go).
func (r *Runner) Delete(ctx context.Context, id string) (jobs.Record, error) {
	if !jobs.ValidID(id) {
		return jobs.Record{}, jobs.ErrNotFound
	}
	if err := r.connected(); err != nil {
		return jobs.Record{}, err
	}
	find := r.store.find
	for range 5 {
		rec, rev, _, err := find(ctx, id)
		switch {
		case err != nil:
			return jobs.Record{}, err
		case !rec.State.Terminal() || rev == 0:
			return rec, &jobs.LiveError{State: rec.State}
		}
		err = r.store.purge(ctx, id, rev)
		if errors.Is(err, errChanged) {
			find = r.store.findAfter(rev)
			continue
		}
		if err != nil {
			return jobs.Record{}, err
		}
		r.instruments.deleted(rec.State)
		return rec, nil
	}
	return jobs.Record{}, errChanged
}
