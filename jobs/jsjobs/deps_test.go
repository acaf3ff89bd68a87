package jsjobs_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/natsjs"
)

// TestDependencies: the rules of jobs.Spec.After (jobstest), on one
// runner.
func TestDependencies(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	t.Cleanup(func() { closeRunner(t, r) })
	consume(t, r)
	jobstest.CheckDependencies(t, r)
	jobstest.CheckWorkflow(t, r)
}

// TestDependenciesAcrossPartitions: the same rules on a store of three
// partitions run by two processes, so that a job's parents are in other
// partitions than its own and both processes race to release it (each job
// still runs once); then a join of MaxAfter (10,000) parents spread over
// the partitions is released within a second of its last parent's end,
// and runs once.
func TestDependenciesAcrossPartitions(t *testing.T) {
	c := newCluster(t)
	var procs []*jsjobs.Partitioned
	for i := range 2 {
		cfg := jsConfig()
		cfg.Replica = fmt.Sprintf("process-%d", i)
		p := c.partitioned(t, cfg, 3)
		serveOn(t, 4, func(pool *crew.Pool) (*natsjs.Source, error) { return p.Source(pool) })
		procs = append(procs, p)
	}
	jobstest.CheckDependencies(t, procs[0])
	jobstest.CheckWorkflow(t, procs[1])

	ctx := context.Background()
	// The parents submitted 16 at once, from both processes; the join
	// after the first has already ended, while the others run.
	parents := make([]string, jobs.MaxAfter)
	var submitted sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		submitted.Go(func() {
			for i := w; i < len(parents); i += 16 {
				rec, err := procs[i%2].Submit(ctx, jobstest.Factorial(1))
				for try := 0; errors.Is(err, jobs.ErrUnavailable) && try < 5; try++ {
					rec, err = procs[i%2].Submit(ctx, jobstest.Factorial(1)) // a loaded machine: again
				}
				if err != nil {
					errs <- err
					return
				}
				parents[i] = rec.ID
			}
		})
	}
	submitted.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	start := time.Now()
	join, err := procs[1].Submit(ctx, jobstest.After(jobstest.Factorial(3), parents...))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the join of %d parents submitted in %v", len(parents), time.Since(start).Round(time.Millisecond))
	// When the join is first read released (queued, or further), read
	// every 5 ms.
	deadline := time.Now().Add(time.Minute)
	var rec jobs.Record
	var released time.Time
	for rec, err = procs[0].Get(ctx, join.ID); err == nil && !rec.State.Terminal() && time.Now().Before(deadline); rec, err = procs[0].Get(ctx, join.ID) {
		if rec.State != jobs.Waiting && released.IsZero() {
			released = time.Now()
		}
		time.Sleep(5 * time.Millisecond)
	}
	if released.IsZero() {
		released = rec.Finished
	}
	if err != nil || rec.State != jobs.Succeeded || string(rec.Result) != "6" || rec.Attempts != 1 {
		t.Fatalf("the join of %d parents: %v, %v, want succeeded at its first attempt", jobs.MaxAfter, rec.State, err)
	}
	var last time.Time
	recs, errsGot := jobs.GetAll(ctx, procs[0].Get, parents)
	for i, p := range recs {
		if errsGot[i] != nil {
			t.Fatal(errsGot[i])
		}
		if p.Finished.After(last) {
			last = p.Finished
		}
	}
	took := released.Sub(last)
	t.Logf("the join of %d parents was read released %v after its last parent's end, and ended %v after it", jobs.MaxAfter, took.Round(time.Millisecond), rec.Finished.Sub(last).Round(time.Millisecond))
	// A second, as the dependencies promise; twice that under the race
	// detector (raceSlowdown).
	if took > raceSlowdown*time.Second {
		t.Errorf("the join was released %v after its last parent's end, want within %v", took, raceSlowdown*time.Second)
	}
}
