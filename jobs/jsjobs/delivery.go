package jsjobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crew-go/crew/jobs"
)

// delivery is what handle needs of a message.
type delivery struct {
	subject   string
	data      []byte
	published time.Time
	attempt   int    // the server's delivery count, 1 for the first (0: not known)
	again     bool   // run again on the same delivery after an outage (natsjs.Unavailable)
	retryOf   uint64 // a Retry's message: the revision of the ended record it retries
	retries   int    // a Retry's message: the record's Retries once that Retry is recorded (0: not known)
	seq       uint64 // the message's stream sequence (0: not known)
	tickNext  string // a periodic job's tick: when its next is due (Nats-Schedule-Next)
	submitter string // who submitted the job (Crew-Submitter), "" for no one named
}

// before reports whether d is a message of the job from before its latest
// Retry, which rec records: the job's first message once it was retried,
// or the message of an earlier Retry.
func (d delivery) before(rec jobs.Record) bool {
	return d.retryOf == 0 && rec.Retries > 0 || d.retries > 0 && d.retries != rec.Retries
}

// decoded is a delivered job read: its spec and its run as its kind
// prepares them, or why it cannot run.
type decoded struct {
	id   string
	kind string        // "" when its spec could not be read
	spec *jobs.Spec    // kept in its record; nil when it cannot run
	job  jobs.Prepared // its timeout, attempts and run
	bad  string        // why it cannot run: "" when it can
}

// decode reads a delivered job's spec and prepares its run. A kind, or a
// field of its arguments, that its submitter had and this worker lacks (a
// deploy that reached the submitters first) is run as a failed attempt,
// retried with backoff, until a worker that has them takes it or the
// attempts are spent.
func (r *Runner) decode(id string, data []byte) decoded {
	var spec jobs.Spec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return decoded{id: id, bad: "undecodable job: " + err.Error()}
	}
	// Delivered, a job due later is due: however late it comes (a fault, a
	// retry's backoff), its time is no reason to refuse it.
	spec.RunAt = time.Time{}
	job, err := r.kinds.Prepare(spec, r.defaultTimeout, r.maxTimeout)
	switch {
	case errors.Is(err, jobs.ErrUnknownKind) || errors.Is(err, jobs.ErrUnknownField):
		lacked := fmt.Errorf("this worker lacks it: %w", err)
		job = jobs.Prepared{Timeout: r.defaultTimeout, MaxAttempts: spec.MaxAttempts, Run: func(context.Context) (json.RawMessage, error) {
			return nil, lacked
		}}
	case err != nil:
		return decoded{id: id, kind: spec.Kind, bad: err.Error()}
	}
	return decoded{id: id, kind: spec.Kind, spec: &spec, job: job}
}
