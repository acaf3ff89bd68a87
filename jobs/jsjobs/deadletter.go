package jsjobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crew-go/crew/jobs"
)

// Dead letters: a job that failed, timed out, was canceled or was not run
// keeps its record, its spec and its runs' errors for the failure
// retention (FailedTTL), listable by state, and Retry runs it again.
//
// The rule that runs it once, whoever comes first: Retry publishes the
// job's message again, marked with the revision of the ended record it
// retries (headerRetryOf, with a message id of its own, so that a Retry
// repeated meanwhile is stored once), then writes the record queued over
// that revision. A delivery that finds the record ended runs only the
// message of a Retry of that very revision; so a Retry that fails after
// its publish still runs the job, and a cancel or an end written since
// stops it.
// Of the Retries of one revision asked at once, the one whose publish
// stored the message is the one counted: the others' publishes are
// duplicates, whoever then writes the record.

// Retry implements jobs.Retrier.
func (r *Runner) Retry(ctx context.Context, id string) (jobs.Record, error) {
	if !jobs.ValidID(id) {
		return jobs.Record{}, jobs.ErrNotFound
	}
	if err := r.connected(); err != nil {
		return jobs.Record{}, err
	}
	find := r.store.find
	retries := -1      // the record's count before this Retry's publish
	var was jobs.State // and the revision retried, from
	var from uint64
	stored := false // this Retry's latest publish stored the message
	for range 5 {
		rec, rev, _, err := find(ctx, id)
		switch {
		case err != nil:
			return jobs.Record{}, err
		case retries >= 0 && rec.Retries > retries:
			// Run again since this Retry's publish, its run first to
			// write the record (a quick job can even have ended), or
			// another Retry of the same revision.
			if stored {
				r.retriedBy(id, was, from, rec.Retries)
			}
			return rec, nil
		case !rec.State.Terminal():
			return rec, nil
		case rec.State == jobs.Succeeded:
			return rec, &jobs.EndedError{State: rec.State}
		case rec.Spec == nil:
			return rec, jobs.ErrNoSpec
		}
		if len(rec.After) > 0 {
			// A job with parents waits for them again (deps.go): retried
			// after its failed parent, it runs once that one has ended.
			again := queuedAgain(rec)
			again.State = jobs.Waiting
			if _, err := r.store.swap(ctx, again, rev); errors.Is(err, errChanged) {
				find = r.store.findAfter(rev)
				continue
			} else if err != nil {
				return jobs.Record{}, err
			}
			r.deps.follow()
			r.retriedBy(id, rec.State, rev, again.Retries)
			return again, nil
		}
		spec := *rec.Spec
		spec.RunAt = time.Time{}       // now
		spec.Submitter = rec.Submitter // its first submitter's still
		job, err := r.kinds.Prepare(spec, r.defaultTimeout, r.maxTimeout)
		if err != nil {
			return rec, fmt.Errorf("job %s cannot run again: %w", id, err)
		}
		retries, was, from = rec.Retries, rec.State, rev
		pctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
		dup, err := r.store.publish(pctx, id, job, rev, rec.Retries+1)
		cancel()
		if err != nil {
			return jobs.Record{}, storeError(err)
		}
		stored = !dup
		again := queuedAgain(rec)
		if _, err := r.store.swap(ctx, again, rev); errors.Is(err, errChanged) {
			find = r.store.findAfter(rev) // its run (or a cancel) wrote it first: read it again, fresh
			continue
		} else if err != nil {
			// Published: the job runs, and its run writes its record.
			r.logWarn("job retried, its record left as it was until its run", "job", id, "error", err)
		}
		if stored {
			r.retriedBy(id, was, rev, again.Retries)
		}
		return again, nil
	}
	return jobs.Record{}, fmt.Errorf("%w: job %s's record keeps changing", jobs.ErrUnavailable, id)
}

// retriedBy logs and counts a job run again by a Retry, which found it in
// state was at revision rev.
func (r *Runner) retriedBy(id string, was jobs.State, rev uint64, retries int) {
	if r.log != nil {
		r.log.Info("job retried", "job", id, "was", string(was), "rev", rev, "retries", retries)
	}
	r.instruments.rerun(was)
}
