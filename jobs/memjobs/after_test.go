package memjobs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/memjobs"
)

// TestDependencies: the rules of jobs.Spec.After (jobstest), in memory.
func TestDependencies(t *testing.T) {
	pool, err := crew.New(crew.WithWorkers(4), crew.WithQueueSize(64))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pool.Close() })
	r := &memjobs.Runner{Pool: pool, Store: memjobs.NewStore(1000, time.Hour, nil, nil), Kinds: jobstest.Kinds(), DefaultTimeout: time.Second, MaxTimeout: time.Minute}
	jobstest.CheckDependencies(t, r)
	jobstest.CheckWorkflow(t, r)
}

// TestJoinOfMaxAfterParents: a job after jobs.MaxAfter (10,000) parents,
// most of them still queued when it is submitted, runs once, after every
// one has ended: its tally counts them all succeeded.
func TestJoinOfMaxAfterParents(t *testing.T) {
	pool, err := crew.New(crew.WithWorkers(4), crew.WithQueueSize(jobs.MaxAfter+16))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pool.Close() })
	r := &memjobs.Runner{Pool: pool, Store: memjobs.NewStore(jobs.MaxAfter+16, time.Hour, nil, nil), Kinds: jobstest.Kinds(), DefaultTimeout: 10 * time.Second, MaxTimeout: time.Minute}
	ctx := context.Background()
	parents := make([]string, jobs.MaxAfter)
	for i := range parents {
		rec, err := r.Submit(ctx, jobstest.Factorial(1))
		if err != nil {
			t.Fatal(err)
		}
		parents[i] = rec.ID
	}
	join, err := r.Submit(ctx, jobstest.Tally(parents...))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	rec, err := r.Get(ctx, join.ID)
	for ; err == nil && !rec.State.Terminal() && time.Now().Before(deadline); rec, err = r.Get(ctx, join.ID) {
		time.Sleep(10 * time.Millisecond)
	}
	want := fmt.Sprintf(`{"succeeded":%d}`, jobs.MaxAfter)
	if err != nil || rec.State != jobs.Succeeded || string(rec.Result) != want || jobstest.Runs("tally:"+join.ID) != 1 {
		t.Fatalf("the join of %d parents: %s %s, %v, %d runs; want succeeded once with %s", jobs.MaxAfter, rec.State, rec.Result, err, jobstest.Runs("tally:"+join.ID), want)
	}
	if _, err := r.Submit(ctx, jobstest.Tally(append(parents, join.ID)...)); err == nil {
		t.Fatalf("a job after %d parents: accepted, want refused", jobs.MaxAfter+1)
	}
}
