package jsjobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/crew-go/crew/jobs"
)

// tails starts the index's tails at the first call, and returns them;
// ErrUnavailable for a closed runner, whose index no longer follows the
// store.
func (r *Runner) tails() (*tails, error) {
	return r.listing.get(func() *tails { return follow(r.js, r.layout, r.storeTimeout, r.store.ttl, r.deps) })
}

// List implements jobs.Lister, from this process's index of the jobs
// (index.go), which costs no store write: its first call reads the
// stream and the bucket from their start and follows them after; each
// call has the index read them up to their end first (two batched reads,
// at most syncWait), so that a job is listed as it is when List is
// called, on whichever process it last changed. The page's records are
// then read from the store as Get reads them; one that has changed state
// meanwhile is left out.
func (r *Runner) List(ctx context.Context, q jobs.Query) (jobs.Page, error) {
	after, err := listQuery(&q)
	if err != nil {
		return jobs.Page{}, err
	}
	ids, next, err := r.pageIDs(ctx, q, after)
	if err != nil {
		return jobs.Page{}, err
	}
	recs, err := r.read(ctx, ids)
	if err != nil {
		return jobs.Page{}, err
	}
	return jobs.Page{Jobs: stillIn(recs, q.State), Next: next}, nil
}

// listQuery validates q and reads its cursor.
func listQuery(q *jobs.Query) (item, error) {
	if err := q.Validate(); err != nil {
		return item{}, err
	}
	var after item
	if q.After != "" {
		var ok bool
		if after, ok = parseCursor(q.After); !ok {
			return item{}, jobs.BadCursor(q.After)
		}
	}
	return after, nil
}

// pageIDs are the jobs of q's page below after, from the index synced,
// and the cursor of the next page.
func (r *Runner) pageIDs(ctx context.Context, q jobs.Query, after item) ([]found, string, error) {
	if err := ctx.Err(); err != nil {
		// Before the index, which may have caught up already and let a
		// page through.
		return nil, "", err
	}
	t, err := r.tails()
	if err != nil {
		return nil, "", err
	}
	if err := r.loaded(ctx, t); err != nil {
		return nil, "", err
	}
	r.synced(ctx, t)
	var delivered map[string]uint64
	if q.State == "" || q.State == jobs.Queued || q.State == jobs.Running {
		delivered = r.deliveredAll(ctx, t.index)
	}
	ids, next := t.index.page(q.State, q.Kind, q.Queue, after, q.Limit, delivered)
	return ids, next, nil
}

// stillIn are the records read that are still in state st (any if
// empty): a job gone meanwhile, or moved to another state, is left out.
func stillIn(recs []jobs.Record, st jobs.State) []jobs.Record {
	out := make([]jobs.Record, 0, len(recs))
	for _, rec := range recs {
		if rec.ID != "" && (st == "" || rec.State == st) {
			out = append(out, rec)
		}
	}
	return out
}

// Counts implements jobs.Lister, from the index as List reads it.
func (r *Runner) Counts(ctx context.Context) (jobs.Counts, error) {
	x, err := r.syncedIndex(ctx)
	if err != nil {
		return nil, err
	}
	return x.counts(r.deliveredAll(ctx, x)), nil
}

// EndsPerMinute counts the jobs that ended a minute over the last
// minutes, from the index (no store read but its sync).
func (r *Runner) EndsPerMinute(ctx context.Context, minutes int) ([]jobs.Ends, error) {
	if minutes < 1 || minutes > jobs.MaxEndsMinutes {
		return nil, &jobs.InvalidError{Reason: fmt.Sprintf(`"minutes" %d: want 1 to %d`, minutes, jobs.MaxEndsMinutes)}
	}
	x, err := r.syncedIndex(ctx)
	if err != nil {
		return nil, err
	}
	return x.ends(time.Now(), minutes), nil
}

// syncedIndex is the index once loaded, and synced with the stores as
// far as they answer within syncWait.
func (r *Runner) syncedIndex(ctx context.Context) (*index, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t, err := r.tails()
	if err != nil {
		return nil, err
	}
	if err := r.loaded(ctx, t); err != nil {
		return nil, err
	}
	r.synced(ctx, t)
	return t.index, nil
}

// deliveredAll is how far each lane of the index's jobs (a queue's
// priority, named by consumerOf("", queue, priority)) has been delivered.
func (r *Runner) deliveredAll(ctx context.Context, x *index) map[string]uint64 {
	d := map[string]uint64{}
	for _, ln := range x.queueNames() {
		q, p, ok := jobs.DefaultQueue, jobs.DefaultPriority, true
		if ln != jobs.DefaultQueue {
			q, p, ok = laneOf("", ln)
		}
		if ok {
			d[ln] = r.store.delivered(ctx, q, p)
		}
	}
	return d
}

// syncWait bounds how long List and Counts wait for the index to read
// the stores up to their end; past it (the store slow or out) they answer
// from the index as it is.
const syncWait = 500 * time.Millisecond

// synced has the index read the stores up to now, for at most syncWait.
func (r *Runner) synced(ctx context.Context, t *tails) {
	ctx, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	t.sync(ctx)
}

// loaded waits, at most a store timeout, for the index to have read the
// store once.
func (r *Runner) loaded(ctx context.Context, t *tails) error {
	wctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	if err := t.wait(wctx); err != nil {
		// The caller's context ended: its error, not the store's.
		return cmp.Or(ctx.Err(), err)
	}
	return nil
}

// readers bounds the reads of a page's records in flight.
const readers = 16

// read reads the records of a page's jobs, in order; a job gone meanwhile
// is left a zero Record.
func (r *Runner) read(ctx context.Context, ids []found) ([]jobs.Record, error) {
	recs := make([]jobs.Record, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	sem := make(chan struct{}, readers)
	for i, f := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var err error
			if f.fromMsg {
				recs[i], _, err = r.store.waiting(ctx, f.id)
				if errors.Is(err, jobs.ErrNotFound) { // it has a record by now
					recs[i], _, err = r.store.load(ctx, f.id)
				}
			} else {
				recs[i], _, err = r.store.load(ctx, f.id)
			}
			if errors.Is(err, jobs.ErrNotFound) {
				err = nil // expired, evicted, or acked meanwhile
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return recs, nil
}
