package jobstest

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

// SumArgs sums its parents' results (each a factorial's, or another
// sum's), read with jobs.ParentResult: a join.
type SumArgs struct{}

func (SumArgs) Kind() string { return "sum" }

// Sum is the spec of a sum of the results of parents.
func Sum(parents ...string) jobs.Spec { return After(spec(SumArgs{}), parents...) }

// After is spec waiting for parents.
func After(spec jobs.Spec, parents ...string) jobs.Spec {
	spec.After = parents
	return spec
}

// TallyArgs answers its parents' counts by end state (jobs.ParentEnds):
// a batch's callback.
type TallyArgs struct{}

func (TallyArgs) Kind() string { return "tally" }

// Tally is the spec of a batch's callback: after every job of the batch,
// whatever their ends.
func Tally(members ...string) jobs.Spec {
	s := After(spec(TallyArgs{}), members...)
	s.EvenOnFailure = true
	return s
}

func runTally(ctx context.Context, _ TallyArgs) (jobs.Counts, error) {
	n, _ := runs.LoadOrStore("tally:"+jobs.InfoOf(ctx).ID, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	return jobs.ParentEnds(ctx)
}

// SumRuns counts the runs of sum jobs in this process, by id.
func SumRuns(id string) int { return Runs("sum:" + id) }

func runSum(ctx context.Context, _ SumArgs) (uint64, error) {
	info := jobs.InfoOf(ctx)
	n, _ := runs.LoadOrStore("sum:"+info.ID, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	var sum uint64
	for _, p := range info.After {
		v, err := jobs.ParentResult[uint64](ctx, p)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// CheckDependencies holds a runner whose jobs run (the caller runs them)
// to the rules of jobs.Spec.After: a diamond (A before B and C, both
// before D) runs D once, after B and C, with both their results; a parent
// that fails cancels its dependant, and that one's in turn, unless the
// dependant runs even on failure; a waiting job canceled never runs; a
// parent ended before its dependant is submitted counts as ended; an
// unknown parent is refused, nothing stored.
func CheckDependencies(t *testing.T, r jobs.Canceler) {
	t.Helper()
	ctx := context.Background()
	submit := submitter(t, r)
	// The diamond, A held long enough for the rest to be seen waiting.
	a := submit(Sleep(500 * time.Millisecond))
	b := submit(After(Factorial(4), a.ID))
	c := submit(After(Factorial(5), a.ID))
	d := submit(Sum(b.ID, c.ID))
	for _, w := range []jobs.Record{b, c, d} {
		if w.State != jobs.Waiting || len(w.After) == 0 {
			t.Fatalf("a job with parents, as submitted: %+v, want waiting with its parents", w)
		}
	}
	if rec, err := r.Get(ctx, d.ID); err != nil || rec.State != jobs.Waiting {
		t.Fatalf("Get of the join while its parents wait: %+v, %v", rec, err)
	}
	dr := waitEnd(t, r, d.ID)
	br, cr := waitEnd(t, r, b.ID), waitEnd(t, r, c.ID)
	if dr.State != jobs.Succeeded || string(dr.Result) != "144" {
		t.Fatalf("the join of 4! and 5!: %+v, want succeeded with 144", dr)
	}
	if n := SumRuns(d.ID); n != 1 {
		t.Errorf("the join ran %d times, want once", n)
	}
	if dr.Finished.Before(br.Finished) || dr.Finished.Before(cr.Finished) {
		t.Errorf("the join ended at %v, before a parent (%v, %v)", dr.Finished, br.Finished, cr.Finished)
	}

	// A parent that fails: its dependant canceled, naming it, and that
	// one's dependant too; one even on failure runs.
	e := submit(Flaky(FlakyArgs{Fails: 100, Permanent: true}))
	f := submit(After(Factorial(2), e.ID))
	g := submit(After(Factorial(3), f.ID))
	even := After(Factorial(3), e.ID)
	even.EvenOnFailure = true
	h := submit(even)
	fr := waitEnd(t, r, f.ID)
	if fr.State != jobs.Canceled || fr.CanceledWhile != jobs.Waiting || !strings.Contains(fr.Error, e.ID) {
		t.Errorf("a job whose parent failed: %+v, want canceled while waiting, naming %s", fr, e.ID)
	}
	if gr := waitEnd(t, r, g.ID); gr.State != jobs.Canceled || !strings.Contains(gr.Error, f.ID) {
		t.Errorf("a job whose parent was canceled: %+v, want canceled, naming %s", gr, f.ID)
	}
	if hr := waitEnd(t, r, h.ID); hr.State != jobs.Succeeded {
		t.Errorf("a job even on failure, its parent failed: %+v, want succeeded", hr)
	}

	// Retried after its failed parent was, a canceled dependant waits for
	// it again, and runs once it has succeeded.
	if re, ok := r.(jobs.Retrier); ok {
		p := submit(Attempts(Flaky(FlakyArgs{FailRuns: 1}), 1))
		c := submit(After(Factorial(3), p.ID))
		if cr := waitEnd(t, r, c.ID); cr.State != jobs.Canceled {
			t.Fatalf("a job whose parent failed: %+v, want canceled", cr)
		}
		if _, err := re.Retry(ctx, p.ID); err != nil {
			t.Fatalf("Retry of the failed parent: %v", err)
		}
		// Waiting, or released already if its parent has ended again.
		if again, err := re.Retry(ctx, c.ID); err != nil || again.State == jobs.Canceled {
			t.Fatalf("Retry of its canceled dependant: %+v, %v, want it waiting again", again, err)
		}
		if cr := waitEnd(t, r, c.ID); cr.State != jobs.Succeeded || cr.Retries != 1 {
			t.Errorf("the dependant retried, its parent retried: %+v, want succeeded", cr)
		}
	}

	// Canceled while its two parents run, then retried: it waits for both
	// again, not for the first alone (its first wait's count is gone).
	if re, ok := r.(jobs.Retrier); ok {
		p := submit(Sleep(250 * time.Millisecond))
		q := submit(Sleep(800 * time.Millisecond)) // within the runners' timeouts (a second)
		w := submit(Tally(p.ID, q.ID))
		if _, _, err := r.Cancel(ctx, w.ID); err != nil {
			t.Fatalf("Cancel of a waiting job: %v", err)
		}
		if again, err := re.Retry(ctx, w.ID); err != nil || again.State != jobs.Waiting {
			t.Fatalf("Retry of a canceled job whose parents run: %+v, %v, want waiting", again, err)
		}
		waitEnd(t, r, p.ID)
		time.Sleep(200 * time.Millisecond) // a release would come at the first parent's end
		if rec, _ := r.Get(ctx, w.ID); rec.State != jobs.Waiting {
			t.Errorf("a job retried after its cancel, one parent of two ended: %s, want waiting", rec.State)
		}
		wr, qr := waitEnd(t, r, w.ID), waitEnd(t, r, q.ID)
		if wr.State != jobs.Succeeded || wr.Finished.Before(qr.Finished) || Runs("tally:"+w.ID) != 1 {
			t.Errorf("a job retried after its cancel ended %v (%s, %d runs), its second parent at %v", wr.Finished, wr.State, Runs("tally:"+w.ID), qr.Finished)
		}
	}

	// Under an idempotency key: waiting like any other, one job however
	// often it is asked.
	if kr, ok := r.(jobs.KeyedRunner); ok {
		slow := submit(Sleep(300 * time.Millisecond))
		spec := Sum(slow.ID)
		first, _, err := kr.SubmitOnce(ctx, spec, "after-"+slow.ID)
		again, replayed, err2 := kr.SubmitOnce(ctx, spec, "after-"+slow.ID)
		if err != nil || err2 != nil || first.State != jobs.Waiting || again.ID != first.ID || !replayed {
			t.Fatalf("a keyed job with a parent, asked twice: %+v %v, %+v %v %v", first, err, again, replayed, err2)
		}
		kept, sr := waitEnd(t, r, first.ID), waitEnd(t, r, slow.ID)
		if kept.State != jobs.Succeeded || kept.Finished.Before(sr.Finished) || SumRuns(first.ID) != 1 {
			t.Errorf("a keyed job with a parent: %+v (%d runs), its parent ended at %v", kept, SumRuns(first.ID), sr.Finished)
		}
	}

	// A waiting job canceled, and one whose parent has already ended.
	long := submit(Sleep(300 * time.Millisecond))
	x := submit(Sum(long.ID))
	if rec, was, err := r.Cancel(ctx, x.ID); err != nil || rec.State != jobs.Canceled || was != jobs.Waiting {
		t.Fatalf("Cancel of a waiting job: %+v, was %s, %v", rec, was, err)
	}
	late := submit(Sum(b.ID))
	if lr := waitEnd(t, r, late.ID); lr.State != jobs.Succeeded || string(lr.Result) != "24" {
		t.Errorf("a job whose parent had ended when submitted: %+v, want succeeded with 24", lr)
	}
	// One parent ended, the other not: it waits for the other.
	slow := submit(Sleep(400 * time.Millisecond))
	mixed := submit(Sum(b.ID, slow.ID))
	if mixed.State != jobs.Waiting {
		t.Errorf("a job after an ended parent and a running one: %+v, want waiting", mixed)
	}
	time.Sleep(150 * time.Millisecond)
	if rec, _ := r.Get(ctx, mixed.ID); rec.State != jobs.Waiting {
		t.Errorf("a job after an ended parent and a running one, while that one runs: %+v, want waiting", rec)
	}
	mr, sr := waitEnd(t, r, mixed.ID), waitEnd(t, r, slow.ID)
	if mr.State != jobs.Succeeded || mr.Finished.Before(sr.Finished) {
		t.Errorf("a job after an ended parent and a running one ended %v (%s), its running parent at %v", mr.Finished, mr.State, sr.Finished)
	}
	waitEnd(t, r, long.ID)
	time.Sleep(200 * time.Millisecond) // a release would come at the parent's end
	if xr, _ := r.Get(ctx, x.ID); xr.State != jobs.Canceled || SumRuns(x.ID) != 0 {
		t.Errorf("a waiting job canceled, its parent since ended: %+v, %d runs", xr, SumRuns(x.ID))
	}

	// A batch of three, one canceled: its callback runs once, given the
	// counts of their ends.
	var batch []string
	for _, spec := range []jobs.Spec{Factorial(3), Sleep(2 * time.Second), Factorial(4)} {
		batch = append(batch, submit(spec).ID)
	}
	callback := submit(Tally(batch...))
	if _, _, err := r.Cancel(ctx, batch[1]); err != nil {
		t.Fatalf("Cancel of a batch's member: %v", err)
	}
	cb := waitEnd(t, r, callback.ID)
	if cb.State != jobs.Succeeded || string(cb.Result) != `{"canceled":1,"succeeded":2}` || Runs("tally:"+callback.ID) != 1 {
		t.Errorf("a batch's callback, one member canceled: %+v (%d runs), want succeeded once with canceled 1, succeeded 2", cb, Runs("tally:"+callback.ID))
	}

	if pa, ok := r.(jobs.ParentAdder); ok {
		checkGrowth(t, pa)
	}

	// Refused, nothing stored: an unknown parent, a bad one.
	unknown := jobs.NewID()
	var invalid *jobs.InvalidError
	if _, err := r.Submit(ctx, Sum(unknown)); !errors.As(err, &invalid) || !strings.Contains(err.Error(), unknown) {
		t.Errorf("a job after an unknown parent: %v, want an *InvalidError naming it", err)
	}
	if _, err := r.Submit(ctx, Sum("nope")); !errors.As(err, &invalid) {
		t.Errorf("a job after a bad id: %v, want an *InvalidError", err)
	}
	if _, err := r.Submit(ctx, Sum(a.ID, a.ID)); !errors.As(err, &invalid) {
		t.Errorf("a job after one parent twice: %v, want an *InvalidError", err)
	}
}

// submitter submits a spec to r, and fails t if r refuses it.
func submitter(t *testing.T, r jobs.Runner) func(jobs.Spec) jobs.Record {
	return func(spec jobs.Spec) jobs.Record {
		t.Helper()
		rec, err := r.Submit(context.Background(), spec)
		if err != nil {
			t.Fatalf("Submit(%s after %v): %v", spec.Kind, spec.After, err)
		}
		return rec
	}
}

// waitEnd polls job id until it has ended, for 20 s at most.
func waitEnd(t *testing.T, r jobs.Runner, id string) jobs.Record {
	t.Helper()
	var rec jobs.Record
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if rec, err = r.Get(context.Background(), id); err == nil && rec.State.Terminal() {
			return rec
		}
	}
	t.Fatalf("job %s did not end: %+v, %v", id, rec, err)
	return rec
}

// CheckWorkflow holds a runner whose jobs run to the rules of
// jobs.SubmitWorkflow: a diamond workflow's steps run in order, the join
// with both results, and its own job ends with the graph and the counts;
// a step that fails cancels what waits on it, and the workflow still ends;
// a cycle, a step unknown or named twice is refused, nothing stored; and
// a workflow is submitted whole or not at all (checkCommit).
func CheckWorkflow(t *testing.T, r jobs.Canceler) {
	t.Helper()
	ctx := context.Background()
	step := func(name string, spec jobs.Spec, after ...string) jobs.Step {
		return jobs.Step{Name: name, Spec: spec, After: after}
	}
	wf, steps, err := jobs.SubmitWorkflow(ctx, r, []jobs.Step{
		step("d", Sum(), "b", "c"), // given first: its parents go before it
		step("a", Sleep(200*time.Millisecond)),
		step("b", Factorial(4), "a"),
		step("c", Factorial(5), "a"),
	})
	if err != nil {
		t.Fatalf("SubmitWorkflow: %v", err)
	}
	if wf.Kind != "workflow" || wf.State != jobs.Waiting || len(steps) != 4 || steps[0].Name != "a" || steps[3].Name != "d" {
		t.Fatalf("a diamond workflow as submitted: %+v, steps %+v", wf, steps)
	}
	if got, err := r.Get(ctx, wf.ID); err != nil || got.State != jobs.Waiting {
		t.Fatalf("the workflow's job while its steps run: %+v, %v", got, err)
	} else if read, err := jobs.WorkflowOf(got); err != nil || len(read) != 4 {
		t.Fatalf("WorkflowOf a waiting workflow: %+v, %v", read, err)
	}
	end := waitEnd(t, r, wf.ID)
	res, err := jobs.ResultOf[jobs.WorkflowResult](end)
	if err != nil || end.State != jobs.Succeeded || res.Ends[jobs.Succeeded] != 4 || len(res.Steps) != 4 {
		t.Fatalf("the workflow's end: %+v (%+v, %v), want succeeded with 4 steps succeeded", end, res, err)
	}
	if d, _ := r.Get(ctx, steps[3].ID); string(d.Result) != "144" {
		t.Errorf("the workflow's join: %+v, want 144", d)
	}
	if read, err := jobs.WorkflowOf(end); err != nil || len(read) != 4 || read[0].ID != steps[0].ID {
		t.Errorf("WorkflowOf an ended workflow: %+v, %v", read, err)
	}

	// A failed step cancels what waits on it; the workflow ends all the same.
	wf, steps, err = jobs.SubmitWorkflow(ctx, r, []jobs.Step{
		step("bad", Flaky(FlakyArgs{Fails: 100, Permanent: true})),
		step("next", Factorial(3), "bad"),
		step("other", Factorial(3)),
	})
	if err != nil {
		t.Fatalf("SubmitWorkflow: %v", err)
	}
	end = waitEnd(t, r, wf.ID)
	res, _ = jobs.ResultOf[jobs.WorkflowResult](end)
	if res.Ends[jobs.Failed] != 1 || res.Ends[jobs.Canceled] != 1 || res.Ends[jobs.Succeeded] != 1 {
		t.Errorf("a workflow with a failed step: %+v, want 1 failed, 1 canceled, 1 succeeded", res.Ends)
	}

	// Retried: the failed step and what waits on it run again, not the
	// succeeded one.
	if re, ok := r.(jobs.Retrier); ok {
		wf, steps, err = jobs.SubmitWorkflow(ctx, r, []jobs.Step{
			step("flaky", Attempts(Flaky(FlakyArgs{FailRuns: 1}), 1)),
			step("next", Sum(), "flaky"),
			step("other", Factorial(3)),
		})
		if err != nil {
			t.Fatalf("SubmitWorkflow: %v", err)
		}
		waitEnd(t, r, wf.ID)
		retried, err := jobs.RetryWorkflow(ctx, re, steps)
		if err != nil || len(retried) != 2 || retried[0].Name != "flaky" || retried[1].Name != "next" {
			t.Fatalf("RetryWorkflow: %+v, %v, want flaky then next", retried, err)
		}
		for _, s := range steps {
			rec := waitEnd(t, r, s.ID)
			if rec.State != jobs.Succeeded || (s.Name == "other") != (rec.Retries == 0) {
				t.Errorf("step %s after the workflow's retry: %+v", s.Name, rec)
			}
		}
	}

	// Refused whole.
	var invalid *jobs.InvalidError
	for what, bad := range map[string][]jobs.Step{
		"a cycle":         {step("x", Factorial(1), "y"), step("y", Factorial(1), "x"), step("z", Factorial(1))},
		"an unknown step": {step("x", Factorial(1), "nope")},
		"a name twice":    {step("x", Factorial(1)), step("x", Factorial(2))},
		"no steps":        nil,
		"a step's ids":    {step("x", After(Factorial(1), wf.ID))},
	} {
		if _, _, err := jobs.SubmitWorkflow(ctx, r, bad); !errors.As(err, &invalid) {
			t.Errorf("a workflow with %s: %v, want an *InvalidError", what, err)
		}
	}
	checkCommit(t, r)
}

// checkGrowth holds a store's AddAfter to its rules: a batch's callback
// takes members while it waits (one already there skipped) and runs once,
// after all of them, with their counts; a parent refused (the job itself,
// unknown, one that waits) adds nothing; once it ended, ErrNotWaiting. An
// add racing a release either is refused or holds the job for its new
// parent, never both ran and added.
func checkGrowth(t *testing.T, r jobs.ParentAdder) {
	t.Helper()
	ctx := context.Background()
	submit := submitter(t, r)
	slow, first := submit(Sleep(800*time.Millisecond)), submit(Factorial(3))
	cb := submit(Tally(first.ID, slow.ID))
	later, quick := submit(Sleep(300*time.Millisecond)), submit(Factorial(4))
	grown, err := r.AddAfter(ctx, cb.ID, later.ID, quick.ID, first.ID)
	if err != nil || grown.State != jobs.Waiting || len(grown.After) != 4 {
		t.Fatalf("AddAfter of two members and one already there: %+v, %v, want waiting after 4", grown, err)
	}
	if again, err := r.AddAfter(ctx, cb.ID, later.ID); err != nil || len(again.After) != 4 {
		t.Fatalf("AddAfter repeated: %+v, %v, want the same 4", again, err)
	}
	waiter := submit(Sum(slow.ID))
	var invalid *jobs.InvalidError
	for name, ids := range map[string][]string{
		"the job itself": {cb.ID},
		"unknown":        {jobs.NewID()},
		"not an id":      {"nope"},
		"waiting":        {waiter.ID},
		"none":           nil,
	} {
		if _, err := r.AddAfter(ctx, cb.ID, ids...); !errors.As(err, &invalid) {
			t.Errorf("AddAfter of %s: %v, want an *InvalidError", name, err)
		}
	}
	if rec, _ := r.Get(ctx, cb.ID); len(rec.After) != 4 {
		t.Errorf("after the refusals, the callback waits for %v, want the 4 added", rec.After)
	}
	done := waitEnd(t, r, cb.ID)
	if done.State != jobs.Succeeded || string(done.Result) != `{"succeeded":4}` || Runs("tally:"+cb.ID) != 1 {
		t.Fatalf("a grown batch's callback: %+v (%d runs), want succeeded once with 4 succeeded", done, Runs("tally:"+cb.ID))
	}
	for _, m := range []string{slow.ID, later.ID} {
		if mr := waitEnd(t, r, m); done.Finished.Before(mr.Finished) {
			t.Errorf("the callback ended at %v, before its member %s (%v)", done.Finished, m, mr.Finished)
		}
	}
	if _, err := r.AddAfter(ctx, cb.ID, quick.ID, later.ID, first.ID, jobs.NewID()); err == nil {
		t.Error("AddAfter to an ended job: no error")
	}
	if _, err := r.AddAfter(ctx, cb.ID, submit(Factorial(2)).ID); !errors.Is(err, jobs.ErrNotWaiting) {
		t.Errorf("AddAfter to an ended job: %v, want ErrNotWaiting", err)
	}
	if _, err := r.AddAfter(ctx, jobs.NewID(), first.ID); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("AddAfter to an unknown job: %v, want ErrNotFound", err)
	}

	// Racing its release: its only parent has ended, so the job is being
	// released as the add comes.
	for range 8 {
		c := submit(Tally(first.ID))
		extra := submit(Sleep(200 * time.Millisecond))
		_, err := r.AddAfter(ctx, c.ID, extra.ID)
		cr, er := waitEnd(t, r, c.ID), waitEnd(t, r, extra.ID)
		switch {
		case errors.Is(err, jobs.ErrNotWaiting):
		case err != nil:
			t.Fatalf("AddAfter racing a release: %v", err)
		case cr.Finished.Before(er.Finished) || string(cr.Result) != `{"succeeded":2}`:
			t.Errorf("added before its release, it ran before its new parent ended: %+v, the parent ended at %v", cr, er.Finished)
		}
		if cr.State != jobs.Succeeded || Runs("tally:"+c.ID) != 1 {
			t.Errorf("a job added to as it was released: %+v, %d runs, want succeeded once", cr, Runs("tally:"+c.ID))
		}
	}
}
