package jsjobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
)

// TestCancelOfAJobPulledNotStarted: a job that waits, not started, in a
// Source's window (pulled ahead while the pool's workers are busy) has not
// run: canceled, it must never run, and once the workers are free it is
// settled and the next job runs (jobs.Canceler: "a scheduled or queued
// one never runs"). Its cancel may say it was running (jsjobs counts a
// delivered job running: the Runner's doc). Here two workers are busy
// with long jobs, two more jobs are pulled behind them, and are canceled
// once delivered; before the runner kept
// the cancels it heard, each ran once, its context cancelled as it began.
func TestCancelOfAJobPulledNotStarted(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	closeRunner(t, r)
	ctx := context.Background()
	consume(t, r) // two workers
	var busy []jobs.Record
	for range 2 {
		busy = append(busy, submit(t, r, jobstest.Timed(jobstest.Sleep(time.Minute), time.Minute)))
	}
	for _, b := range busy {
		eventually(t, r, b.ID, jobs.Running)
	}
	var waiting []jobs.Record
	for range 2 {
		waiting = append(waiting, submit(t, r, jobstest.Flaky(jobstest.FlakyArgs{})))
	}
	for _, w := range waiting {
		eventually(t, r, w.ID, jobs.Running) // delivered: pulled into the window
	}
	for _, w := range waiting {
		if n := jobstest.Runs(w.ID); n != 0 {
			t.Fatalf("job %s ran with both workers busy", w.ID)
		}
		rec, was, err := r.Cancel(ctx, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if (was != jobs.Queued && was != jobs.Running) || rec.CanceledWhile != was {
			t.Errorf("cancel of job %s, which no run had started: was %s, record says %s", w.ID, was, rec.CanceledWhile)
		}
	}
	for _, b := range busy { // frees the workers
		if _, _, err := r.Cancel(ctx, b.ID); err != nil {
			t.Fatal(err)
		}
	}
	// Liveness: the freed workers settle the held jobs and run the next.
	next := submit(t, r, jobstest.Factorial(5))
	eventually(t, r, next.ID, jobs.Succeeded)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		info, err := r.Consumer().Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumAckPending == 0 && info.NumPending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("messages left unsettled: %d held, %d waiting", info.NumAckPending, info.NumPending)
		}
	}
	for _, w := range waiting {
		if n := jobstest.Runs(w.ID); n != 0 {
			t.Errorf("job %s, canceled before any run of it started, ran %d times after its cancel", w.ID, n)
		}
	}
}
