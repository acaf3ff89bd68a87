package jsjobs

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/crew-go/crew/jobs"
)

// jobStore is the jobs' stream and their records, read together: find
// answers where a job is, whichever place it is in.
type jobStore struct {
	*records
	*jobStream
}

// find reads job id where it is, and returns its record with the record's
// revision, or, for a job without a record yet, what its waiting message
// says with that message's stream sequence (the other number 0).
//
// A job moves forward through three places, and each move stores the next
// place before it removes the last: its schedule (a job due later; the
// server stores the message it fires, then purges the schedule), its
// message, and its record (Handle returns, and the message is acked away,
// only once the record's write is stored). Read in that order, the places
// cannot miss a job that moves meanwhile. The record is read first all the
// same, as most jobs asked for have ended; but then a job may move between
// two reads and be in none of the places when each is read: its end
// stored and its message acked between the reads of its record and its
// message, or its schedule fired between the reads of its message and its
// schedule. Found nowhere is therefore not an answer until the places are
// read again in the order the job moves: its message, then its record.
// Only a job found nowhere pays these two reads.
func (r *jobStore) find(ctx context.Context, id string) (rec jobs.Record, rev, seq uint64, err error) {
	rec, rev, seq, err = r.firstLook(ctx, id)
	if !errors.Is(err, jobs.ErrNotFound) {
		return rec, rev, seq, err
	}
	// Not scheduled (any more): in the stream, or past it.
	rec, seq, err = r.message(ctx, id, r.anyReplica)
	if !errors.Is(err, jobs.ErrNotFound) {
		return rec, 0, seq, err
	}
	// Past the stream: its record was stored before its message went.
	rec, rev, err = r.load(ctx, id)
	if !errors.Is(err, jobs.ErrNotFound) {
		return rec, rev, 0, err
	}
	// Found nowhere by the reads any replica answers (direct gets): a
	// replica behind its leader may not hold yet what another process has
	// just stored (a job accepted a moment ago). It catches up within
	// milliseconds, and a leader may be the server cut off: the replicas
	// are asked once more, a moment later, before the leaders are, in the
	// same order.
	if err := sleepCtx(ctx, replicaLag); err != nil {
		return jobs.Record{}, 0, 0, storeError(err)
	}
	if rec, seq, err = r.message(ctx, id, r.anyReplica); !errors.Is(err, jobs.ErrNotFound) {
		return rec, 0, seq, err
	}
	if rec, rev, err = r.load(ctx, id); !errors.Is(err, jobs.ErrNotFound) {
		return rec, rev, 0, err
	}
	return r.findAtLeaders(ctx, id)
}

// firstLook reads job id's record, then, without one, its message or its
// schedule (waiting). While a replica is suspect (hedge.go), it reads both
// at once: each read may have to be sent again past the replica, and a
// queued job's Get then waits for the longer read, not for the two in
// turn. Read at once, the answers are still ones the reads in turn could
// give: a record is taken first whenever one was found, and a message
// found with no record found is a job that had no record when its message
// was read (a record, once written, stays until the job's message is long
// gone), whichever read came first.
func (r *jobStore) firstLook(ctx context.Context, id string) (jobs.Record, uint64, uint64, error) {
	if !r.records.reads.suspected() {
		rec, rev, err := r.load(ctx, id)
		if !errors.Is(err, jobs.ErrNotFound) {
			return rec, rev, 0, err
		}
		rec, seq, err := r.waiting(ctx, id)
		return rec, 0, seq, err
	}
	var (
		waiting jobs.Record
		seq     uint64
		werr    error
		wg      sync.WaitGroup
	)
	wg.Go(func() { waiting, seq, werr = r.waiting(ctx, id) })
	rec, rev, err := r.load(ctx, id)
	wg.Wait()
	if !errors.Is(err, jobs.ErrNotFound) {
		return rec, rev, 0, err
	}
	return waiting, 0, seq, werr
}

// replicaLag is how long find waits for a replica behind its leader
// before it reads the replicas again.
const replicaLag = 20 * time.Millisecond

// sleepCtx waits d, or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// findAtLeaders is find through the leaders' reads alone: for a reader
// that must not act on a replica's stale copy.
func (r *jobStore) findAtLeaders(ctx context.Context, id string) (jobs.Record, uint64, uint64, error) {
	return r.findAt(ctx, id, r.leaderRecord)
}

// findAfter is findAtLeaders for a writer whose write over revision
// refused was refused: what the record changed to (leaderRecordAfter).
func (r *jobStore) findAfter(refused uint64) func(ctx context.Context, id string) (jobs.Record, uint64, uint64, error) {
	return func(ctx context.Context, id string) (jobs.Record, uint64, uint64, error) {
		return r.findAt(ctx, id, func(ctx context.Context, id string) (jobs.Record, uint64, error) {
			return r.leaderRecordAfter(ctx, id, refused)
		})
	}
}

// findAt is find with the record read by record, and the stream read from
// its leader.
func (r *jobStore) findAt(ctx context.Context, id string, record func(context.Context, string) (jobs.Record, uint64, error)) (rec jobs.Record, rev, seq uint64, err error) {
	if rec, rev, err = record(ctx, id); !errors.Is(err, jobs.ErrNotFound) {
		return rec, rev, 0, err
	}
	leader := r.leader
	if rec, seq, err = r.scheduled(ctx, id, leader); !errors.Is(err, jobs.ErrNotFound) {
		return rec, 0, seq, err
	}
	if rec, seq, err = r.message(ctx, id, leader); !errors.Is(err, jobs.ErrNotFound) {
		return rec, 0, seq, err
	}
	rec, rev, err = record(ctx, id)
	return rec, rev, 0, err
}
