package jsjobs_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/jsjobs"
)

// startTimes is a kind whose jobs note when they start.
type startTimes struct {
	mu sync.Mutex
	at []time.Time
}

type tickArgs struct{}

func (tickArgs) Kind() string { return "tick" }

func (s *startTimes) kinds() *jobs.Kinds {
	ks := jobstest.Kinds()
	if err := jobs.Register(ks, func(ctx context.Context, _ tickArgs) (int, error) {
		s.mu.Lock()
		s.at = append(s.at, time.Now())
		s.mu.Unlock()
		return 0, nil
	}); err != nil {
		panic(err)
	}
	return ks
}

// most is the most starts in any window of d.
func (s *startTimes) most(d time.Duration) (int, []time.Time) {
	s.mu.Lock()
	at := slices.Clone(s.at)
	s.mu.Unlock()
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	most, j := 0, 0
	for i := range at {
		for at[i].Sub(at[j]) >= d {
			j++
		}
		most = max(most, i-j+1)
	}
	return most, at
}

// TestQueueRateHoldsAcrossProcesses: a queue limited to 50 jobs a second,
// served by three runners of four workers each: 2,000 jobs take at least
// 38 s, and no second starts more than 55 of them; each runs once.
func TestQueueRateHoldsAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("40 s")
	}
	c := newCluster(t)
	var s startTimes
	cfg := jsConfig()
	cfg.Kinds = s.kinds()
	runners := []*jsjobs.Runner{c.runner(t, cfg), c.runner(t, cfg), c.runner(t, cfg)}
	for _, r := range runners {
		closeRunner(t, r)
	}
	ctx := context.Background()
	if err := runners[0].SetQueue(ctx, jobs.Queue{Name: "partner", Rate: 50}); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	spec, err := jobs.NewSpec(tickArgs{})
	if err != nil {
		t.Fatal(err)
	}
	spec.Queue = "partner"
	for range n {
		if _, err := runners[0].Submit(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for _, r := range runners {
		serve(t, r, "partner", 4)
	}
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		sum := 0
		for _, r := range runners {
			sum += int(r.Outcomes().Succeeded)
		}
		if sum == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs succeeded after 90 s", sum, n)
		}
	}
	took := time.Since(start)
	most, at := s.most(time.Second)
	t.Logf("%d jobs at 50/s on 3 runners: %v from the first start to the last (%v from serving), at most %d started in any second", n, at[len(at)-1].Sub(at[0]), took, most)
	if len(at) != n {
		t.Fatalf("%d starts of %d jobs", len(at), n)
	}
	if took < 38*time.Second {
		t.Fatalf("2,000 jobs at 50/s took %v: the rate was exceeded", took)
	}
	if most > 55 {
		t.Fatalf("%d jobs started in one second: the rate is 50", most)
	}
	qs, err := runners[2].Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(qs, func(q jobs.QueueInfo) bool { return q.Name == "partner" }); i < 0 || qs[i].Rate != 50 || time.Duration(qs[i].Per) != time.Second {
		t.Fatalf("queues %+v: want partner at 50 a second", qs)
	}
}

// TestQueueRateSetWhileServed: a rate set on a queue already served holds
// within the time a process takes to read it again, and lifted, the rest
// run at once; a bad rate is refused naming its field.
func TestQueueRateSetWhileServed(t *testing.T) {
	c := newCluster(t)
	var s startTimes
	cfg := jsConfig()
	cfg.Kinds = s.kinds()
	r := c.runner(t, cfg)
	closeRunner(t, r)
	ctx := context.Background()
	serve(t, r, "partner", 4)
	if err := r.SetQueue(ctx, jobs.Queue{Name: "partner", Rate: 5, Per: jobs.Duration(time.Second)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond) // the runner reads the rate every 2 s
	spec, err := jobs.NewSpec(tickArgs{})
	if err != nil {
		t.Fatal(err)
	}
	spec.Queue = "partner"
	for range 20 {
		submit(t, r, spec)
	}
	time.Sleep(2 * time.Second)
	if got := r.Outcomes().Succeeded; got < 5 || got > 12 {
		t.Fatalf("%d of 20 jobs ran in 2 s at 5 a second", got)
	}
	if err := r.SetQueue(ctx, jobs.Queue{Name: "partner"}); err != nil {
		t.Fatal(err)
	}
	outcomesReach(t, r, func(o jsjobs.Outcomes) bool { return o.Succeeded == 20 })
	for _, q := range []jobs.Queue{
		{Name: "partner", Rate: -1},
		{Name: "partner", Rate: 5, Per: jobs.Duration(time.Microsecond)},
		{Name: "partner", Per: jobs.Duration(time.Second)},
		{Name: jobs.DefaultQueue, Rate: 5},
	} {
		var inv *jobs.InvalidError
		if err := r.SetQueue(ctx, q); !errors.As(err, &inv) {
			t.Errorf("%+v: %v, want an *InvalidError", q, err)
		}
	}
}
