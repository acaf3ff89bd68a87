package memjobs_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/internal/jobstest"
)

// TestSnoozeIsNotAFailure: jobs.Snooze "runs the job again after d, no
// attempt counted", and memjobs is "the same contract in memory" (README):
// a job whose first run snoozes must not end failed with "snoozed for
// 100ms" as its error. (memjobs runs a job once, so a failure is final;
// a snooze is no failure.)
func TestSnoozeIsNotAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRunner(t, 10, time.Minute, map[string]int{})
		rec, err := r.Submit(context.Background(), jobstest.Flaky(jobstest.FlakyArgs{Snooze: jobs.Duration(100 * time.Millisecond)}))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		got, err := r.Get(context.Background(), rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != jobs.Succeeded {
			t.Fatalf("a job that snoozed its first run: %s, error %q; want it run again and succeeded", got.State, got.Error)
		}
	})
}
