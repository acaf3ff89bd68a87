package jsjobs_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
)

// A first delivery starts the run while the record is read and marked
// running: these hold what the sequential path keeps.

// TestFirstDeliveryRecordsItsStartBeforeItsEnd: runs shorter than the
// marking end succeeded at attempt 1, never with the running write last.
func TestFirstDeliveryRecordsItsStartBeforeItsEnd(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	ctx := context.Background()
	var ids []string
	for i := range 20 {
		spec := jobstest.Factorial(i + 1) // returns at once
		rec := submit(t, r, spec)
		body, _ := json.Marshal(spec)
		if err := r.HandleFirstDelivery(ctx, "jobs."+rec.ID, body); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	// Read again once every handling has returned: a start written late
	// would show as running now.
	for i, id := range ids {
		got, err := r.Get(ctx, id)
		if err != nil || got.State != jobs.Succeeded || got.Attempts != 1 {
			t.Fatalf("job %d after its first delivery: %+v (%v), want succeeded at attempt 1", i, got, err)
		}
	}
}

// TestFirstDeliveryOfAnEndedJobIsCancelled: a first delivery of a job
// whose record has ended (a duplicate) cancels its run at once and is
// acked, counted skipped, the record untouched.
func TestFirstDeliveryOfAnEndedJobIsCancelled(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	ctx := context.Background()
	rec := submit(t, r, jobstest.Sleep(time.Millisecond))
	short, _ := json.Marshal(jobstest.Sleep(time.Millisecond))
	if err := r.HandleDelivery(ctx, "jobs."+rec.ID, short); err != nil {
		t.Fatal(err)
	}
	long, _ := json.Marshal(jobstest.Timed(jobstest.Sleep(time.Minute), time.Minute))
	done := make(chan error, 1)
	go func() { done <- r.HandleFirstDelivery(ctx, "jobs."+rec.ID, long) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a duplicate of an ended job: %v, want it acked", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the duplicate's run was not cancelled: it ran on after its record said succeeded")
	}
	if o := r.Outcomes(); o.Skipped != 1 || o.Succeeded != 1 {
		t.Fatalf("outcomes %+v, want one succeeded and one skipped", o)
	}
	if got := eventually(t, r, rec.ID, jobs.Succeeded); got.Attempts != 1 {
		t.Fatalf("record %+v, want attempt 1 untouched", got)
	}
}
