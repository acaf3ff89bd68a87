package jsjobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
)

// TestSubmitterIsRecorded: who submitted a job is read in every state it
// passes through: accepted, scheduled, succeeded, failed (a dead letter)
// and retried by another hand; a periodic job's ticks are its setter's.
func TestSubmitterIsRecorded(t *testing.T) {
	c := newCluster(t)
	cfg := jsConfig()
	cfg.MaxDelay = time.Hour
	r := c.runner(t, cfg)
	t.Cleanup(func() { _ = r.Close() }) // List follows the stream
	ctx := context.Background()
	by := func(spec jobs.Spec, who string) jobs.Spec { spec.Submitter = who; return spec }

	later := by(jobstest.Factorial(5), "alice")
	later.RunAt = time.Now().Add(1500 * time.Millisecond)
	scheduled := submit2(t, r, later)
	now := submit2(t, r, by(jobstest.Factorial(4), "alice"))
	dead := submit2(t, r, by(jobstest.Attempts(jobstest.Flaky(jobstest.FlakyArgs{Fails: 100, Permanent: true}), 1), "carol"))
	anonymous := submit2(t, r, jobstest.Factorial(3))
	for _, rec := range []jobs.Record{scheduled, now, dead} {
		if rec.Submitter == "" {
			t.Fatalf("accepted as %+v: no submitter", rec)
		}
	}
	for _, id := range []string{scheduled.ID, now.ID} {
		if got, err := r.Get(ctx, id); err != nil || got.Submitter != "alice" {
			t.Fatalf("before it ran, job %s reads submitter %q (%v), want alice", id, got.Submitter, err)
		}
	}
	if _, err := r.SetPeriodic(ctx, jobs.Periodic{Name: "by-bob", Every: "@every 1s", Spec: by(jobstest.Factorial(2), "bob")}); err != nil {
		t.Fatal(err)
	}
	consume(t, r)
	for id, who := range map[string]string{scheduled.ID: "alice", now.ID: "alice", anonymous.ID: ""} {
		if got := eventually(t, r, id, jobs.Succeeded); got.Submitter != who {
			t.Errorf("job %s succeeded, submitter %q, want %q", id, got.Submitter, who)
		}
	}
	if got := eventually(t, r, dead.ID, jobs.Failed); got.Submitter != "carol" {
		t.Errorf("a dead letter reads submitter %q, want carol", got.Submitter)
	}
	if _, err := r.Retry(ctx, dead.ID); err != nil {
		t.Fatal(err)
	}
	if got := eventually(t, r, dead.ID, jobs.Failed); got.Submitter != "carol" || got.Retries != 1 {
		t.Errorf("retried, the dead letter reads submitter %q after %d retries, want carol after 1", got.Submitter, got.Retries)
	}
	ps, err := r.Periodics(ctx)
	if err != nil || len(ps) != 1 || ps[0].Spec.Submitter != "bob" {
		t.Fatalf("periodics %+v (%v), want by-bob set by bob", ps, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := r.List(ctx, jobs.Query{Kind: "factorial", State: jobs.Succeeded})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range list.Jobs {
			if rec.ID != scheduled.ID && rec.ID != now.ID && rec.ID != anonymous.ID {
				if rec.Submitter != "bob" {
					t.Fatalf("a tick's job %+v: want submitter bob", rec)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no tick's job succeeded in 10 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
