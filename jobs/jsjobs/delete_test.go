package jsjobs_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
)

// TestDelete: jsjobs keeps jobs.Deleter's contract, and a job deleted on
// one replica is gone from another's Get and from both indexes (List,
// Counts, the ends a minute).
func TestDelete(t *testing.T) {
	c := newCluster(t)
	front, back := c.runner(t, jsConfig()), c.runner(t, jsConfig())
	closeRunner(t, front)
	closeRunner(t, back)
	consumeAll(t, back)
	jobstest.CheckDelete(t, front)

	ctx := context.Background()
	rec := submit(t, front, jobstest.Factorial(6))
	eventually(t, back, rec.ID, jobs.Succeeded)
	listed := func(r interface {
		List(context.Context, jobs.Query) (jobs.Page, error)
	}) bool {
		p, err := r.List(ctx, jobs.Query{State: jobs.Succeeded})
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(p.Jobs, func(j jobs.Record) bool { return j.ID == rec.ID })
	}
	for deadline := time.Now().Add(10 * time.Second); !listed(back); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the job not listed")
		}
	}
	if _, err := front.Delete(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := back.Get(ctx, rec.ID); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("Get on another replica after a Delete: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); listed(back) || listed(front); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a deleted job still listed")
		}
	}
	if counts, err := back.Counts(ctx); err != nil || counts[jobs.Succeeded] != 0 {
		t.Fatalf("counts after the deletes: %v, %v", counts, err)
	}
	ends, err := back.EndsPerMinute(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ends {
		if m.Counts[jobs.Succeeded] != 0 {
			t.Fatalf("a deleted job still counted as ended: %v", ends)
		}
	}
}
