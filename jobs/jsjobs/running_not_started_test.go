package jsjobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/internal/jobstest"
)

// TestRunningMeansStarted: a job reads running while a run of it goes on
// (jobs.State: "queued until a run starts, running while one does"). With
// two workers busy, the jobs behind them, pulled into the Source's window
// but not started, are queued: Get, List and Counts must not count them
// running.
func TestRunningMeansStarted(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	closeRunner(t, r)
	ctx := context.Background()
	consume(t, r) // two workers
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
	if counts[jobs.Running] > 2 || running > 2 {
		t.Fatalf("two workers, yet Counts says %d running and Get %d: %v", counts[jobs.Running], running, counts)
	}
}
