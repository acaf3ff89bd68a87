package jsjobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/crew-go/crew/jobs"
)

// The waiting jobs' writes (deps.go says when they are made).

// indexState is job k's state in this runner's index, if its tails have
// started and read it.
func (r *Runner) indexState(k jobKey) (jobs.State, bool) {
	t := r.listing.started()
	if t == nil {
		return "", false
	}
	return t.index.stateOf(k)
}

// submitWaiting stores a job with parents, each known (parentsKnown,
// before: a join of many parents may take longer than a partition's
// Failover to read them), as its waiting record. Its message is published
// only when it is released.
func (r *Runner) submitWaiting(ctx context.Context, spec jobs.Spec, job jobs.Prepared) (jobs.Record, error) {
	rec, err := r.storeWaiting(ctx, r.newID(), time.Now(), spec, job)
	if err != nil {
		return jobs.Record{}, err
	}
	return rec, nil
}

// storeWaiting writes job id's waiting record, unless it exists (a keyed
// submit's retry): the record returned either way. Its parents are known.
func (r *Runner) storeWaiting(ctx context.Context, id string, created time.Time, spec jobs.Spec, job jobs.Prepared) (jobs.Record, error) {
	r.deps.follow() // so that this process releases it, if no other does (deps.go)
	rec := accepted(id, spec.Kind, created, job)
	rec.State, rec.After = jobs.Waiting, job.After
	kept := spec
	kept.RunAt, kept.Delay = time.Time{}, 0
	rec.Spec = &kept
	if _, err := r.store.swap(ctx, rec, 0); errors.Is(err, errChanged) {
		got, _, err := r.store.leaderRecord(ctx, id)
		return got, err
	} else if err != nil {
		return jobs.Record{}, err
	}
	return rec, nil
}

// parentsKnown checks that each parent is known: in the index, where the
// tails have read it (no read of the store: a join may have thousands of
// parents), else read from the store, 16 at a time; it refuses the first
// found nowhere (jobs.UnknownParent). A bad id is left to Prepare, which
// names it.
func (r *Runner) parentsKnown(ctx context.Context, after []string) error {
	var unread []string
	for _, id := range after {
		k, ok := keyOf(id)
		if !ok || len(after) > jobs.MaxAfter {
			return nil
		}
		if _, known := r.deps.stateOf(k); !known {
			unread = append(unread, id)
		}
	}
	_, err := r.readParents(ctx, unread)
	return err
}

// readParents reads the records of parents ids, 16 at a time: the first
// found nowhere is jobs.UnknownParent, and stops the reads not yet begun,
// so that a request naming thousands of unknown ids costs the store few
// reads.
func (r *Runner) readParents(ctx context.Context, ids []string) ([]jobs.Record, error) {
	get := r.get
	if get == nil {
		get = r.Get
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	recs, errs := jobs.GetAll(ctx, func(ctx context.Context, id string) (jobs.Record, error) {
		if err := ctx.Err(); err != nil {
			return jobs.Record{}, err
		}
		rec, err := get(ctx, id)
		if errors.Is(err, jobs.ErrNotFound) {
			stop()
		}
		return rec, err
	}, ids)
	var first error
	for i, err := range errs {
		switch {
		case errors.Is(err, jobs.ErrNotFound):
			return nil, jobs.UnknownParent(ids[i])
		case err != nil && first == nil:
			first = err
		}
	}
	return recs, first
}

// errParentAgain refuses to cancel a waiting job for its parent's end when
// the store says that parent has not ended so (retried since): the job
// waits for it again.
var errParentAgain = errors.New("its parent runs again")

// settleWaiting settles waiting job id, as decided on its record at
// revision seq: released (parent ""): its message published, named by the
// waiting record's revision, then its record written queued; or canceled
// for its parent's end in state st. A record no longer at seq (settled by
// another process, canceled, deleted, grown by AddAfter) is left as it
// is: the tail reads its change, and a waiting one is decided anew.
func (r *Runner) settleWaiting(ctx context.Context, id string, seq uint64, parent string, st jobs.State) error {
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	rec, rev, err := r.store.leaderRecord(ctx, id)
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		return nil
	case err != nil:
		return err
	case rec.State != jobs.Waiting || rev != seq:
		return nil
	}
	if parent != "" {
		// The index may be behind a Retry of the parent: the store says.
		get := r.get
		if get == nil {
			get = r.Get
		}
		p, err := get(ctx, parent)
		switch {
		case errors.Is(err, jobs.ErrNotFound):
		case err != nil:
			return err
		case !p.State.Terminal() || p.State == jobs.Succeeded:
			return errParentAgain
		default:
			st = p.State
		}
		return r.endWaiting(ctx, rec, rev, jobs.Canceled, jobs.ParentEnded(parent, st))
	}
	var job jobs.Prepared
	if rec.Spec != nil {
		spec := *rec.Spec
		spec.Submitter = rec.Submitter
		job, err = r.kinds.Prepare(spec, r.defaultTimeout, r.maxTimeout)
	} else {
		err = errors.New("its record keeps no spec")
	}
	if err != nil {
		// Its kind gone, or its bounds narrowed, since it was accepted.
		return r.endWaiting(ctx, rec, rev, jobs.Failed, fmt.Sprintf("its parents ended, but it cannot run: %v", err))
	}
	dup, err := r.store.publish(ctx, id, job, rev, 0)
	if err != nil {
		return storeError(err)
	}
	rec.State = jobs.Queued
	if _, err := r.store.swap(ctx, rec, rev); err != nil && !errors.Is(err, errChanged) {
		// Published: the job runs, and its run writes its record.
		r.logWarn("waiting job released, its record left waiting until its run", "job", id, "error", err)
	}
	if !dup && r.log != nil {
		r.log.Debug("waiting job released", "job", id, "rev", rev)
	}
	return nil
}

