package memjobs_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
)

// TestSubmitterIsRecorded: who submitted a job reads in its record,
// accepted, ended and retried.
func TestSubmitterIsRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRunner(t, 100, time.Hour, map[string]int{})
		ctx := context.Background()
		ok := factorial(3)
		ok.Submitter = "alice"
		bad := jobstest.Attempts(jobstest.Flaky(jobstest.FlakyArgs{Fails: 100, Permanent: true}), 1)
		bad.Submitter = "carol"
		for spec, state := range map[*jobs.Spec]jobs.State{&ok: jobs.Succeeded, &bad: jobs.Failed} {
			rec, err := r.Submit(ctx, *spec)
			if err != nil || rec.Submitter != spec.Submitter {
				t.Fatalf("accepted as %+v (%v), want submitter %s", rec, err, spec.Submitter)
			}
			if got := waitState(t, r, rec.ID, state); got.Submitter != spec.Submitter {
				t.Fatalf("%s, the job reads submitter %q, want %s", state, got.Submitter, spec.Submitter)
			}
			if state == jobs.Failed {
				if _, err := r.Retry(ctx, rec.ID); err != nil {
					t.Fatal(err)
				}
				if got := waitState(t, r, rec.ID, jobs.Failed); got.Submitter != "carol" || got.Retries != 1 {
					t.Fatalf("retried, the job reads %+v: want submitter carol after 1 retry", got)
				}
			}
		}
	})
}
