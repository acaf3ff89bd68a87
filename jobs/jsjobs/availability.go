package jsjobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/natsjs"
)

// ProbeTimeout bounds one probe of the store; WatchStore probes every
// ProbeInterval.
const (
	ProbeTimeout  = time.Second
	ProbeInterval = time.Second
)

// Probe asks the servers that lead the jobs' stream and the records'
// bucket for their state: both answer only while the store can take and
// keep a job.
func (r *Runner) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	if nc := r.js.Conn(); !nc.IsConnected() {
		return fmt.Errorf("%w: NATS connection %v", jobs.ErrUnavailable, nc.Status())
	}
	if _, err := r.js.Stream(ctx, r.layout.stream); err != nil {
		return fmt.Errorf("%w: stream %s: %v", jobs.ErrUnavailable, r.layout.stream, err)
	}
	if _, err := r.store.kv.Status(ctx); err != nil {
		return fmt.Errorf("%w: records: %v", jobs.ErrUnavailable, err)
	}
	return nil
}

// WatchStore probes the store every ProbeInterval until ctx ends, so that
// StoreDown follows the store's availability even when no job comes.
func (r *Runner) WatchStore(ctx context.Context) {
	t := time.NewTicker(ProbeInterval)
	defer t.Stop()
	for {
		err := r.Probe(ctx)
		if ctx.Err() != nil {
			return
		}
		r.health.probed(err)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// StoreDown says since when the store has been out, and why; the zero
// time and nil while it is available.
func (r *Runner) StoreDown() (time.Time, error) {
	if !r.health.down.Load() {
		return time.Time{}, nil
	}
	r.health.mu.Lock()
	defer r.health.mu.Unlock()
	return r.health.since, r.health.err
}

// StoreHandBacks counts the runs of jobs put off, without costing an attempt,
// because the store could not be reached.
func (r *Runner) StoreHandBacks() uint64 { return r.health.handbacks.Load() }

// unavailable classifies an error of the store met while running a job:
// an outage (ErrUnavailable) marks the store down and makes the Source run
// the job again a moment later, on the same delivery, without counting an
// attempt; anything else is returned as it is.
func (r *Runner) unavailable(err error) error {
	if !errors.Is(err, jobs.ErrUnavailable) {
		return err
	}
	r.health.outage(err)
	r.health.handbacks.Add(1)
	return natsjs.Unavailable(err)
}

// streamReachable refuses a write at once while the connection is down,
// whatever the store's health: a Partitioned's submit bounds its own wait.
func (r *Runner) streamReachable() error {
	if nc := r.js.Conn(); !nc.IsConnected() {
		return fmt.Errorf("%w: NATS connection %v", jobs.ErrUnavailable, nc.Status())
	}
	return nil
}

// connected refuses a write at once, rather than after the store's
// timeout, while the connection is down or the store is known to be out
// (storeHealth).
func (r *Runner) connected() error {
	if nc := r.js.Conn(); !nc.IsConnected() {
		return fmt.Errorf("%w: NATS connection %v", jobs.ErrUnavailable, nc.Status())
	}
	return r.health.Err()
}
