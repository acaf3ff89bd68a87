package jobstest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

// checkCommit holds a runner's workflows to being submitted whole or not
// at all (jobs.SubmitWorkflow's commit): a submitter killed after some of
// its steps were stored (a panic out of Submit, nothing undone) leaves
// every stored step canceled at its deadline, none run, an even-on-failure
// join included; a submit refused midway cancels what it stored at once;
// one that took longer than its bound is undone, not committed (its own
// job canceled too); and a join even on failure counts its parents, not
// the gate.
func checkCommit(t *testing.T, r jobs.Canceler) {
	t.Helper()
	ctx := context.Background()
	step := func(name string, spec jobs.Spec, after ...string) jobs.Step {
		return jobs.Step{Name: name, Spec: spec, After: after}
	}
	join := Tally()
	join.After = nil // its parents are steps
	steps := []jobs.Step{
		step("a", Factorial(3)),
		step("b", Factorial(4), "a"),
		step("join", join, "a", "b"),
	}
	steps[2].Spec.EvenOnFailure = true

	// Killed after storing its steps, before its own job and its commit.
	killed := &faulty{Canceler: r, at: 2 + len(steps) + 1, panics: true}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the submit was not killed")
			}
		}()
		_, _, _ = jobs.SubmitWorkflow(ctx, killed, steps, jobs.WithCommitWithin(300*time.Millisecond))
	}()
	stored := killed.stored()
	if len(stored) != 2+len(steps) {
		t.Fatalf("stored %d jobs before the kill, want the deadline, the gate and %d steps", len(stored), len(steps))
	}
	began := time.Now()
	for _, id := range stored[2:] {
		if rec := waitEnd(t, r, id); rec.State != jobs.Canceled {
			t.Errorf("a step of a workflow whose submitter was killed: %s %s (%s), want canceled", id, rec.State, rec.Error)
		}
	}
	if Runs("tally:"+stored[len(stored)-1]) != 0 {
		t.Error("the even-on-failure join of an uncommitted workflow ran")
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("an uncommitted workflow's steps canceled after %v, want about its deadline (600 ms)", took)
	}
	if rec := waitEnd(t, r, stored[1]); rec.State != jobs.Failed {
		t.Errorf("the gate of an uncommitted workflow: %s, want failed", rec.State)
	}

	// Refused midway: what was stored is canceled at once, deadline too.
	refused := &faulty{Canceler: r, at: 2 + 2}
	if _, _, err := jobs.SubmitWorkflow(ctx, refused, steps); !errors.Is(err, jobs.ErrUnavailable) {
		t.Fatalf("a submit refused midway: %v, want the refusal", err)
	}
	for _, id := range refused.stored() {
		if rec := waitEnd(t, r, id); rec.State != jobs.Canceled {
			t.Errorf("job %s of a workflow refused midway: %s, want canceled", id, rec.State)
		}
	}

	// Slower than its bound: undone, not committed.
	slow := &faulty{Canceler: r, delay: 50 * time.Millisecond}
	if _, _, err := jobs.SubmitWorkflow(ctx, slow, steps, jobs.WithCommitWithin(100*time.Millisecond)); !errors.Is(err, jobs.ErrNotCommitted) {
		t.Fatalf("a submit slower than its bound: %v, want ErrNotCommitted", err)
	}
	for i, id := range slow.stored() {
		// Its deadline and gate canceled, or failed if the deadline came
		// first; its steps and its own job canceled.
		rec := waitEnd(t, r, id)
		if rec.State != jobs.Canceled && (i > 1 || rec.State != jobs.Failed) {
			t.Errorf("job %d (%s) of a workflow not committed in time: %s, want canceled", i, rec.Kind, rec.State)
		}
	}

	// Committed: the join counts its two parents, not the gate.
	wf, kept, err := jobs.SubmitWorkflow(ctx, r, steps)
	if err != nil {
		t.Fatal(err)
	}
	waitEnd(t, r, wf.ID)
	end := waitEnd(t, r, kept[2].ID)
	counts, err := jobs.ResultOf[jobs.Counts](end)
	if err != nil || end.State != jobs.Succeeded || counts[jobs.Succeeded] != 2 || len(counts) != 1 {
		t.Errorf("a committed workflow's even-on-failure join: %s %v (%v), want succeeded counting its 2 parents", end.State, counts, err)
	}
}

// faulty is a store whose at-th Submit (from 1) is refused, or panics (a
// process killed: nothing after it runs), and each of whose Submits takes
// delay; it keeps the ids of the jobs it stored.
type faulty struct {
	jobs.Canceler
	at     int
	panics bool
	delay  time.Duration

	mu  sync.Mutex
	n   int
	ids []string
}

func (f *faulty) Submit(ctx context.Context, spec jobs.Spec) (jobs.Record, error) {
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	time.Sleep(f.delay)
	if n == f.at {
		if f.panics {
			panic(fmt.Sprintf("killed at submit %d", n))
		}
		return jobs.Record{}, fmt.Errorf("%w: refused at submit %d", jobs.ErrUnavailable, n)
	}
	rec, err := f.Canceler.Submit(ctx, spec)
	if err == nil {
		f.mu.Lock()
		f.ids = append(f.ids, rec.ID)
		f.mu.Unlock()
	}
	return rec, err
}

func (f *faulty) stored() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ids...)
}
