package jsjobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/natsjs"
)

// TestRunningMeansStartedWithoutAWindow: a job delivered to a runner
// reads running (the Runner's doc), so with a Source that pulls only for
// free slots (natsjs.WithWindow(0)) running means started: two workers
// busy, the four jobs behind them stay queued in Get and Counts.
// With the default window, the jobs held for a free slot read running
// (before, the test asserted this of the default and failed: 4 running).
func TestRunningMeansStartedWithoutAWindow(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	closeRunner(t, r)
	ctx := context.Background()
	consume(t, r, natsjs.WithWindow(0)) // two workers
	var all []jobs.Record
	for range 6 {
		all = append(all, submit(t, r, jobstest.Timed(jobstest.Sleep(3*time.Second), time.Minute)))
	}
	time.Sleep(time.Second)
	counts, err := r.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, j := range all {
		rec, err := r.Get(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.State == jobs.Running {
			running++
		}
	}
	if counts[jobs.Running] != 2 || running != 2 {
		t.Fatalf("two workers busy, yet Counts says %d running and Get %d: %v", counts[jobs.Running], running, counts)
	}
}

// TestHeldJobClaimsNoAttempt: with the default window, jobs held for a
// free worker read running, as the store cannot tell them from first runs
// (neither has a record yet); neither claims an attempt it may not have
// started (they read 1 before), and each reads its one delivery.
func TestHeldJobClaimsNoAttempt(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	closeRunner(t, r)
	ctx := context.Background()
	consume(t, r) // two workers, a window beyond them
	var all []jobs.Record
	for range 6 {
		all = append(all, submit(t, r, jobstest.Timed(jobstest.Sleep(3*time.Second), time.Minute)))
	}
	time.Sleep(time.Second)
	for _, j := range all {
		rec, err := r.Get(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.State == jobs.Running && (rec.Attempts != 0 || rec.Deliveries != 1) {
			t.Errorf("job %s, delivered and without a record, reads %d attempts and %d deliveries: want 0 and 1", rec.ID, rec.Attempts, rec.Deliveries)
		}
	}
}
