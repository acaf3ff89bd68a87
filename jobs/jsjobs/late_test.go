package jsjobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/natsjs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// cutOff is a JetStream whose writes of records fail while cut: a runner
// cut off from the store while the other runners reach it.
type cutOff struct {
	jetstream.JetStream
	cut atomic.Bool
}

func (c *cutOff) Publish(ctx context.Context, subj string, data []byte, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if c.cut.Load() && strings.HasPrefix(subj, "$KV.") {
		return nil, nats.ErrNoResponders
	}
	return c.JetStream.Publish(ctx, subj, data, opts...)
}

// cutOffRunner is a runner of c's that a test can cut off from the
// store (its writes of records fail), and another, always connected.
func cutOffRunner(t *testing.T, c *cluster) (*cutOff, *jsjobs.Runner, *jsjobs.Runner) {
	t.Helper()
	cut := &cutOff{JetStream: c.js}
	a, err := jsjobs.New(context.Background(), cut, jsConfig())
	if err != nil {
		t.Fatal(err)
	}
	closeRunner(t, a)
	b := c.runner(t, jsConfig())
	closeRunner(t, b)
	return cut, a, b
}

// lateEndCutOff runs a job on a through a delivery whose run ends while a
// is cut off from the store, then loses the delivery's lease: a keeps the
// run's end to write later. It returns the job's record as b reads it.
func lateEndCutOff(t *testing.T, cut *cutOff, a, b *jsjobs.Runner) jobs.Record {
	t.Helper()
	job := jobstest.Timed(jobstest.Sleep(300*time.Millisecond), 10*time.Second)
	rec := submit(t, b, job)
	body, _ := json.Marshal(job)
	ctx, loseLease := context.WithCancel(context.Background())
	defer loseLease()
	done := make(chan error, 1)
	go func() { done <- a.HandleDelivery(ctx, "jobs."+rec.ID, body) }()
	eventually(t, b, rec.ID, jobs.Running)
	cut.cut.Store(true)
	deadline := time.Now().Add(10 * time.Second)
	for _, err := a.StoreDown(); err == nil; _, err = a.StoreDown() {
		if time.Now().After(deadline) {
			t.Fatal("the end of the run never met the cut")
		}
		time.Sleep(20 * time.Millisecond)
	}
	loseLease()
	select {
	case err := <-done:
		if !errors.Is(err, natsjs.ErrUnavailable) {
			t.Fatalf("a delivery whose lease was lost with its end unwritten: %v, want unavailable", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Handle did not return once its lease was lost")
	}
	return eventually(t, b, rec.ID, jobs.Running)
}

// cancelAndRetry cancels job id through r, then retries it: it returns
// the canceled record's revision, which the Retry's message names.
func cancelAndRetry(t *testing.T, r *jsjobs.Runner, id string) uint64 {
	t.Helper()
	ctx := context.Background()
	if _, _, err := r.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	rev, err := r.Revision(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.Retry(ctx, id)
	if err != nil || again.State != jobs.Queued || again.Retries != 1 {
		t.Fatalf("Retry: %+v, %v", again, err)
	}
	return rev
}

// TestLateEndGivesWayToARetry: a run's end kept after its lease was lost
// belongs to the job's run before the job was canceled and retried by
// hand. Written once the store answers, it would say the job succeeded
// with the record of that run (no retry counted) over the Retry's queued
// record, and the Retry's message would then find the job ended and not
// run it. The end gives way: the Retry stands and its message runs the
// job.
func TestLateEndGivesWayToARetry(t *testing.T) {
	c := newCluster(t)
	cut, a, b := cutOffRunner(t, c)
	rec := lateEndCutOff(t, cut, a, b)
	retryOf := cancelAndRetry(t, b, rec.ID)

	cut.cut.Store(false)
	// The keeper tries every two seconds at most: it has tried once the
	// end is written or has given way.
	deadline := time.Now().Add(20 * time.Second)
	for o := a.Outcomes(); o.LateEnds == 0 && o.Skipped == 0; o = a.Outcomes() {
		if time.Now().After(deadline) {
			t.Fatalf("the kept end was never tried: %+v", o)
		}
		time.Sleep(20 * time.Millisecond)
	}
	got, err := b.Get(context.Background(), rec.ID)
	if err != nil || got.State != jobs.Queued || got.Retries != 1 {
		t.Fatalf("record %+v (%v), outcomes %+v: want the Retry's queued record, not the end of the run before it", got, err, a.Outcomes())
	}
	if err := b.HandleRetryDelivery(context.Background(), rec.ID, retryOf, rec.Spec, false); err != nil {
		t.Fatal(err)
	}
	if got := eventually(t, b, rec.ID, jobs.Succeeded); got.Retries != 1 || got.Attempts != 1 {
		t.Fatalf("record %+v: want the Retry's run recorded", got)
	}
}

// TestRetrysMessageRunsTheJobDespiteALateEnd: as above, but the Retry's
// message comes to the runner that keeps the end of the run before the
// cancel (no keeper writes it first). The delivery must not settle on
// that end (written over the Retry's record, or giving way to it): it
// runs the job, as the Retry asked.
func TestRetrysMessageRunsTheJobDespiteALateEnd(t *testing.T) {
	c := newCluster(t)
	cut, a, b := cutOffRunner(t, c)
	a.NoLateKeeper()
	rec := lateEndCutOff(t, cut, a, b)
	retryOf := cancelAndRetry(t, b, rec.ID)

	cut.cut.Store(false)
	if err := a.HandleRetryDelivery(context.Background(), rec.ID, retryOf, rec.Spec, false); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(context.Background(), rec.ID)
	if err != nil || got.State != jobs.Succeeded || got.Retries != 1 || got.Attempts != 1 {
		t.Fatalf("record %+v (%v), outcomes %+v: want the Retry's run recorded", got, err, a.Outcomes())
	}
}
