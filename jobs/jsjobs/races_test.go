package jsjobs_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jsjobs"
)

// GateArgs fails its first run (in this process), then sleeps Sleep,
// counting its runs and the most at once.
type GateArgs struct {
	Sleep jobs.Duration `json:"sleep"`
	Fail  bool          `json:"fail,omitempty"`
}

func (GateArgs) Kind() string { return "gate" }

type gateCount struct {
	runs, now, most atomic.Int64
}

var gates sync.Map

func gateOf(id string) *gateCount {
	g, _ := gates.LoadOrStore(id, new(gateCount))
	return g.(*gateCount)
}

func gateKinds() *jobs.Kinds {
	var ks jobs.Kinds
	if err := jobs.Register(&ks, func(ctx context.Context, a GateArgs) (int, error) {
		g := gateOf(jobs.InfoOf(ctx).ID)
		n := g.runs.Add(1)
		if a.Fail && n == 1 {
			return 0, errFirst
		}
		cur := g.now.Add(1)
		defer g.now.Add(-1)
		for {
			m := g.most.Load()
			if cur <= m || g.most.CompareAndSwap(m, cur) {
				break
			}
		}
		select {
		case <-time.After(time.Duration(a.Sleep)):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		return int(n), nil
	}); err != nil {
		panic(err)
	}
	return &ks
}

type errString string

func (e errString) Error() string { return string(e) }

const errFirst = errString("gate: first run fails")

func gateSpec(t *testing.T, a GateArgs, timeout time.Duration) jobs.Spec {
	t.Helper()
	s, err := jobs.NewSpec(a)
	if err != nil {
		t.Fatal(err)
	}
	s.Timeout = jobs.Duration(timeout)
	return s
}

// TestRetryAfterCancelWhileRetryingRunsOnce: a job retrying (its
// message handed back with a backoff) is canceled, then Retry'd. The
// Retry's message runs the job; the old message, handed back with its
// backoff, must not run it a second time.
func TestRetryAfterCancelWhileRetryingRunsOnce(t *testing.T) {
	c := newCluster(t)
	cfg := jsConfig()
	cfg.Kinds = gateKinds()
	cfg.Backoff = func(int) time.Duration { return 700 * time.Millisecond }
	r := c.runner(t, cfg)
	_ = jsjobs.Config{}
	consume(t, r)
	ctx := context.Background()
	rec := submit(t, r, gateSpec(t, GateArgs{Sleep: jobs.Duration(2 * time.Second), Fail: true}, 10*time.Second))
	eventually(t, r, rec.ID, jobs.Retrying)
	if _, was, err := r.Cancel(ctx, rec.ID); err != nil || was != jobs.Retrying {
		t.Fatalf("cancel: was %s, %v", was, err)
	}
	if _, err := r.Retry(ctx, rec.ID); err != nil {
		t.Fatalf("retry: %v", err)
	}
	got := eventually(t, r, rec.ID, jobs.Succeeded)
	time.Sleep(500 * time.Millisecond)
	g := gateOf(rec.ID)
	if g.runs.Load() != 2 || g.most.Load() > 1 {
		t.Fatalf("runs %d (want 2: the failed one and the retried one), at most %d at once; record %+v", g.runs.Load(), g.most.Load(), got)
	}
}

// StubbornArgs panics, or sleeps Sleep ignoring its context and succeeds.
type StubbornArgs struct {
	Sleep jobs.Duration `json:"sleep,omitzero"`
	Panic bool          `json:"panic,omitempty"`
}

func (StubbornArgs) Kind() string { return "stubborn" }

func stubbornKinds() *jobs.Kinds {
	ks := gateKinds()
	if err := jobs.Register(ks, func(ctx context.Context, a StubbornArgs) (int, error) {
		gateOf(jobs.InfoOf(ctx).ID).runs.Add(1)
		if a.Panic {
			panic("stubborn: boom")
		}
		time.Sleep(time.Duration(a.Sleep))
		return 1, nil
	}); err != nil {
		panic(err)
	}
	return ks
}

func stubbornSpec(t *testing.T, a StubbornArgs, timeout time.Duration, attempts int) jobs.Spec {
	t.Helper()
	s, err := jobs.NewSpec(a)
	if err != nil {
		t.Fatal(err)
	}
	s.Timeout, s.MaxAttempts = jobs.Duration(timeout), attempts
	return s
}

// TestPanicIsAFailedAttempt: a kind that panics fails its attempts
// as any error does: after max attempts (2) the job is failed, its
// errors saying it panicked.
func TestPanicIsAFailedAttempt(t *testing.T) {
	c := newCluster(t)
	cfg := jsConfig()
	cfg.Kinds = stubbornKinds()
	r := c.runner(t, cfg)
	consume(t, r)
	rec := submit(t, r, stubbornSpec(t, StubbornArgs{Panic: true}, time.Second, 2))
	time.Sleep(3 * time.Second)
	got, err := r.Get(context.Background(), rec.ID)
	t.Logf("after 3 s: %+v %v; runs %d", got, err, gateOf(rec.ID).runs.Load())
	got = eventually(t, r, rec.ID, jobs.Failed)
	if len(got.Errors) == 0 || got.Attempts != 2 || gateOf(rec.ID).runs.Load() != 2 {
		t.Fatalf("a panicking job: %+v, runs %d; want 2 runs, its errors recorded", got, gateOf(rec.ID).runs.Load())
	}
}

// TestTimeoutIgnoredIsTimedOut: a run that ignores its context and
// returns success well after its timeout is timed out (as memjobs says),
// not succeeded.
func TestTimeoutIgnoredIsTimedOut(t *testing.T) {
	c := newCluster(t)
	cfg := jsConfig()
	cfg.Kinds = stubbornKinds()
	r := c.runner(t, cfg)
	consume(t, r)
	rec := submit(t, r, stubbornSpec(t, StubbornArgs{Sleep: jobs.Duration(1500 * time.Millisecond)}, 200*time.Millisecond, 1))
	time.Sleep(700 * time.Millisecond)
	mid, _ := r.Get(context.Background(), rec.ID)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got, err := r.Get(context.Background(), rec.ID)
		if err == nil && got.State.Terminal() {
			if got.State != jobs.TimedOut {
				t.Fatalf("a run past its 200ms timeout: %s (at 700 ms it read %s), want timed_out", got.State, mid.State)
			}
			return
		}
	}
	t.Fatal("no end")
}