// endWaiting writes waiting job rec (at rev) ended in state st, for why;
// a record changed meanwhile was settled otherwise.
func (r *Runner) endWaiting(ctx context.Context, rec jobs.Record, rev uint64, st jobs.State, why string) error {
	rec.State, rec.Finished, rec.Error = st, time.Now(), why
	if st == jobs.Canceled {
		rec.CanceledWhile = jobs.Waiting
	}
	_, err := r.store.swap(ctx, rec, rev)
	switch {
	case errors.Is(err, errChanged):
		return nil
	case err != nil:
		return err
	case st == jobs.Canceled:
		r.instruments.canceled(jobs.Waiting)
	}
	return nil
}

// AddAfter adds parents to waiting job id (jobs.ParentAdder, with its
// rules): its record rewritten waiting with them, over the revision read,
// so that a release (settleWaiting, over that revision too) and an add
// cannot both land. A release that published the job's message before
// the add landed leaves a message that no run takes (mark: a waiting
// record runs only from its own revision's release). Every process's
// tail reads the new revision and counts the job's parents anew (deps).
func (r *Runner) AddAfter(ctx context.Context, id string, after ...string) (jobs.Record, error) {
	if !jobs.ValidID(id) {
		return jobs.Record{}, jobs.ErrNotFound
	}
	if err := r.connected(); err != nil {
		return jobs.Record{}, err
	}
	for refusals := 0; ; refusals++ {
		rec, rev, err := r.store.leaderRecord(ctx, id)
		if err != nil {
			return jobs.Record{}, err
		}
		added, err := jobs.Added(rec, after)
		if err != nil || len(added) == 0 {
			return rec, err
		}
		parents, err := r.readParents(ctx, added)
		if err != nil {
			return rec, err
		}
		for i, p := range parents {
			if p.State == jobs.Waiting {
				return rec, jobs.AddedParentWaits(added[i])
			}
		}
		grown := rec
		grown.After = append(slices.Clip(rec.After), added...)
		if rec.Spec != nil {
			spec := *rec.Spec
			spec.After = append(slices.Clip(spec.After), added...) // the gate not among them
			grown.Spec = &spec
		}
		r.deps.follow()
		wctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
		_, err = r.store.swap(wctx, grown, rev)
		cancel()
		switch {
		case err == nil:
			return grown, nil
		case !errors.Is(err, errChanged) || refusals == maxRefusals:
			return rec, storeError(err)
		}
	}
}
