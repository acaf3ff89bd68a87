package memjobs_test

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/memjobs"
)

// outageArgs is a job that fails while outage is set: one that a retry
// after the outage mends.
type outageArgs struct{}

func (outageArgs) Kind() string { return "outage" }

var outage atomic.Bool

func withOutage(t *testing.T, r *memjobs.Runner) jobs.Spec {
	t.Helper()
	if err := jobs.Register(r.Kinds, func(ctx context.Context, _ outageArgs) (int, error) {
		if outage.Load() {
			return 0, errors.New("the bank is down")
		}
		return jobs.InfoOf(ctx).Attempt, nil
	}); err != nil {
		t.Fatal(err)
	}
	spec, err := jobs.NewSpec(outageArgs{})
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestRetryRunsAFailedJobAgain: a failed job's record keeps its spec and
// its error; Retry queues it again under its id (answered queued: the pool
// is paused so that the run cannot end first), and it succeeds, its
// record counting the retry and keeping the earlier run's error; it lists
// first, as submitted now.
func TestRetryRunsAFailedJobAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, pool := newRunner(t, 100, time.Hour, map[string]int{})
		spec := withOutage(t, r)
		outage.Store(true)
		defer outage.Store(false)
		rec, err := r.Submit(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		later, _ := r.Submit(context.Background(), factorial(3))
		failed := waitState(t, r, rec.ID, jobs.Failed)
		if failed.Spec == nil || failed.Spec.Kind != "outage" || len(failed.Errors) != 1 || failed.Errors[0].Error != "the bank is down" {
			t.Fatalf("a failed record: %+v, want its spec and its error", failed)
		}
		outage.Store(false)
		_ = pool.Pause()
		again, err := r.Retry(context.Background(), rec.ID)
		if err != nil || again.ID != rec.ID || again.State != jobs.Queued || again.Retries != 1 {
			t.Fatalf("Retry: %+v %v, want it queued, retried once", again, err)
		}
		_ = pool.Resume()
		done := waitState(t, r, rec.ID, jobs.Succeeded)
		if done.Retries != 1 || done.Spec != nil || len(done.Errors) != 1 || done.Error != "" || string(done.Result) != "1" || !done.Created.Equal(rec.Created) {
			t.Fatalf("after the retry: %+v, want succeeded at a fresh attempt 1 with the earlier error kept", done)
		}
		page, _ := r.List(context.Background(), jobs.Query{})
		if len(page.Jobs) != 2 || page.Jobs[0].ID != rec.ID || page.Jobs[1].ID != later.ID {
			t.Fatalf("the list after a retry: %+v, want the retried job first", page.Jobs)
		}
		var ended *jobs.EndedError
		if _, err := r.Retry(context.Background(), rec.ID); !errors.As(err, &ended) || ended.State != jobs.Succeeded {
			t.Fatalf("Retry of a succeeded job: %v, want an *EndedError", err)
		}
		for _, id := range []string{"00000000000000ff", "nope"} {
			if _, err := r.Retry(context.Background(), id); !errors.Is(err, jobs.ErrNotFound) {
				t.Fatalf("Retry(%q): %v, want ErrNotFound", id, err)
			}
		}
	})
}

// TestRetryTwiceAnswersTheSame: a second retry finds the job queued by the
// first and answers it as it is, without running it twice.
func TestRetryTwiceAnswersTheSame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, pool := newRunner(t, 100, time.Hour, map[string]int{})
		rec, _ := r.Submit(context.Background(), failing())
		time.Sleep(time.Second)
		waitState(t, r, rec.ID, jobs.Failed)
		_ = pool.Pause()
		before := pool.Stats().Submitted
		first, err := r.Retry(context.Background(), rec.ID)
		if err != nil || first.State != jobs.Queued {
			t.Fatalf("Retry: %+v %v", first, err)
		}
		second, err := r.Retry(context.Background(), rec.ID)
		if err != nil || !reflect.DeepEqual(first, second) {
			t.Fatalf("a second Retry: %+v %v, want %+v", second, err, first)
		}
		if n := pool.Stats().Submitted - before; n != 1 {
			t.Fatalf("two retries submitted %d tasks, want 1", n)
		}
		_ = pool.Resume()
		time.Sleep(time.Second)
		if failed := waitState(t, r, rec.ID, jobs.Failed); failed.Retries != 1 || len(failed.Errors) != 2 {
			t.Fatalf("after the retry failed too: %+v, want 1 retry and both runs' errors", failed)
		}
	})
}

// TestRetryEveryEnd: a timed-out, a canceled and a not-run job run again;
// a pool that refuses the run leaves the record as it was.
func TestRetryEveryEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, pool := newRunner(t, 100, time.Hour, map[string]int{})
		timed, _ := r.Submit(context.Background(), jobstest.Timed(sleep(time.Minute), time.Second))
		time.Sleep(2 * time.Second)
		waitState(t, r, timed.ID, jobs.TimedOut)
		_ = pool.Pause()
		canceled, _ := r.Submit(context.Background(), factorial(3))
		if _, _, err := r.Cancel(context.Background(), canceled.ID); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{timed.ID, canceled.ID} {
			if rec, err := r.Retry(context.Background(), id); err != nil || rec.State != jobs.Queued || rec.CanceledWhile != "" {
				t.Fatalf("Retry: %+v %v", rec, err)
			}
		}
		// The queue of 4 holds the two retried and the canceled run's
		// task; one more fills it, and a retry is then refused.
		full, _ := r.Submit(context.Background(), factorial(4))
		if _, _, err := r.Cancel(context.Background(), full.ID); err != nil {
			t.Fatal(err)
		}
		if rec, err := r.Retry(context.Background(), full.ID); !errors.Is(err, crew.ErrQueueFull) || rec.State != jobs.Canceled {
			t.Fatalf("Retry on a full queue: %+v %v", rec, err)
		}
		if rec, _ := r.Get(context.Background(), full.ID); rec.State != jobs.Canceled || rec.Retries != 0 {
			t.Fatalf("a refused retry changed the record: %+v", rec)
		}
		_ = pool.Resume()
		time.Sleep(time.Minute)
		synctest.Wait()
		// timed's spec sleeps a minute with a timeout of a second: again.
		waitState(t, r, timed.ID, jobs.TimedOut)
		waitState(t, r, canceled.ID, jobs.Succeeded)

		_ = pool.Pause()
		dropped, _ := r.Submit(context.Background(), factorial(5))
		go func() { _ = pool.Shutdown(context.Background(), crew.Soft) }()
		synctest.Wait()
		waitState(t, r, dropped.ID, jobs.NotRun)
		if rec, err := r.Retry(context.Background(), dropped.ID); !errors.Is(err, crew.ErrClosed) || rec.State != jobs.NotRun {
			t.Fatalf("Retry on a closed pool: %+v %v", rec, err)
		}
	})
}
