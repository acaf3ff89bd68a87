package jsjobs_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
)

// TestListByQueue: List's Queue selects the jobs of one queue, waiting
// (their messages) and ended (their records) alike, the default queue's
// by its name, in any state or one; a queue with no jobs lists none; a bad
// name is an *InvalidError naming "queue".
func TestListByQueue(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	closeRunner(t, r)
	ctx := context.Background()
	if err := r.SetQueue(ctx, jobs.Queue{Name: "reports"}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for i := range 6 {
		q := map[bool]string{true: "reports", false: jobs.DefaultQueue}[i%2 == 0]
		rec := submit(t, r, inQueue(jobstest.Factorial(3), q))
		want[q] = append(want[q], rec.ID)
	}
	// The default queue's jobs run and end (records); the reports queue's
	// wait, served by nobody (messages).
	consume(t, r)
	for _, id := range want[jobs.DefaultQueue] {
		eventually(t, r, id, jobs.Succeeded)
	}
	list := func(q jobs.Query) []string {
		t.Helper()
		page, err := r.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, rec := range page.Jobs {
			ids = append(ids, rec.ID)
		}
		slices.Sort(ids)
		return ids
	}
	for q, ids := range want {
		slices.Sort(ids)
		if got := list(jobs.Query{Queue: q}); !slices.Equal(got, ids) {
			t.Errorf("queue %s lists %v, want %v", q, got, ids)
		}
	}
	if got := list(jobs.Query{Queue: "reports", State: jobs.Queued}); len(got) != 3 {
		t.Errorf("queue reports, queued: %v, want its 3", got)
	}
	if got := list(jobs.Query{Queue: "reports", State: jobs.Succeeded}); len(got) != 0 {
		t.Errorf("queue reports, succeeded: %v, want none", got)
	}
	if got := list(jobs.Query{Queue: "nobody"}); len(got) != 0 {
		t.Errorf("a queue without jobs lists %v", got)
	}
	var invalid *jobs.InvalidError
	if _, err := r.List(ctx, jobs.Query{Queue: "a.b"}); !errors.As(err, &invalid) {
		t.Errorf("List of queue a.b: %v, want an *InvalidError", err)
	}
}
