package jsjobs_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/jsjobs"
)

// TestJetStreamRetriesWithBackoff: a run that fails is retried after the
// backoff of its attempt, the record retrying with its next run's time and
// every attempt's error; a job that keeps failing ends failed once its
// attempts (the spec's, here 3) are spent; a permanent error ends it at
// once; a snooze runs it again after its wait with no attempt counted.
func TestJetStreamRetriesWithBackoff(t *testing.T) {
	c := newCluster(t)
	cfg := jsConfig()
	var mu sync.Mutex
	var asked []int
	cfg.Backoff = func(attempt int) time.Duration {
		mu.Lock()
		asked = append(asked, attempt)
		mu.Unlock()
		return 300 * time.Millisecond
	}
	r := c.runner(t, cfg)
	twice := submit(t, r, jobstest.Flaky(jobstest.FlakyArgs{Fails: 2}))
	always := submit(t, r, jobstest.Attempts(jobstest.Flaky(jobstest.FlakyArgs{Fails: 100}), 3))
	permanent := submit(t, r, jobstest.Flaky(jobstest.FlakyArgs{Fails: 100, Permanent: true}))
	snooze := submit(t, r, jobstest.Flaky(jobstest.FlakyArgs{Snooze: jobs.Duration(400 * time.Millisecond)}))
	consume(t, r)

	// Between its runs the job is retrying, due at its next run.
	rec := eventually(t, r, twice.ID, jobs.Retrying)
	if rec.NextRun.IsZero() || rec.NextRun.Before(rec.Errors[len(rec.Errors)-1].At) || len(rec.Errors) == 0 {
		t.Fatalf("a retrying record: %+v", rec)
	}
	rec = eventually(t, r, twice.ID, jobs.Succeeded)
	if rec.Attempts != 3 || len(rec.Errors) != 2 || rec.Errors[0].Attempt != 1 || rec.Errors[1].Attempt != 2 ||
		!strings.Contains(rec.Errors[1].Error, "attempt 2 fails") || string(rec.Result) != "3" || !rec.NextRun.IsZero() {
		t.Fatalf("a job that failed twice: %+v", rec)
	}
	if gap := rec.Errors[1].At.Sub(rec.Errors[0].At); gap < 300*time.Millisecond {
		t.Fatalf("the second run came %v after the first failed, before the backoff of 300 ms", gap)
	}
	rec = eventually(t, r, always.ID, jobs.Failed)
	if rec.Attempts != 3 || len(rec.Errors) != 3 || rec.Error != rec.Errors[2].Error {
		t.Fatalf("a job failing every run, 3 attempts: %+v", rec)
	}
	rec = eventually(t, r, permanent.ID, jobs.Failed)
	if rec.Attempts != 1 || len(rec.Errors) != 1 {
		t.Fatalf("a permanent failure: %+v", rec)
	}
	rec = eventually(t, r, snooze.ID, jobs.Succeeded)
	if rec.Attempts != 1 || len(rec.Errors) != 0 || rec.Finished.Sub(rec.Created) < 400*time.Millisecond {
		t.Fatalf("a snoozed job: %+v", rec)
	}
	mu.Lock()
	defer mu.Unlock()
	// Backoffs asked for: twice's attempts 1 and 2, always's 1 and 2 (its
	// third failure ends it), none for the permanent or the snooze.
	if len(asked) != 4 {
		t.Fatalf("backoffs asked for attempts %v, want four (1, 2 of two jobs)", asked)
	}
	outcomesReach(t, r, func(o jsjobs.Outcomes) bool {
		return o.Retried == 4 && o.Snoozed == 1 && o.Failed == 2 && o.Succeeded == 2
	})
}
