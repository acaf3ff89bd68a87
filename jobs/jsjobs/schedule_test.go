package jsjobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
)

// TestJetStreamSchedulesJobs: a job due later is scheduled, not waiting
// (the consumer has nothing pending for it), reads scheduled with its time
// until then, and runs within a second of its time; a time in the past or
// beyond MaxDelay is refused naming "run_at", a delay beyond it "delay".
func TestJetStreamSchedulesJobs(t *testing.T) {
	c := newCluster(t)
	cfg := jsConfig()
	cfg.MaxDelay = time.Hour
	r := c.runner(t, cfg)
	ctx := context.Background()
	at := time.Now().Add(2 * time.Second)
	spec := jobstest.Factorial(5)
	spec.RunAt = at
	rec := submit2(t, r, spec)
	if rec.State != jobs.Scheduled || !rec.RunAt.Equal(at) {
		t.Fatalf("accepted as %+v, want scheduled at %v", rec, at)
	}
	consume(t, r)
	got, err := r.Get(ctx, rec.ID)
	if err != nil || got.State != jobs.Scheduled || !got.RunAt.Equal(at) || got.Kind != "factorial" {
		t.Fatalf("a job due later reads %+v (%v)", got, err)
	}
	info, err := r.Consumer().Info(ctx)
	if err != nil || info.NumPending != 0 || info.NumAckPending != 0 {
		t.Fatalf("the consumer counts a job due in 2 s as backlog: %+v %v", info, err)
	}
	got = eventually(t, r, rec.ID, jobs.Succeeded)
	if late := got.Finished.Sub(at); late < 0 || late > time.Second {
		t.Fatalf("due at %v, ended %v later; want within a second", at.Format(time.StampMilli), late)
	}
	// Its creation is its submit's, not its due time: a latency from
	// created to finished counts the wait it was asked for.
	if d := got.Created.Sub(rec.Created); d < -time.Second || d > time.Second {
		t.Fatalf("created %v once run, %v when accepted: want the same (due at %v)", got.Created.Format(time.StampMilli), rec.Created.Format(time.StampMilli), at.Format(time.StampMilli))
	}
	for _, c := range []struct {
		at   time.Time
		want string
	}{{time.Now().Add(-time.Minute), "in the past"}, {time.Now().Add(2 * time.Hour), "want at most 1h0m0s ahead"}} {
		spec := jobstest.Factorial(1)
		spec.RunAt = c.at
		var invalid *jobs.InvalidError
		if _, err := r.Submit(ctx, spec); !errors.As(err, &invalid) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"run_at"`) {
			t.Errorf("run_at %v: %v, want an *InvalidError saying %q", c.at, err, c.want)
		}
	}
	// A delay beyond MaxDelay is refused naming the field the caller gave.
	spec = jobstest.Factorial(1)
	spec.Delay = jobs.Duration(2 * time.Hour)
	var invalid *jobs.InvalidError
	if _, err := r.Submit(ctx, spec); !errors.As(err, &invalid) || !strings.Contains(err.Error(), `"delay" 2h0m0s: want at most 1h0m0s`) {
		t.Errorf("delay 2h: %v, want an *InvalidError naming \"delay\" and MaxDelay", err)
	}
}

// submit2 submits spec and returns its record, whatever its state.
func submit2(t *testing.T, r jobs.Runner, spec jobs.Spec) jobs.Record {
	t.Helper()
	rec, err := r.Submit(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestJetStreamRunsAScheduledJobDeliveredLate: a job due later whose
// message comes long after its time (a fault held it, or a retry's backoff
// ran past it) runs, its time no reason to refuse it; and a scheduled job
// that fails is retried after its backoff and succeeds.
func TestJetStreamRunsAScheduledJobDeliveredLate(t *testing.T) {
	c := newCluster(t)
	cfg := jsConfig()
	cfg.Backoff = func(int) time.Duration { return 1500 * time.Millisecond } // past the job's time by more than a second
	r := c.runner(t, cfg)
	spec := jobstest.Factorial(5)
	spec.RunAt = time.Now().Add(-time.Minute)
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	id := jobs.NewID()
	if err := r.HandleDelivery(context.Background(), "jobs."+id, data); err != nil {
		t.Fatal(err)
	}
	if rec, err := r.Get(context.Background(), id); err != nil || rec.State != jobs.Succeeded || string(rec.Result) != "120" {
		t.Fatalf("a job delivered a minute after its time: %+v, %v", rec, err)
	}

	flaky := jobstest.Flaky(jobstest.FlakyArgs{FailRuns: 1})
	flaky.RunAt = time.Now().Add(1500 * time.Millisecond)
	later := submit2(t, r, flaky)
	consume(t, r)
	if rec := eventually(t, r, later.ID, jobs.Succeeded); rec.Attempts != 2 {
		t.Fatalf("a scheduled job retried after its first run failed: %+v", rec)
	}
}
