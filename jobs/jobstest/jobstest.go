package jobstest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

// SleepArgs sleeps Duration, or fails with Fail after it when Fail is set.
type SleepArgs struct {
	Duration jobs.Duration `json:"duration"`
	Fail     string        `json:"fail,omitempty"`
}

func (SleepArgs) Kind() string { return "sleep" }

func (a SleepArgs) Validate() error {
	if a.Duration <= 0 {
		return errors.New(`"duration" is required: a duration such as "50ms"`)
	}
	return nil
}

// FactorialArgs computes N!.
type FactorialArgs struct {
	N int `json:"n"`
}

func (FactorialArgs) Kind() string { return "factorial" }

func (a FactorialArgs) Validate() error {
	if a.N < 0 || a.N > 20 {
		return errors.New(`"n": want 0 to 20`)
	}
	return nil
}

// FlakyArgs fails its first Fails runs (permanently if Permanent), or
// snoozes its first run for Snooze, then succeeds with its attempt.
// FailRuns fails its first runs in this process, whatever their attempt
// (a job retried by hand counts its attempts afresh).
type FlakyArgs struct {
	Fails     int           `json:"fails,omitempty"`
	FailRuns  int           `json:"fail_runs,omitempty"`
	Permanent bool          `json:"permanent,omitempty"`
	Snooze    jobs.Duration `json:"snooze,omitzero"`
}

func (FlakyArgs) Kind() string { return "flaky" }

// Flaky is the spec of a flaky job.
func Flaky(a FlakyArgs) jobs.Spec { return spec(a) }

// snoozed are the jobs whose first run snoozed.
var snoozed sync.Map

// runs counts each flaky job's runs in this process, by id.
var runs sync.Map

// Runs is how many times the flaky job id has run in this process.
func Runs(id string) int {
	n, _ := runs.Load(id)
	c, _ := n.(*atomic.Int64)
	if c == nil {
		return 0
	}
	return int(c.Load())
}

// Kinds is the set of the kinds the tests submit: sleep, factorial,
// flaky, progress, sum, tally and workflow.
func Kinds() *jobs.Kinds {
	var ks jobs.Kinds
	if err := jobs.Register(&ks, func(ctx context.Context, a SleepArgs) (any, error) {
		t := time.NewTimer(time.Duration(a.Duration))
		defer t.Stop()
		select {
		case <-t.C:
			if a.Fail != "" {
				return nil, errors.New(a.Fail)
			}
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}); err != nil {
		panic(err)
	}
	if err := jobs.Register(&ks, func(ctx context.Context, a FlakyArgs) (int, error) {
		info := jobs.InfoOf(ctx)
		n, _ := runs.LoadOrStore(info.ID, new(atomic.Int64))
		if run := n.(*atomic.Int64).Add(1); run <= int64(a.FailRuns) {
			return 0, fmt.Errorf("flaky: run %d fails", run)
		}
		if _, again := snoozed.LoadOrStore(info.ID, true); a.Snooze > 0 && !again {
			return 0, jobs.Snooze(time.Duration(a.Snooze))
		}
		if info.Attempt <= a.Fails {
			err := fmt.Errorf("flaky: attempt %d fails", info.Attempt)
			if a.Permanent {
				err = jobs.Permanent(err)
			}
			return 0, err
		}
		return info.Attempt, nil
	}); err != nil {
		panic(err)
	}
	if err := jobs.Register(&ks, func(_ context.Context, a FactorialArgs) (uint64, error) {
		f := uint64(1)
		for i := 2; i <= a.N; i++ {
			f *= uint64(i)
		}
		return f, nil
	}); err != nil {
		panic(err)
	}
	if err := jobs.Register(&ks, runProgress); err != nil {
		panic(err)
	}
	if err := jobs.Register(&ks, runSum); err != nil {
		panic(err)
	}
	if err := jobs.Register(&ks, runTally); err != nil {
		panic(err)
	}
	if err := jobs.RegisterWorkflow(&ks); err != nil {
		panic(err)
	}
	return &ks
}

// Factorial is the spec of a factorial job.
func Factorial(n int) jobs.Spec { return spec(FactorialArgs{N: n}) }

// Sleep is the spec of a sleep job.
func Sleep(d time.Duration) jobs.Spec { return spec(SleepArgs{Duration: jobs.Duration(d)}) }

// Attempts is spec with its max attempts.
func Attempts(spec jobs.Spec, n int) jobs.Spec {
	spec.MaxAttempts = n
	return spec
}

// Timed is spec with its timeout.
func Timed(spec jobs.Spec, timeout time.Duration) jobs.Spec {
	spec.Timeout = jobs.Duration(timeout)
	return spec
}

func spec(a jobs.Args) jobs.Spec {
	s, err := jobs.NewSpec(a)
	if err != nil {
		panic(err)
	}
	return s
}

// submitOnceRace posts spec under key n times at once, spread over the
// runners, and returns the ids answered and how many were not replays.
func submitOnceRace(t *testing.T, runners []jobs.KeyedRunner, key string, spec jobs.Spec, n int) (map[string]int, int) {
	t.Helper()
	var (
		mu    sync.Mutex
		ids   = map[string]int{}
		first int
		wg    sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			rec, replayed, err := runners[i%len(runners)].SubmitOnce(context.Background(), spec, key)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ids[rec.ID]++
			if !replayed {
				first++
			}
		})
	}
	wg.Wait()
	return ids, first
}

