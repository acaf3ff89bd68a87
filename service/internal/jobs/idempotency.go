package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Idempotency keys (the Idempotency-Key header of POST /v1/jobs): a client
// that lost the answer to a job it posted sends the same request again
// with the same key, and is answered with the same job rather than given a
// second one. The key is the client's, so it never becomes part of a
// subject or a key as it is: only its SHA-256 does.

// keyedTimeout bounds a keyed submit, which its client's going away does
// not cut short.
const keyedTimeout = 10 * time.Second

// MaxKeyLen bounds an idempotency key.
const MaxKeyLen = 255

// ErrKeyReused refuses a job posted under an idempotency key that an
// earlier job with another request was posted under.
var ErrKeyReused = errors.New("idempotency key reused for another request")

// CheckKey refuses an idempotency key that is empty, longer than
// MaxKeyLen, or not printable ASCII.
func CheckKey(key string) error {
	if key == "" || len(key) > MaxKeyLen {
		return &InvalidError{fmt.Sprintf("idempotency key of %d bytes: want 1 to %d printable ASCII characters (a UUID, say)", len(key), MaxKeyLen)}
	}
	for i := range len(key) {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return &InvalidError{fmt.Sprintf("idempotency key: byte %d is 0x%02x; want printable ASCII characters (a UUID, say)", i, c)}
		}
	}
	return nil
}

// keyHash is what stands for a key wherever it is kept.
func keyHash(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// fingerprint tells two requests apart: the spec as validated, with its
// timeout, so that field order and a default spelled out do not matter.
func fingerprint(body []byte) string {
	h := sha256.Sum256(body)
	return hex.EncodeToString(h[:])
}

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
func claimKey(key string) string { return "idempotency." + keyHash(key) }

// SubmitOnce implements Runner. The key's claim is created in the bucket
// with Create, so that exactly one request wins it, on any replica; the
// others read it and answer its job. The job's message carries the job id
// as Nats-Msg-Id, so that a publish made twice (by the winner and a retry
// that found the job not yet recorded) is stored once, within the stream's
// duplicates window. The claim expires with the bucket's TTL (the record
// TTL) after it was made: the window in which a key answers the same job.
func (r *JetStreamRunner) SubmitOnce(ctx context.Context, spec Spec, key string) (Record, bool, error) {
	if err := CheckKey(key); err != nil {
		return Record{}, false, err
	}
	// A client that goes away does not stop its keyed submit halfway: its
	// retry will ask for the same job.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keyedTimeout)
	defer cancel()
	body, err := spec.Encode(r.defaultTimeout, r.maxTimeout)
	if err != nil {
		return Record{}, false, err
	}
	if err := r.connected(); err != nil {
		return Record{}, false, err
	}
	mine := claim{ID: newID(), Request: fingerprint(body), Created: time.Now()}
	data, err := json.Marshal(mine)
	if err != nil {
		return Record{}, false, err
	}
	ck := claimKey(key)
	// A claim gone between our Create and our Get (deleted by an operator,
	// or expired) is tried again, a few times.
	for range 3 {
		_, err = r.kv.Create(ctx, ck, data)
		if err == nil {
			rec := Record{ID: mine.ID, Kind: spec.Kind, State: Queued, Created: mine.Created}
			if err := r.enqueue(ctx, rec, body); err != nil {
				// The claim stays: maybe the job was stored after all (the
				// answer lost), and a retry finds the claim and records
				// and publishes the same job, stored once.
				return Record{}, false, err
			}
			return rec, false, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return Record{}, false, storeError(err)
		}
		e, err := r.kv.Get(ctx, ck)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue
		}
		if err != nil {
			return Record{}, false, storeError(err)
		}
		var theirs claim
		if err := json.Unmarshal(e.Value(), &theirs); err != nil || !ValidID(theirs.ID) {
			return Record{}, false, fmt.Errorf("claim of an idempotency key: %q: %v", e.Value(), err)
		}
		if theirs.Request != mine.Request {
			return Record{}, false, fmt.Errorf("%w: the job %s was posted under it with another body", ErrKeyReused, theirs.ID)
		}
		rec, _, err := r.load(ctx, theirs.ID)
		switch {
		case errors.Is(err, ErrNotFound):
			// Its request has not recorded it yet, or died before it
			// could: recorded and published here too, stored once.
			rec = Record{ID: theirs.ID, Kind: spec.Kind, State: Queued, Created: theirs.Created}
			if err := r.enqueue(ctx, rec, body); err != nil {
				return Record{}, false, err
			}
		case err != nil:
			return Record{}, false, err
		case rec.State == Queued && time.Since(theirs.Created) < r.duplicates():
			// Maybe recorded and never published (its process killed in
			// between): published again, which the stream stores once
			// within its duplicates window. Past it the job is left as
			// it is, so that a retry never makes a second run.
			if err := r.publishJob(ctx, rec.ID, body); err != nil {
				return Record{}, false, err
			}
		}
		return rec, true, nil
	}
	return Record{}, false, fmt.Errorf("%w: the idempotency key's claim keeps changing", ErrUnavailable)
}

// enqueue records a job queued (unless its record exists) and publishes
// it with its id as the message id.
func (r *JetStreamRunner) enqueue(ctx context.Context, rec Record, body []byte) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if _, err := r.kv.Create(ctx, rec.ID, data); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return storeError(err)
	}
	return r.publishJob(ctx, rec.ID, body)
}

func (r *JetStreamRunner) publishJob(ctx context.Context, id string, body []byte) error {
	if _, err := r.js.Publish(ctx, r.subject+id, body, jetstream.WithMsgID(id)); err != nil {
		return storeError(err)
	}
	return nil
}

// duplicates is the stream's duplicates window: 2 minutes unless the
// stream was made with another.
func (r *JetStreamRunner) duplicates() time.Duration {
	if r.dupWindow > 0 {
		return r.dupWindow
	}
	return 2 * time.Minute
}

// SubmitOnce implements Runner, in memory: a key answers its job as long as
// the job's record is kept.
func (r *PoolRunner) SubmitOnce(ctx context.Context, spec Spec, key string) (Record, bool, error) {
	if err := CheckKey(key); err != nil {
		return Record{}, false, err
	}
	body, err := spec.Encode(r.DefaultTimeout, r.MaxTimeout)
	if err != nil {
		return Record{}, false, err
	}
	kh, fp := keyHash(key), fingerprint(body)
	// One keyed submit at a time: the check and the submit are one step.
	r.Store.keyMu.Lock()
	defer r.Store.keyMu.Unlock()
	if id, req, ok := r.Store.keyed(kh); ok {
		if req != fp {
			return Record{}, false, fmt.Errorf("%w: the job %s was posted under it with another body", ErrKeyReused, id)
		}
		if rec, err := r.Get(ctx, id); err == nil {
			return rec, true, nil
		}
	}
	rec, err := r.Submit(ctx, spec)
	if err != nil {
		return Record{}, false, err
	}
	r.Store.setKey(rec.ID, kh, fp)
	return rec, false, nil
}
