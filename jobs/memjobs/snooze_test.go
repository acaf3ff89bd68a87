package memjobs_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
)

// TestSnoozeEndsTheJobSayingWhy: memjobs runs a job once (its doc), so
// a run that snoozes ends the job failed, as any failure does; its error
// says that a snooze runs it again only in the JetStream store (before,
// it read "snoozed for 100ms" alone, as if the snooze had been honoured).
func TestSnoozeEndsTheJobSayingWhy(t *testing.T) {
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
		if got.State != jobs.Failed || !strings.Contains(got.Error, "snoozed for 100ms") || !strings.Contains(got.Error, "JetStream store") {
			t.Fatalf("a job that snoozed its first run: %s, error %q; want failed, saying why", got.State, got.Error)
		}
	})
}