// TestCanceledRetriedJobNeverRuns: a dead letter Retry'd while no
// runner pulls is queued; canceled then (answered queued), it must never
// run when a runner pulls again. Its Retry's message is not deleted (the
// record exists, so Cancel finds no message sequence), and its first
// delivery starts the run before it reads the record.
func TestCanceledRetriedJobNeverRuns(t *testing.T) {
	c := newCluster(t)
	cfg := jsConfig()
	cfg.Kinds = gateKinds()
	r := c.runner(t, cfg)
	ctx := context.Background()
	src := consume(t, r)
	spec := gateSpec(t, GateArgs{Sleep: jobs.Duration(50 * time.Millisecond), Fail: true}, 10*time.Second)
	spec.MaxAttempts = 1
	rec := submit(t, r, spec)
	eventually(t, r, rec.ID, jobs.Failed)
	stopSource(t, src)
	if again, err := r.Retry(ctx, rec.ID); err != nil || again.State != jobs.Queued {
		t.Fatalf("retry: %+v %v", again, err)
	}
	if _, was, err := r.Cancel(ctx, rec.ID); err != nil || was != jobs.Queued {
		t.Fatalf("cancel: was %s, %v", was, err)
	}
	time.Sleep(200 * time.Millisecond)
	consume(t, r)
	time.Sleep(time.Second)
	if n := gateOf(rec.ID).runs.Load(); n != 1 {
		t.Fatalf("runs %d, want 1 (the failed run): the job canceled while queued ran again", n)
	}
}

type BigArgs struct {
	Pad string `json:"pad"`
}

func (BigArgs) Kind() string { return "big" }

// TestListAfterClose: a runner closed before any List answers List
// and Counts with an error (or an empty page), not a panic; a second
// Close is no error.
func TestListAfterClose(t *testing.T) {
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("List after Close panicked: %v", p)
			}
		}()
		_, err := r.List(context.Background(), jobs.Query{})
		t.Logf("List after Close: %v", err)
	}()
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("Counts after Close panicked: %v", p)
			}
		}()
		_, err := r.Counts(context.Background())
		t.Logf("Counts after Close: %v", err)
	}()
}
