package jsjobs_test

import (
	"context"
	"errors"
	"testing"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
)

// TestListAfterCloseNotStale: once the runner is closed its index no longer
// follows the store, so List must not answer as if it did: a job
// submitted after Close is missing from a List that reports no error. A
// runner closed before any List answers ErrUnavailable ("the runner is
// closed"); one that had listed must too, or list what the store holds.
func TestListAfterCloseNotStale(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	ctx := context.Background()
	if _, err := r.List(ctx, jobs.Query{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	rec := submit(t, r, jobstest.Factorial(3))
	page, err := r.List(ctx, jobs.Query{})
	if errors.Is(err, jobs.ErrUnavailable) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range page.Jobs {
		if j.ID == rec.ID {
			return
		}
	}
	t.Fatalf("List after Close: %d jobs, no error, without the job %s the store holds", len(page.Jobs), rec.ID)
}

// TestListCanceledContext: a List whose context is cancelled answers the
// context's error, not ErrUnavailable ("the jobs' index is still being
// read from the store"), which a server would answer 503 for.
func TestListCanceledContext(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	closeRunner(t, r)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.List(ctx, jobs.Query{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("List with a cancelled context: %v, want context.Canceled", err)
	}
}
