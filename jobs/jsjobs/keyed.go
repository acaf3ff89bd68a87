package jsjobs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go/jetstream"
)

// claim is the record of an idempotency key in the bucket, under
// claimKey: the job it was first posted for, and that request's
// fingerprint.
type claim struct {
	ID      string    `json:"id"`
	Request string    `json:"request_sha256"`
	Created time.Time `json:"created"`
}

// claimKey is the bucket key of an idempotency key: never a job id (those
// are 16 hex digits without a dot).
func claimKey(key string) string { return "idempotency." + jobs.KeyHash(key) }

// SubmitOnce implements Runner. The key's claim is created in the bucket
// with Create, so that exactly one request wins it, on any replica; the
// others read it and answer its job. The job's message carries the job id
// as Nats-Msg-Id, so that a publish made twice (by the winner and a retry
// that found the job neither recorded nor waiting) is stored once, within
// the stream's duplicates window. The claim expires SucceededTTL after it
// was made, the shortest retention, so that a job ended while its claim
// lives still has its record: that is the window in which a key answers
// the same job.
func (r *Runner) SubmitOnce(ctx context.Context, spec jobs.Spec, key string) (jobs.Record, bool, error) {
	if err := jobs.CheckKey(key); err != nil {
		return jobs.Record{}, false, err
	}
	if err := ctx.Err(); err != nil {
		return jobs.Record{}, false, err
	}
	// A client that goes away does not stop its keyed submit halfway: its
	// retry will ask for the same job.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jobs.KeyedTimeout)
	defer cancel()
	job, err := r.kinds.Prepare(spec, r.defaultTimeout, r.maxTimeout)
	if errors.Is(err, jobs.ErrRunAtPast) {
		// Refused unless it repeats a request accepted before its time.
		return r.replay(ctx, claimKey(key), job, err)
	}
	if err != nil {
		return jobs.Record{}, false, err
	}
	if err := r.connected(); err != nil {
		return jobs.Record{}, false, err
	}
	if err := r.acceptable(ctx, job); err != nil {
		return jobs.Record{}, false, err
	}
	if err := r.parentsKnown(ctx, job.After); err != nil {
		return jobs.Record{}, false, err
	}
	mine := claim{ID: r.newID(), Request: job.Request(), Created: time.Now()}
	data, err := json.Marshal(mine)
	if err != nil {
		return jobs.Record{}, false, err
	}
	ck := claimKey(key)
	// A claim gone between our Create and our Get (deleted by an operator,
	// or expired) is tried again, a few times.
	for range 3 {
		_, err = r.store.kv.Create(ctx, ck, data, jetstream.KeyTTL(r.store.succeededTTL))
		if err == nil {
			rec, err := r.storeJob(ctx, mine.ID, mine.Created, spec, job)
			if err != nil {
				// The claim stays: maybe the job was stored after all (the
				// answer lost), and a retry finds the claim and publishes
				// the same job, stored once.
				return jobs.Record{}, false, err
			}
			return rec, false, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return jobs.Record{}, false, storeError(err)
		}
		theirs, found, err := r.claimOf(ctx, ck, mine.Request)
		if err != nil {
			return jobs.Record{}, false, err
		}
		if !found {
			continue
		}
		rec, err := r.Get(ctx, theirs.ID)
		if errors.Is(err, jobs.ErrNotFound) {
			// Neither recorded nor waiting: its request died before the
			// stream stored it (or the answer was lost). Published here,
			// stored once within the duplicates window.
			rec, err = r.storeJob(ctx, theirs.ID, theirs.Created, spec, job)
		}
		if err != nil {
			return jobs.Record{}, false, err
		}
		return rec, true, nil
	}
	return jobs.Record{}, false, fmt.Errorf("%w: the idempotency key's claim keeps changing", jobs.ErrUnavailable)
}

// claimOf reads the claim of key ck, which must be of the same request:
// ErrKeyReused if not; found is false if there is none.
func (r *Runner) claimOf(ctx context.Context, ck, request string) (theirs claim, found bool, err error) {
	e, err := r.store.kv.Get(ctx, ck)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return claim{}, false, nil
	}
	if err != nil {
		return claim{}, false, storeError(err)
	}
	if err := json.Unmarshal(e.Value(), &theirs); err != nil || !jobs.ValidID(theirs.ID) {
		return claim{}, false, fmt.Errorf("claim of an idempotency key: %q: %v", e.Value(), err)
	}
	if theirs.Request != request {
		return claim{}, false, fmt.Errorf("%w: the job %s was posted under it with another body", jobs.ErrKeyReused, theirs.ID)
	}
	return theirs, true, nil
}

// replay answers a keyed request that Prepare refused (its run_at passed)
// with the job it was accepted for before, if its key's claim says so;
// else with refused.
func (r *Runner) replay(ctx context.Context, ck string, job jobs.Prepared, refused error) (jobs.Record, bool, error) {
	if err := r.connected(); err != nil {
		return jobs.Record{}, false, err
	}
	theirs, found, err := r.claimOf(ctx, ck, job.Request())
	if err != nil || !found {
		return jobs.Record{}, false, cmp.Or(err, refused)
	}
	rec, err := r.Get(ctx, theirs.ID)
	if errors.Is(err, jobs.ErrNotFound) {
		return jobs.Record{}, false, refused // its record gone, the claim outlived it
	}
	if err != nil {
		return jobs.Record{}, false, err
	}
	return rec, true, nil
}

// storeJob stores keyed job id: its message, or its waiting record for a
// job with parents; each stored once however often it is asked.
func (r *Runner) storeJob(ctx context.Context, id string, created time.Time, spec jobs.Spec, job jobs.Prepared) (jobs.Record, error) {
	if len(job.After) > 0 {
		return r.storeWaiting(ctx, id, created, spec, job)
	}
	if _, err := r.store.publish(ctx, id, job, 0, 0); err != nil {
		return jobs.Record{}, storeError(err)
	}
	return accepted(id, spec.Kind, created, job), nil
}
