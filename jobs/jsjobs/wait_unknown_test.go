package jsjobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

// TestWaitUnknownJob: Wait for a well-formed id that no job has (a typo,
// a job of another store, one whose record expired) answers ErrNotFound,
// as Get does, rather than block until its context ends: a caller that
// waits with context.Background() would hang for ever.
func TestWaitUnknownJob(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	closeRunner(t, r)
	const id = "0123456789abcdef"
	if _, err := r.Get(context.Background(), id); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("Get: %v, want ErrNotFound", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	rec, err := r.Wait(ctx, id)
	if !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("Wait for an unknown job: %+v, %v after %v; want ErrNotFound at once", rec, err, time.Since(start).Round(time.Millisecond))
	}
}
