package jsjobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/prometheus/client_golang/prometheus"
)

// listAll pages through q's jobs with a page size of limit, and fails the
// test if a page is out of order or a job comes twice.
func listAll(t *testing.T, r jobs.Lister, q jobs.Query) []jobs.Record {
	t.Helper()
	var all []jobs.Record
	seen := map[string]bool{}
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("more than 1,000 pages")
		}
		p, err := r.List(context.Background(), q)
		if err != nil {
			t.Fatalf("List(%+v): %v", q, err)
		}
		for _, rec := range p.Jobs {
			if seen[rec.ID] {
				t.Fatalf("job %s listed twice", rec.ID)
			}
			seen[rec.ID] = true
		}
		all = append(all, p.Jobs...)
		if p.Next == "" {
			return all
		}
		q.After = p.Next
	}
}

// closeRunner closes r when the test ends: its tails stop.
func closeRunner(t *testing.T, r *jsjobs.Runner) {
	t.Cleanup(func() { _ = r.Close() })
}

// TestJetStreamListsByState: jobs ended (succeeded, failed), waiting
// (queued), due later (scheduled) and canceled are each listed in their
// state, newest first, page after page with the cursor each page gives,
// every job once, filtered by kind; Counts agree with the lists; a second
// runner on the same store lists the same; bad queries name their field.
func TestJetStreamListsByState(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	closeRunner(t, r)
	src := consume(t, r)
	var ok, failed []string
	for i := range 60 {
		ok = append(ok, submit(t, r, jobstest.Factorial(i%20)).ID)
		if i%3 == 0 {
			failed = append(failed, submit(t, r, jobstest.Attempts(jobstest.Flaky(jobstest.FlakyArgs{FailRuns: 1}), 1)).ID)
		}
	}
	for _, id := range ok {
		eventually(t, r, id, jobs.Succeeded)
	}
	for _, id := range failed {
		eventually(t, r, id, jobs.Failed)
	}
	stopSource(t, src)
	var queued []string
	for range 7 {
		queued = append(queued, submit(t, r, jobstest.Sleep(time.Millisecond)).ID)
	}
	later := jobstest.Sleep(time.Millisecond)
	later.RunAt = time.Now().Add(time.Hour)
	scheduled := submit(t, r, later).ID
	canceled, _, err := r.Cancel(context.Background(), queued[0])
	if err != nil {
		t.Fatal(err)
	}
	queued = queued[1:]

	other := c.runner(t, jsConfig())
	closeRunner(t, other)
	for _, lister := range []*jsjobs.Runner{r, other} {
		want := map[jobs.State][]string{
			jobs.Succeeded: ok, jobs.Failed: failed, jobs.Queued: queued,
			jobs.Scheduled: {scheduled}, jobs.Canceled: {canceled.ID},
		}
		// The other runner's index follows the store a little later.
		deadline := time.Now().Add(10 * time.Second)
		for st, ids := range want {
			var got []jobs.Record
			for {
				got = listAll(t, lister, jobs.Query{State: st, Limit: 7})
				if len(got) == len(ids) || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			gotIDs := make([]string, len(got))
			for i, rec := range got {
				gotIDs[i] = rec.ID
				if rec.State != st {
					t.Fatalf("listed as %s: %+v", st, rec)
				}
				if i > 0 && listedAfter(got[i-1], rec) {
					t.Fatalf("%s: %s listed before %s, which changed later", st, got[i-1].ID, rec.ID)
				}
			}
			slices.Sort(gotIDs)
			if want := slices.Sorted(slices.Values(ids)); !slices.Equal(gotIDs, want) {
				t.Fatalf("%s: listed %d jobs %v, want %d %v", st, len(gotIDs), gotIDs, len(want), want)
			}
		}
		if got := listAll(t, lister, jobs.Query{State: jobs.Failed, Kind: "flaky", Limit: 3}); len(got) != len(failed) {
			t.Fatalf("failed flaky jobs: %d, want %d", len(got), len(failed))
		}
		if got := listAll(t, lister, jobs.Query{State: jobs.Succeeded, Kind: "flaky"}); len(got) != 0 {
			t.Fatalf("succeeded flaky jobs: %d, want none", len(got))
		}
		if got := listAll(t, lister, jobs.Query{Kind: "nope"}); len(got) != 0 {
			t.Fatalf("jobs of an unknown kind: %d", len(got))
		}
		all := listAll(t, lister, jobs.Query{Limit: 11})
		if n := len(ok) + len(failed) + len(queued) + 2; len(all) != n {
			t.Fatalf("all jobs: %d listed, want %d", len(all), n)
		}
		counts, err := lister.Counts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		wantCounts := jobs.Counts{jobs.Succeeded: len(ok), jobs.Failed: len(failed), jobs.Queued: len(queued), jobs.Scheduled: 1, jobs.Canceled: 1}
		if len(counts) != len(wantCounts) {
			t.Fatalf("counts %v, want %v", counts, wantCounts)
		}
		for st, n := range wantCounts {
			if counts[st] != n {
				t.Fatalf("counts %v, want %v", counts, wantCounts)
			}
		}
	}

	for _, q := range []jobs.Query{
		{State: "lost"}, {Limit: -1}, {Limit: jobs.MaxLimit + 1}, {After: "x"}, {After: "zzzzzzzzzzzzzz.0123456789abcdef"},
		{After: "1.0123456789ABCDEF"}, {After: "1.*"},
	} {
		var invalid *jobs.InvalidError
		if _, err := r.List(context.Background(), q); !errors.As(err, &invalid) {
			t.Fatalf("List(%+v): %v, want an *InvalidError", q, err)
		}
	}
}

// listedAfter reports whether a, listed before b, changed after it: the
// order is newest first by the store's time of their latest change (the
// record's end, or the message's publish for a job waiting), which the
// times a record shows precede by a write: a second of leeway.
func listedAfter(a, b jobs.Record) bool {
	return changed(a).Add(time.Second).Before(changed(b))
}

func changed(r jobs.Record) time.Time {
	if !r.Finished.IsZero() {
		return r.Finished
	}
	return r.Created
}

// TestJetStreamRetriesADeadLetter: a job that used up its attempts is
// listed failed with its errors; Retry queues it again under its id with
// fresh attempts and it runs once more, to success; a Retry repeated at
// once answers the job as it is and the job runs once; a Retry of a
// succeeded job is an *EndedError, of an unknown one ErrNotFound; a
// canceled job runs again too.
func TestJetStreamRetriesADeadLetter(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	closeRunner(t, r)
	consume(t, r)
	dead := submit(t, r, jobstest.Attempts(jobstest.Flaky(jobstest.FlakyArgs{FailRuns: 2}), 2))
	rec := eventually(t, r, dead.ID, jobs.Failed)
	if rec.Attempts != 2 || len(rec.Errors) != 2 || rec.Spec == nil || rec.Spec.Kind != "flaky" {
		t.Fatalf("a dead letter: %+v", rec)
	}
	again, err := r.Retry(context.Background(), dead.ID)
	// Queued again, or already running or even ended by its run (a flaky
	// job is quick): in each case retried once.
	if err != nil || again.State != jobs.Queued && again.State != jobs.Running && again.State != jobs.Succeeded || again.Retries != 1 {
		t.Fatalf("Retry: %+v, %v", again, err)
	}
	// Repeated, it answers the job as it is: live, or already ended by the
	// first Retry's run, as a succeeded job's Retry is answered.
	twice, err := r.Retry(context.Background(), dead.ID)
	var over *jobs.EndedError
	if errors.As(err, &over) && over.State == jobs.Succeeded && twice.Retries == 1 {
		err = nil
	}
	if err != nil || twice.State.Terminal() && twice.State != jobs.Succeeded {
		t.Fatalf("a Retry repeated: %+v, %v", twice, err)
	}
	rec = eventually(t, r, dead.ID, jobs.Succeeded)
	if rec.Retries != 1 || rec.Attempts != 1 || len(rec.Errors) != 2 || rec.Spec != nil {
		t.Fatalf("a dead letter retried: %+v", rec)
	}
	if n := jobstest.Runs(dead.ID); n != 3 {
		t.Fatalf("runs: %d, want 3 (two failed, one after the retry)", n)
	}
	if n := counter(t, r, "crew_jobs_rerun_total", "state", "failed"); n != 1 {
		t.Fatalf("crew_jobs_rerun_total{state=failed} %v, want 1", n)
	}
	if n := counter(t, r, "crew_job_backoffs_total", "why", "failed"); n != 1 {
		t.Fatalf("crew_job_backoffs_total{why=failed} %v, want 1 (the first of two attempts)", n)
	}
	if _, err := r.Retry(context.Background(), dead.ID); !errors.As(err, &over) || over.State != jobs.Succeeded {
		t.Fatalf("Retry of a succeeded job: %v", err)
	}
	if _, err := r.Retry(context.Background(), "0123456789abcdef"); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("Retry of an unknown job: %v", err)
	}

	later := jobstest.Flaky(jobstest.FlakyArgs{})
	later.RunAt = time.Now().Add(time.Hour)
	sched := submit(t, r, later)
	if _, _, err := r.Cancel(context.Background(), sched.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Retry(context.Background(), sched.ID); err != nil {
		t.Fatal(err)
	}
	if rec := eventually(t, r, sched.ID, jobs.Succeeded); rec.Retries != 1 {
		t.Fatalf("a canceled job retried: %+v", rec)
	}
}

// TestJetStreamRetryDeliveredFirst: the message of a Retry delivered
// before the Retry wrote the record queued runs the job (it names the
// revision it retries), and a stale one (a record written since) does
// not (redelivered: its record is read before it would run).
func TestJetStreamRetryDeliveredFirst(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	closeRunner(t, r)
	dead := submit(t, r, jobstest.Attempts(jobstest.Flaky(jobstest.FlakyArgs{FailRuns: 1}), 1))
	if err := r.HandleFirstDelivery(context.Background(), "jobs."+dead.ID, mustSpec(t, r, dead.ID)); err != nil {
		t.Fatal(err)
	}
	rec := eventually(t, r, dead.ID, jobs.Failed)
	rev, err := r.Revision(context.Background(), dead.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.HandleRetryDelivery(context.Background(), dead.ID, rev+100, rec.Spec, false); err != nil {
		t.Fatal(err)
	}
	if got := eventually(t, r, dead.ID, jobs.Failed); jobstest.Runs(dead.ID) != 1 || got.Attempts != 1 {
		t.Fatalf("a stale retry's message ran the job: %+v, runs %d", got, jobstest.Runs(dead.ID))
	}
	if err := r.HandleRetryDelivery(context.Background(), dead.ID, rev, rec.Spec, true); err != nil {
		t.Fatal(err)
	}
	if got := eventually(t, r, dead.ID, jobs.Succeeded); jobstest.Runs(dead.ID) != 2 || got.Attempts != 1 || got.Retries != 1 {
		t.Fatalf("a retry's message delivered first: %+v, runs %d", got, jobstest.Runs(dead.ID))
	}
}

// mustSpec reads a waiting job's spec from its message.
func mustSpec(t *testing.T, r *jsjobs.Runner, id string) []byte {
	t.Helper()
	rec, err := r.Get(context.Background(), id)
	if err != nil || rec.Spec == nil {
		t.Fatalf("job %s: %+v, %v", id, rec, err)
	}
	b, err := json.Marshal(rec.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// counter is the value of r's counter name with the label key=value.
func counter(t *testing.T, r *jsjobs.Runner, name, key, value string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(r.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == key && l.GetValue() == value {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// TestJetStreamRetryOnAStaleReplica: a Retry's message delivered to a
// replica whose copy of the record is still the ended one, after the Retry
// wrote it queued: the run's write is refused (the record changed), and
// what it changed to is read from the leader, not from the stale copy, so
// the job runs rather than being acked as ended (and left queued for
// ever). With the leader behind too, the run reads it again until it has
// moved past the ended record: a leader still reads a record as it was
// while a write of it is on its way through its group (refusing other
// writes meanwhile), as the compose cluster met.
func TestJetStreamRetryOnAStaleReplica(t *testing.T) {
	for _, leaderBehind := range []int{0, 3} {
		t.Run(fmt.Sprintf("leader behind for %d reads", leaderBehind), func(t *testing.T) {
			c := newCluster(t)
			front := c.runner(t, jsConfig())
			closeRunner(t, front)
			dead := submit(t, front, jobstest.Attempts(jobstest.Flaky(jobstest.FlakyArgs{FailRuns: 1}), 1))
			if err := front.HandleFirstDelivery(context.Background(), "jobs."+dead.ID, mustSpec(t, front, dead.ID)); err != nil {
				t.Fatal(err)
			}
			rec := eventually(t, front, dead.ID, jobs.Failed)
			rev, err := front.Revision(context.Background(), dead.ID)
			if err != nil {
				t.Fatal(err)
			}
			stale := c.runner(t, jsConfig())
			closeRunner(t, stale)
			if err := stale.StaleRecords(context.Background(), dead.ID); err != nil {
				t.Fatal(err)
			}
			if err := stale.LeaderBehind(context.Background(), dead.ID, leaderBehind); err != nil {
				t.Fatal(err)
			}
			if _, err := front.Retry(context.Background(), dead.ID); err != nil {
				t.Fatal(err)
			}
			if err := stale.HandleRetryDelivery(context.Background(), dead.ID, rev, rec.Spec, true); err != nil {
				t.Fatal(err)
			}
			if got := eventually(t, front, dead.ID, jobs.Succeeded); got.Retries != 1 || jobstest.Runs(dead.ID) != 2 {
				t.Fatalf("a retry delivered to a stale replica: %+v, runs %d", got, jobstest.Runs(dead.ID))
			}
		})
	}
}

// TestJetStreamConcurrentRetries: Retries of one dead letter asked at once
// run it once and count once in crew_jobs_rerun_total, whichever of them
// published first or wrote the record first.
func TestJetStreamConcurrentRetries(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	closeRunner(t, r)
	consume(t, r)
	const letters, callers = 4, 6
	var ids []string
	for range letters {
		dead := submit(t, r, jobstest.Attempts(jobstest.Flaky(jobstest.FlakyArgs{FailRuns: 1}), 1))
		eventually(t, r, dead.ID, jobs.Failed)
		ids = append(ids, dead.ID)
	}
	for _, id := range ids {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range callers {
			wg.Go(func() {
				<-start
				_, err := r.Retry(context.Background(), id)
				var over *jobs.EndedError
				if err != nil && !(errors.As(err, &over) && over.State == jobs.Succeeded) {
					t.Errorf("Retry of %s: %v", id, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if rec := eventually(t, r, id, jobs.Succeeded); rec.Retries != 1 {
			t.Fatalf("a dead letter retried by %d callers at once: %+v", callers, rec)
		}
		if n := jobstest.Runs(id); n != 2 {
			t.Fatalf("runs of %s: %d, want 2 (one failed, one after the retries)", id, n)
		}
	}
	if n := counter(t, r, "crew_jobs_rerun_total", "state", "failed"); n != letters {
		t.Fatalf("crew_jobs_rerun_total{state=failed} %v, want %d (one a dead letter, however many asked)", n, letters)
	}
}
