package jsjobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go/jetstream"
)

// Get implements Runner, from the bucket: any crewd answers for any job.
func (r *Runner) Get(ctx context.Context, id string) (jobs.Record, error) {
	if !jobs.ValidID(id) {
		// Never a key: not one crewd made.
		return jobs.Record{}, jobs.ErrNotFound
	}
	// Not refused while the store is known to be out: the records'
	// bucket answers reads from any of its replicas (direct get), so a read
	// goes on while its stream elects a leader, as writes cannot.
	if nc := r.js.Conn(); !nc.IsConnected() {
		return jobs.Record{}, fmt.Errorf("%w: NATS connection %v", jobs.ErrUnavailable, nc.Status())
	}
	rec, _, _, err := r.store.find(ctx, id)
	if err == nil && rec.State == jobs.Running {
		r.store.progress(ctx, &rec) // its run's latest progress (progress.go)
	}
	return rec, err
}

// Wait waits until the job has ended and returns its record: at once if
// it has, else when the record changes to a terminal state, or when ctx
// ends (with ctx's error). A job found nowhere (an unknown id, a record
// expired) is ErrNotFound at once. It watches the job's key, so it costs
// no polling.
func (r *Runner) Wait(ctx context.Context, id string) (jobs.Record, error) {
	if !jobs.ValidID(id) {
		return jobs.Record{}, jobs.ErrNotFound
	}
	w, err := r.store.kv.Watch(ctx, id)
	if err != nil {
		return jobs.Record{}, storeError(err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return jobs.Record{}, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return jobs.Record{}, fmt.Errorf("%w: the watch of job %s ended", jobs.ErrUnavailable, id)
			}
			if e == nil {
				// The initial values' end, none terminal: a job found
				// nowhere (an unknown id, a record expired) never ends.
				// The watch is on, so a write after this read is seen.
				if _, err := r.Get(ctx, id); errors.Is(err, jobs.ErrNotFound) {
					return jobs.Record{}, err
				}
				continue
			}
			if e.Operation() != jetstream.KeyValuePut {
				continue // a deletion
			}
			var rec jobs.Record
			if err := json.Unmarshal(e.Value(), &rec); err != nil {
				return jobs.Record{}, fmt.Errorf("record of job %s: %w", id, err)
			}
			if rec.State.Terminal() {
				return rec, nil
			}
		}
	}
}
