package memjobs_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
)

// failing is the spec of a sleep job that fails.
func failing() jobs.Spec {
	spec, err := jobs.NewSpec(jobstest.SleepArgs{Duration: jobs.Duration(time.Millisecond), Fail: "no luck"})
	if err != nil {
		panic(err)
	}
	return spec
}

// all pages through q's jobs, pageSize at a time, and returns their ids
// in the order the pages gave them.
func all(t *testing.T, l jobs.Lister, q jobs.Query) []string {
	t.Helper()
	var ids []string
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatalf("more than 100 pages: %v", ids)
		}
		page, err := l.List(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if page.Jobs == nil {
			t.Fatal("a page without jobs has nil Jobs: want an empty list ([] in JSON)")
		}
		for _, rec := range page.Jobs {
			ids = append(ids, rec.ID)
			if q.State != "" && rec.State != q.State || q.Kind != "" && rec.Kind != q.Kind {
				t.Fatalf("query %+v answered %+v", q, rec)
			}
		}
		if page.Next == "" {
			return ids
		}
		if len(page.Jobs) != q.Limit {
			t.Fatalf("a page of %d before the last, want %d", len(page.Jobs), q.Limit)
		}
		q.After = page.Next
	}
}

// TestListPagesNewestFirst: paging through every job with the cursors
// sees each once, newest first; the state and kind filters keep only
// theirs; the counts match.
func TestListPagesNewestFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRunner(t, 100, time.Hour, map[string]int{})
		var submitted, failed, factorials []string
		for i := range 25 {
			spec := factorial(i % 10)
			if i%3 == 0 {
				spec = failing()
			}
			rec, err := r.Submit(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			submitted = append(submitted, rec.ID)
			if i%3 == 0 {
				failed = append(failed, rec.ID)
			} else {
				factorials = append(factorials, rec.ID)
			}
			time.Sleep(time.Second) // a queue of 4: each job ends before the next
			synctest.Wait()
		}
		slices.Reverse(submitted)
		slices.Reverse(failed)
		slices.Reverse(factorials)
		for _, tc := range []struct {
			name string
			q    jobs.Query
			want []string
		}{
			{"every job, 7 a page", jobs.Query{Limit: 7}, submitted},
			{"every job, one page", jobs.Query{Limit: 25}, submitted},
			{"every job, 1 a page", jobs.Query{Limit: 1}, submitted},
			{"failed", jobs.Query{State: jobs.Failed, Limit: 2}, failed},
			{"factorial", jobs.Query{Kind: "factorial", Limit: 5}, factorials},
			{"succeeded sleeps", jobs.Query{Kind: "sleep", State: jobs.Succeeded, Limit: 5}, nil},
			{"a kind that is a wildcard", jobs.Query{Kind: "*", Limit: 5}, nil},
			{"queued", jobs.Query{State: jobs.Queued, Limit: 5}, nil},
		} {
			if got := all(t, r, tc.q); !slices.Equal(got, tc.want) {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
		}
		page, err := r.List(context.Background(), jobs.Query{})
		if err != nil || len(page.Jobs) != 25 || page.Next != "" {
			t.Fatalf("the default limit: %d jobs, next %q, %v", len(page.Jobs), page.Next, err)
		}
		counts, err := r.Counts(context.Background())
		if err != nil || len(counts) != 2 || counts[jobs.Failed] != len(failed) || counts[jobs.Succeeded] != len(factorials) {
			t.Fatalf("counts %v (%v), want %d failed and %d succeeded", counts, err, len(failed), len(factorials))
		}
	})
}

// TestListRefusesABadQuery: a cursor this store did not make, an unknown
// state or a limit out of bounds is an *InvalidError naming its field.
func TestListRefusesABadQuery(t *testing.T) {
	r, _ := newRunner(t, 100, time.Hour, map[string]int{})
	for _, tc := range []struct {
		q     jobs.Query
		field string
	}{
		{jobs.Query{After: "x"}, `"after"`},
		{jobs.Query{After: "0"}, `"after"`},
		{jobs.Query{After: "-1"}, `"after"`},
		{jobs.Query{After: "007"}, `"after"`},
		{jobs.Query{After: "18446744073709551616"}, `"after"`},
		{jobs.Query{After: strings.Repeat("9", 5000)}, `"after"`},
		{jobs.Query{State: "lost"}, `"state"`},
		{jobs.Query{Limit: -1}, `"limit"`},
		{jobs.Query{Limit: jobs.MaxLimit + 1}, `"limit"`},
	} {
		var invalid *jobs.InvalidError
		if _, err := r.List(context.Background(), tc.q); !errors.As(err, &invalid) || !strings.Contains(err.Error(), tc.field) || len(err.Error()) > 300 {
			t.Errorf("%+.60v: %v, want an *InvalidError naming %s", tc.q, err, tc.field)
		}
	}
}

// TestCountsAndListSeeLiveJobs: jobs queued and running are counted and
// listed in their states.
func TestCountsAndListSeeLiveJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, pool := newRunner(t, 100, time.Hour, map[string]int{})
		running, err := r.Submit(context.Background(), jobstest.Timed(sleep(50*time.Second), time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, r, running.ID, jobs.Running)
		_ = pool.Pause()
		for range 3 {
			if _, err := r.Submit(context.Background(), factorial(3)); err != nil {
				t.Fatal(err)
			}
		}
		counts, _ := r.Counts(context.Background())
		if counts[jobs.Running] != 1 || counts[jobs.Queued] != 3 || len(counts) != 2 {
			t.Fatalf("counts %v, want 1 running and 3 queued", counts)
		}
		if ids := all(t, r, jobs.Query{State: jobs.Running, Limit: 10}); !slices.Equal(ids, []string{running.ID}) {
			t.Fatalf("running: %v, want %s", ids, running.ID)
		}
		_ = pool.Resume()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if counts, _ := r.Counts(context.Background()); counts[jobs.Succeeded] != 4 || len(counts) != 1 {
			t.Fatalf("counts %v, want 4 succeeded", counts)
		}
	})
}