// CheckKeyed holds runners (one, or several sharing a store: replicas) to
// the idempotency-key contract of jobs.KeyedRunner: 16 posts at once under
// one key make one job; the same request spelled otherwise is a replay;
// another request under the key is ErrKeyReused; another key, another
// job; a malformed key is an *InvalidError.
func CheckKeyed(t *testing.T, runners ...jobs.KeyedRunner) {
	t.Helper()
	r := runners[0]
	ids, first := submitOnceRace(t, runners, "8e03978e-40d5-43e8-bc93-6894a57f9324", Factorial(10), 16)
	if len(ids) != 1 || first != 1 {
		t.Fatalf("16 posts under one key: ids %v, %d not replays; want one job", ids, first)
	}
	var id string
	for id = range ids {
	}
	// The same request spelled otherwise (the default timeout given) is
	// the same request; another is refused.
	rec, replayed, err := r.SubmitOnce(context.Background(), jobs.Spec{Kind: "factorial", Args: []byte(` { "n" : 10 } `), Timeout: jobs.Duration(time.Second)}, "8e03978e-40d5-43e8-bc93-6894a57f9324")
	if err != nil || rec.ID != id || !replayed {
		t.Fatalf("the same request again: %+v %v %v", rec, replayed, err)
	}
	if _, _, err := r.SubmitOnce(context.Background(), Factorial(11), "8e03978e-40d5-43e8-bc93-6894a57f9324"); !errors.Is(err, jobs.ErrKeyReused) || !strings.Contains(err.Error(), id) {
		t.Fatalf("another request under the key: %v", err)
	}
	// Another key, another job.
	other, replayed, err := r.SubmitOnce(context.Background(), Factorial(10), "another")
	if err != nil || other.ID == id || replayed {
		t.Fatalf("another key: %+v %v %v", other, replayed, err)
	}
	for _, key := range []string{"", strings.Repeat("k", 256), "tab\there", "é"} {
		var invalid *jobs.InvalidError
		if _, _, err := r.SubmitOnce(context.Background(), Factorial(1), key); !errors.As(err, &invalid) {
			t.Fatalf("key %.20q: %v", key, err)
		}
	}
	// A context already ended refuses the request, and makes no job: the
	// key is free for the next request.
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := r.SubmitOnce(ended, Factorial(12), "ended"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a keyed submit with its context cancelled: %v", err)
	}
	if _, replayed, err := r.SubmitOnce(context.Background(), Factorial(13), "ended"); err != nil || replayed {
		t.Fatalf("the key of a refused request, used again: replayed %v, %v", replayed, err)
	}
}

// CheckDelete holds a runner whose jobs run to the contract of
// jobs.Deleter: an ended job deleted is gone (Get and a second Delete
// answer ErrNotFound) and Delete returns it as it was; a job not ended is
// a *LiveError naming its state, and stays; canceled, it can be deleted;
// an id that is none is ErrNotFound.
func CheckDelete(t *testing.T, d jobs.Deleter) {
	t.Helper()
	ctx := context.Background()
	done, err := d.Submit(ctx, Factorial(5))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, d, done.ID, func(st jobs.State) bool { return st == jobs.Succeeded })
	rec, err := d.Delete(ctx, done.ID)
	if err != nil || rec.ID != done.ID || rec.State != jobs.Succeeded {
		t.Fatalf("Delete of a succeeded job: %+v, %v", rec, err)
	}
	if _, err := d.Get(ctx, done.ID); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	if _, err := d.Delete(ctx, done.ID); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("a second Delete: %v, want ErrNotFound", err)
	}
	live, err := d.Submit(ctx, Sleep(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Delete(ctx, live.ID)
	var le *jobs.LiveError
	if !errors.As(err, &le) || le.State.Terminal() {
		t.Fatalf("Delete of a job not ended: %v, want a *LiveError", err)
	}
	if got, err := d.Get(ctx, live.ID); err != nil || got.State.Terminal() {
		t.Fatalf("a job refused a delete: %+v, %v; want it as it was", got, err)
	}
	c, ok := d.(jobs.Canceler)
	if !ok {
		t.Fatal("a Deleter that does not cancel")
	}
	if _, _, err := c.Cancel(ctx, live.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, d, live.ID, func(st jobs.State) bool { return st == jobs.Canceled })
	if rec, err := d.Delete(ctx, live.ID); err != nil || rec.State != jobs.Canceled {
		t.Fatalf("Delete of a canceled job: %+v, %v", rec, err)
	}
	for _, id := range []string{"", "nope", "0123456789abcdef"} {
		if _, err := d.Delete(ctx, id); !errors.Is(err, jobs.ErrNotFound) {
			t.Errorf("Delete(%q): %v, want ErrNotFound", id, err)
		}
	}
}

// waitFor polls job id until its state is ok, for 10 s at most.
func waitFor(t *testing.T, r jobs.Runner, id string, ok func(jobs.State) bool) {
	t.Helper()
	var rec jobs.Record
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if rec, err = r.Get(context.Background(), id); err == nil && ok(rec.State) {
			return
		}
	}
	t.Fatalf("job %s: %+v, %v", id, rec, err)
}
