package jsjobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
)

// TestDeclaredKindWaitsForAWorkerThatRegistersIt: a job of a kind its
// worker only declared (jobs.Declare) is a failed attempt there, as for a
// kind the worker lacks, retried with backoff, its record's errors
// saying ErrNotRunHere; once a worker that registers the kind runs, it
// succeeds. A bad job of the declared kind is refused at Submit.
func TestDeclaredKindWaitsForAWorkerThatRegistersIt(t *testing.T) {
	c := newCluster(t)
	declared := jobstest.Kinds()
	if err := jobs.Declare[Yell](declared); err != nil {
		t.Fatal(err)
	}
	cfg := jsConfig()
	cfg.Kinds = declared
	cfg.Backoff = func(int) time.Duration { return 50 * time.Millisecond }
	front := c.runner(t, cfg)
	closeRunner(t, front)
	frontSrc := consume(t, front)
	ctx := context.Background()
	if _, err := front.Submit(ctx, jobs.Spec{Kind: "yell", Args: []byte(`{"txt":"hi"}`)}); err == nil || !strings.Contains(err.Error(), `unknown field "txt"`) {
		t.Fatalf("a declared kind's bad job: %v, want it refused", err)
	}
	spec, err := jobs.NewSpec(Yell{Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	rec := submit(t, front, spec)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if rec, err = front.Get(ctx, rec.ID); err != nil {
			t.Fatal(err)
		}
		if rec.Attempts >= 2 || rec.State.Terminal() || time.Now().After(deadline) {
			break
		}
	}
	if rec.State.Terminal() || rec.Attempts < 2 || len(rec.Errors) == 0 || !strings.Contains(rec.Errors[0].Error, jobs.ErrNotRunHere.Error()) {
		t.Fatalf("a kind the worker only declared: %s after %d attempts, errors %+v; want it retried", rec.State, rec.Attempts, rec.Errors)
	}
	stopSource(t, frontSrc)
	registered := jobstest.Kinds()
	if err := jobs.Register(registered, func(_ context.Context, s Yell) (string, error) {
		return strings.ToUpper(s.Text), nil
	}); err != nil {
		t.Fatal(err)
	}
	cfg.Kinds = registered
	worker := c.runner(t, cfg)
	closeRunner(t, worker)
	consume(t, worker)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if rec, err = front.Wait(wctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	if out, err := jobs.ResultOf[string](rec); err != nil || out != "HI" {
		t.Fatalf("run by a worker that registers the kind: %s, %q %v", rec.State, out, err)
	}
}
