package jsjobs_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jsjobs"
)

// TestReplicasSayWhatTheyRun: two processes serving a queue announce
// themselves; either one's Replicas names both, each with the jobs it
// runs; a process closed leaves at once, one killed (silent) when its
// last announcement expires; a bad name is refused at New.
func TestReplicasSayWhatTheyRun(t *testing.T) {
	jsjobs.AnnounceEvery(t, 100*time.Millisecond)
	c := newCluster(t)
	var h holding
	ctx := context.Background()
	runners := map[string]*jsjobs.Runner{}
	for _, name := range []string{"a", "b", "c"} {
		cfg := jsConfig()
		cfg.Kinds, cfg.Replica = h.kinds(), name
		r := c.runner(t, cfg)
		closeRunner(t, r)
		runners[name] = r
	}
	// Room for every job on either: a Source may hold a job it has no
	// worker for yet (natsjs, pull.go), and a job held a minute would
	// never reach the other.
	serve(t, runners["a"], "q", 4)
	serve(t, runners["b"], "q", 4)
	// c submits and reads, serving nothing: it is no replica.
	var ids []string
	for range 4 {
		// Held for the whole test, its timeout included (the default is a
		// second): a run that ended and ran again would show on both
		// replicas at once.
		spec := hold(time.Minute, "q")
		spec.Timeout = jobs.Duration(time.Minute)
		ids = append(ids, submit(t, runners["c"], spec).ID)
	}
	var reps []jobs.Replica
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if reps, err = runners["c"].Replicas(ctx); err != nil {
			t.Fatal(err)
		}
		if len(reps) == 2 && reps[0].Running+reps[1].Running == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replicas after 10 s: %+v", reps)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var named []string
	for _, rep := range reps {
		if len(rep.Jobs) != rep.Running || rep.Started.IsZero() || time.Since(rep.Seen) > 5*time.Second {
			t.Errorf("replica %+v: want the jobs it runs named, seen just now", rep)
		}
		for _, j := range rep.Jobs {
			if j.Kind != "hold" || j.Queue != "q" || j.Since.IsZero() {
				t.Errorf("running job %+v", j)
			}
			named = append(named, j.ID)
		}
	}
	if reps[0].Name != "a" || reps[1].Name != "b" {
		t.Errorf("replicas named %q and %q, want a and b", reps[0].Name, reps[1].Name)
	}
	slices.Sort(named)
	slices.Sort(ids)
	if !slices.Equal(named, ids) {
		t.Errorf("the replicas run %v, want the jobs submitted %v", named, ids)
	}

	gone := func(name string, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			reps, err := runners["c"].Replicas(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(reps, func(r jobs.Replica) bool { return r.Name == name }) {
				return time.Since(start)
			}
			if time.Since(start) > within {
				t.Fatalf("replica %s still listed after %v: %+v", name, within, reps)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Closed: gone at the next read of the index, well before it would
	// have expired (300 ms).
	for _, id := range ids {
		if _, _, err := runners["c"].Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := runners["a"].Close(); err != nil {
		t.Fatal(err)
	}
	if d := gone("a", 250*time.Millisecond); d > 250*time.Millisecond {
		t.Errorf("a closed replica left after %v", d)
	}
	// Killed: gone once its last announcement is 3 intervals old.
	runners["b"].Vanish()
	if d := gone("b", 2*time.Second); d < 100*time.Millisecond {
		t.Errorf("a silent replica left after %v, before its announcement expired", d)
	}

	cfg := jsConfig()
	cfg.Replica = "pod/1"
	if _, err := jsjobs.New(ctx, c.js, cfg); err == nil {
		t.Error(`New took Replica "pod/1"`)
	}
}
