package memjobs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/memjobs"
)

func newRunner(t *testing.T, records int, ttl time.Duration, evicted map[string]int) (*memjobs.Runner, *crew.Pool) {
	t.Helper()
	pool, err := crew.New(crew.WithWorkers(1), crew.WithQueueSize(4))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pool.Close() })
	store := memjobs.NewStore(records, ttl, nil, func(reason string, n int) { evicted[reason] += n })
	return &memjobs.Runner{Pool: pool, Store: store, Kinds: jobstest.Kinds(), DefaultTimeout: time.Second, MaxTimeout: time.Minute}, pool
}

var (
	factorial = jobstest.Factorial
	sleep     = jobstest.Sleep
)

func waitState(t *testing.T, r jobs.Runner, id string, want jobs.State) jobs.Record {
	t.Helper()
	synctest.Wait()
	rec, err := r.Get(context.Background(), id)
	if err != nil || rec.State != want {
		t.Fatalf("job %s: %+v (%v), want %s", id, rec, err, want)
	}
	return rec
}

// TestRecordsBoundedByCountAndAge: finished records are evicted, oldest
// first, past the count and past the TTL, and the evictions are counted by
// reason; a record of an unfinished job is never evicted, and when only
// such records are left a new job is refused rather than recorded nowhere.
func TestRecordsBoundedByCountAndAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		evicted := map[string]int{}
		r, pool := newRunner(t, 3, time.Minute, evicted)
		var ids []string
		for n := range 3 {
			rec, err := r.Submit(context.Background(), factorial(n))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, rec.ID)
		}
		synctest.Wait()
		rec, err := r.Submit(context.Background(), factorial(5))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Get(context.Background(), ids[0]); !errors.Is(err, jobs.ErrNotFound) || evicted["count"] != 1 {
			t.Fatalf("oldest finished record kept past the count (evicted %v)", evicted)
		}
		waitState(t, r, rec.ID, jobs.Succeeded)
		time.Sleep(2 * time.Minute)
		// Three unfinished jobs: the aged records go, these stay.
		_ = pool.Pause()
		for range 3 {
			if _, err := r.Submit(context.Background(), sleep(time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		if evicted["age"] != 3 {
			t.Fatalf("evicted %v, want 3 by age", evicted)
		}
		if _, err := r.Submit(context.Background(), factorial(1)); !errors.Is(err, jobs.ErrFull) {
			t.Fatalf("Submit with only unfinished records = %v, want ErrFull", err)
		}
		_ = pool.Resume()
	})
}

// TestStatesFollowTheTask: every state a job can reach, including not_run
// for a job that shutdown dropped from the queue.
func TestStatesFollowTheTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, pool := newRunner(t, 100, time.Hour, map[string]int{})
		long, err := r.Submit(context.Background(), jobstest.Timed(jobstest.Sleep(50*time.Second), 55*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		queued, _ := r.Submit(context.Background(), factorial(3))
		waitState(t, r, long.ID, jobs.Running)
		waitState(t, r, queued.ID, jobs.Queued)
		timed, _ := r.Submit(context.Background(), jobstest.Timed(jobstest.Sleep(time.Minute), time.Second))
		go func() { _ = pool.Shutdown(context.Background(), crew.Soft) }()
		synctest.Wait()
		waitState(t, r, queued.ID, jobs.NotRun)
		waitState(t, r, timed.ID, jobs.NotRun)
		_ = pool.Close()
		rec := waitState(t, r, long.ID, jobs.Canceled)
		if rec.Error == "" {
			t.Fatalf("cancelled job without an error: %+v", rec)
		}
		if _, err := r.Submit(context.Background(), factorial(1)); !errors.Is(err, crew.ErrClosed) {
			t.Fatalf("Submit after shutdown = %v", err)
		}
	})
}

// TestTimeoutsDefault: a Runner with no timeouts set takes jsjobs's
// defaults (30 s a job, at most 5 minutes) rather than refuse every job
// with "timeout 0s: want more than 0 and at most 0s".
func TestTimeoutsDefault(t *testing.T) {
	r, _ := newRunner(t, 10, time.Minute, map[string]int{})
	r.DefaultTimeout, r.MaxTimeout = 0, 0
	if _, err := r.Submit(context.Background(), factorial(3)); err != nil {
		t.Fatalf("Submit with no timeouts set: %v", err)
	}
	long := factorial(3)
	long.Timeout = jobs.Duration(6 * time.Minute)
	if _, err := r.Submit(context.Background(), long); err == nil || !strings.Contains(err.Error(), "at most 5m0s") {
		t.Fatalf("a timeout over the default most: %v", err)
	}
}
