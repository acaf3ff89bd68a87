package memjobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
)

// TestCancelInMemory: a running job's context is cancelled and a queued
// one never runs (both read canceled, with the state they were in); a
// second cancel answers the same; an ended job is an *EndedError.
func TestCancelInMemory(t *testing.T) {
	r, pool := newRunner(t, 10, time.Hour, map[string]int{})
	ctx := context.Background()
	running, err := r.Submit(ctx, jobstest.Timed(jobstest.Sleep(time.Minute), time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if rec, _ := r.Get(ctx, running.ID); rec.State == jobs.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first job did not start")
		}
	}
	queued, err := r.Submit(ctx, jobstest.Factorial(3))
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []struct {
		id  string
		was jobs.State
	}{{queued.ID, jobs.Queued}, {running.ID, jobs.Running}} {
		rec, was, err := r.Cancel(ctx, j.id)
		if err != nil || was != j.was || rec.State != jobs.Canceled {
			t.Fatalf("cancel of a %s job: %+v was %s, %v", j.was, rec, was, err)
		}
		if again, was, err := r.Cancel(ctx, j.id); err != nil || again.State != jobs.Canceled || was != jobs.Canceled {
			t.Fatalf("a second cancel: %+v was %s, %v", again, was, err)
		}
	}
	// The sleep ends with its context, and the queued job's task returns
	// at once: the pool is idle in moments, not a minute.
	for deadline := time.Now().Add(10 * time.Second); pool.Stats().InFlight() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still in flight 10 s after the cancels: %v", pool.Stats())
		}
	}
	done, err := r.Submit(ctx, jobstest.Factorial(4))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if rec, _ := r.Get(ctx, done.ID); rec.State == jobs.Succeeded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the job after the cancels did not run")
		}
	}
	var ended *jobs.EndedError
	if _, _, err := r.Cancel(ctx, done.ID); !errors.As(err, &ended) || ended.State != jobs.Succeeded {
		t.Fatalf("cancel of an ended job: %v", err)
	}
}
