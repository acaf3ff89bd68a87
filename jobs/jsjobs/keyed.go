package jsjobs

import (
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
// that found the job not yet recorded) is stored once, within the stream's
// duplicates window. The claim expires with the bucket's TTL (the record
// TTL) after it was made: the window in which a key answers the same job.
func (r *Runner) SubmitOnce(ctx context.Context, spec jobs.Spec, key string) (jobs.Record, bool, error) {
	if err := jobs.CheckKey(key); err != nil {
		return jobs.Record{}, false, err
	}
	// A client that goes away does not stop its keyed submit halfway: its
	// retry will ask for the same job.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jobs.KeyedTimeout)
	defer cancel()
	job, err := r.kinds.Prepare(spec, r.defaultTimeout, r.maxTimeout)
	if err != nil {
		return jobs.Record{}, false, err
	}
	body := job.Body
	if err := r.connected(); err != nil {
		return jobs.Record{}, false, err
	}
	mine := claim{ID: jobs.NewID(), Request: jobs.Fingerprint(body), Created: time.Now()}
	data, err := json.Marshal(mine)
	if err != nil {
		return jobs.Record{}, false, err
	}
	ck := claimKey(key)
	// A claim gone between our Create and our Get (deleted by an operator,
	// or expired) is tried again, a few times.
	for range 3 {
		_, err = r.kv.Create(ctx, ck, data)
		if err == nil {
			rec := jobs.Record{ID: mine.ID, Kind: spec.Kind, State: jobs.Queued, Created: mine.Created}
			if err := r.enqueue(ctx, rec, body); err != nil {
				// The claim stays: maybe the job was stored after all (the
				// answer lost), and a retry finds the claim and records
				// and publishes the same job, stored once.
				return jobs.Record{}, false, err
			}
			return rec, false, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return jobs.Record{}, false, storeError(err)
		}
		e, err := r.kv.Get(ctx, ck)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue
		}
		if err != nil {
			return jobs.Record{}, false, storeError(err)
		}
		var theirs claim
		if err := json.Unmarshal(e.Value(), &theirs); err != nil || !jobs.ValidID(theirs.ID) {
			return jobs.Record{}, false, fmt.Errorf("claim of an idempotency key: %q: %v", e.Value(), err)
		}
		if theirs.Request != mine.Request {
			return jobs.Record{}, false, fmt.Errorf("%w: the job %s was posted under it with another body", jobs.ErrKeyReused, theirs.ID)
		}
		rec, _, err := r.load(ctx, theirs.ID)
		switch {
		case errors.Is(err, jobs.ErrNotFound):
			// Its request has not recorded it yet, or died before it
			// could: recorded and published here too, stored once.
			rec = jobs.Record{ID: theirs.ID, Kind: spec.Kind, State: jobs.Queued, Created: theirs.Created}
			if err := r.enqueue(ctx, rec, body); err != nil {
				return jobs.Record{}, false, err
			}
		case err != nil:
			return jobs.Record{}, false, err
		case rec.State == jobs.Queued && time.Since(theirs.Created) < r.duplicates():
			// Maybe recorded and never published (its process killed in
			// between): published again, which the stream stores once
			// within its duplicates window. Past it the job is left as
			// it is, so that a retry never makes a second run.
			if err := r.publishJob(ctx, rec.ID, body); err != nil {
				return jobs.Record{}, false, err
			}
		}
		return rec, true, nil
	}
	return jobs.Record{}, false, fmt.Errorf("%w: the idempotency key's claim keeps changing", jobs.ErrUnavailable)
}

// enqueue records a job queued (unless its record exists) and publishes
// it with its id as the message id.
func (r *Runner) enqueue(ctx context.Context, rec jobs.Record, body []byte) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if _, err := r.kv.Create(ctx, rec.ID, data); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return storeError(err)
	}
	return r.publishJob(ctx, rec.ID, body)
}

func (r *Runner) publishJob(ctx context.Context, id string, body []byte) error {
	if err := r.publish(ctx, id, body); err != nil {
		return storeError(err)
	}
	return nil
}

// duplicates is the stream's duplicates window: 2 minutes unless the
// stream was made with another.
func (r *Runner) duplicates() time.Duration {
	if r.dupWindow > 0 {
		return r.dupWindow
	}
	return 2 * time.Minute
}
