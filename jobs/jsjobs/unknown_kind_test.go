package jsjobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
)

// Yell is a kind only the newer runner has.
type Yell struct {
	Text string `json:"text"`
}

func (Yell) Kind() string { return "yell" }

// TestUnknownKindWaitsForAWorkerThatHasIt: a job of a kind its submitter
// has and the only worker lacks (a deploy that reached the submitters
// first) is a failed attempt there, retried with backoff, not a job
// failed at once; once a worker that has the kind runs, it succeeds
// (before, it was failed at its first delivery).
func TestUnknownKindWaitsForAWorkerThatHasIt(t *testing.T) {
	c := newCluster(t)
	newer := jobstest.Kinds()
	if err := jobs.Register(newer, func(_ context.Context, s Yell) (string, error) {
		return strings.ToUpper(s.Text), nil
	}); err != nil {
		t.Fatal(err)
	}
	cfg := jsConfig()
	cfg.Kinds = newer
	cfg.Backoff = func(int) time.Duration { return 50 * time.Millisecond }
	front := c.runner(t, cfg) // submits, and runs nothing until later
	closeRunner(t, front)
	old := c.runner(t, jsConfig())
	closeRunner(t, old)
	oldSrc := consume(t, old)
	spec, err := jobs.NewSpec(Yell{Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	rec := submit(t, front, spec)
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if rec, err = front.Get(ctx, rec.ID); err != nil {
			t.Fatal(err)
		}
		if rec.Attempts >= 2 || rec.State.Terminal() || time.Now().After(deadline) {
			break
		}
	}
	if rec.State.Terminal() || rec.Attempts < 2 || len(rec.Errors) == 0 || !strings.Contains(rec.Errors[0].Error, `"yell"`) {
		t.Fatalf("a kind the worker lacks: %s after %d attempts, errors %+v; want it retried", rec.State, rec.Attempts, rec.Errors)
	}
	stopSource(t, oldSrc)
	consume(t, front)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if rec, err = front.Wait(wctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	if out, err := jobs.ResultOf[string](rec); err != nil || out != "HI" {
		t.Fatalf("run by a worker that has the kind: %s, %q %v", rec.State, out, err)
	}
	if len(rec.Errors) == 0 || !strings.Contains(rec.Errors[0].Error, `this worker lacks it: invalid job: kind "yell"`) {
		t.Fatalf("the attempts on the older worker are not in the record's errors: %+v", rec.Errors)
	}
}
