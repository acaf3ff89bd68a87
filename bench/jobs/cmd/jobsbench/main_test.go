package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain runs the test binary as a worker process when a test starts it
// as one (os.Executable is the test binary under go test).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		if err := workerMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func TestTrackerCountsEndsRunsAndLatency(t *testing.T) {
	base := time.Unix(1000, 0)
	tr := newTracker(4)
	for n := range 4 {
		tr.enqueue(n, base.Add(time.Duration(n)*time.Millisecond))
	}
	tr.start(0)
	tr.end(0, base.Add(10*time.Millisecond))
	tr.start(1)
	tr.start(1) // started again after a kill
	tr.end(1, base.Add(30*time.Millisecond))
	tr.start(2)
	tr.end(2, base.Add(20*time.Millisecond))
	tr.end(2, base.Add(50*time.Millisecond)) // ran to the end twice
	tr.start(3)                              // never ends
	select {
	case <-tr.AllDone():
		t.Fatal("AllDone closed with job 3 not ended")
	default:
	}
	s := tr.summary()
	if s.Ended != 3 || s.Twice != 1 || s.Rerun != 1 {
		t.Errorf("ended %d twice %d rerun %d, want 3 1 1", s.Ended, s.Twice, s.Rerun)
	}
	if !s.First.Equal(base) || !s.FirstEnd.Equal(base.Add(10*time.Millisecond)) || !s.Last.Equal(base.Add(30*time.Millisecond)) {
		t.Errorf("first %v first end %v last %v", s.First, s.FirstEnd, s.Last)
	}
	// latencies: 10, 29, 18 ms: the first end counts, not the second.
	if s.P50 != 18*time.Millisecond || s.P99 != 29*time.Millisecond {
		t.Errorf("p50 %v p99 %v, want 18ms 29ms", s.P50, s.P99)
	}
	// Before 25 ms jobs 0 and 2 had ended: 1 and 3 remained.
	if got := s.RemainingAt(base.Add(25 * time.Millisecond)); got != 2 {
		t.Errorf("remaining at 25ms: %d, want 2", got)
	}
	tr.end(3, base.Add(60*time.Millisecond))
	<-tr.AllDone()
}

func TestPercentileIsNearestRank(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 50}, {0.99, 99}, {1, 100}, {0.001, 1}} {
		if got := percentile(d, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p*100, got, c.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("p50 of nothing = %v", got)
	}
}

func TestReadEventsFeedsTheTracker(t *testing.T) {
	tr := newTracker(2)
	ready := make(chan struct{})
	in := "R\nS 0 1000000000\nE 0 1002000000\nS 1 1000000000\nS 1 1100000000\nE 1 1300000000\n"
	if err := readEvents(strings.NewReader(in), tr, ready); err != nil {
		t.Fatal(err)
	}
	<-ready
	<-tr.AllDone()
	s := tr.summary()
	if s.Rerun != 1 || s.Twice != 0 || !s.Last.Equal(time.Unix(1, 300000000)) {
		t.Errorf("rerun %d twice %d last %v", s.Rerun, s.Twice, s.Last)
	}
	for _, bad := range []string{"X 1 2\n", "S one 2\n", "E 1\n", "S 1 two\n"} {
		if err := readEvents(strings.NewReader(bad), newTracker(2), make(chan struct{})); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestEventsAreWholeLines(t *testing.T) {
	var b strings.Builder
	ev := &events{w: &b}
	var wg sync.WaitGroup
	for n := range 50 {
		wg.Go(func() { ev.line('S', n); ev.line('E', n) })
	}
	wg.Wait()
	tr := newTracker(50)
	if err := readEvents(strings.NewReader(b.String()), tr, make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	<-tr.AllDone()
}

func TestQuickSetsCountsUnlessGiven(t *testing.T) {
	for _, c := range []struct {
		args []string
		jobs int
		kill bool
	}{
		{nil, 20000, true},
		{[]string{"-rounds", "1"}, 20000, true},
		{[]string{"-quick"}, 2000, false},
		{[]string{"-quick", "-jobs", "500", "-kill"}, 500, true},
	} {
		o, err := parseFlags(c.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if o.Jobs != c.jobs || o.Kill != c.kill {
			t.Errorf("%v: jobs %d kill %v, want %d %v", c.args, o.Jobs, o.Kill, c.jobs, c.kill)
		}
	}
	for _, bad := range [][]string{{"-rounds", "0"}, {"-only", "sidekiq"}, {"-jobs", "0"}, {"-workers", "0"}, {"-sleep", "0s"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// fakeSystem runs jobs in the test's process so that throughput and kill
// can be checked without stores: a job ends when it is enqueued, except
// jobs below inFlight, which are running at the kill. On Restart, jobs
// below rerun run again and end, jobs from rerun to inFlight are lost, and
// jobs from inFlight to inFlight+twice end a second time.
type fakeSystem struct {
	inFlight, rerun, twice int
	t                      *tracker
	restarted              bool
}

func (f *fakeSystem) Name() string     { return "fake" }
func (f *fakeSystem) Settings() string { return "in the test" }
func (f *fakeSystem) Start(_ context.Context, _ scenario, t *tracker) error {
	f.t = t
	return nil
}

func (f *fakeSystem) Enqueue(_ context.Context, n int) error {
	f.t.start(n)
	if n >= f.inFlight {
		f.t.end(n, time.Now())
	}
	return nil
}

func (f *fakeSystem) WaitAll(ctx context.Context) error {
	select {
	case <-f.t.AllDone():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeSystem) Restart(context.Context) (time.Time, time.Time, error) {
	killed := time.Now()
	restarted := time.Now()
	for n := range f.rerun {
		f.t.start(n)
		f.t.end(n, time.Now())
	}
	for n := f.inFlight; n < f.inFlight+f.twice; n++ {
		f.t.start(n)
		f.t.end(n, time.Now())
	}
	f.restarted = true
	return killed, restarted, nil
}

func (f *fakeSystem) Stop() error { return nil }

func TestThroughputCountsEveryJob(t *testing.T) {
	sc := scenario{Name: "t", Jobs: 500, Sleep: time.Millisecond, Producers: 4, Workers: 8}
	r := throughput(context.Background(), &fakeSystem{}, sc, time.Minute)
	if r.Err != nil || r.Ended != 500 || r.Twice != 0 || r.Rate() <= 0 {
		t.Fatalf("%+v", r)
	}
}

func TestKillCountsLostTwiceAndRemainingWork(t *testing.T) {
	f := &fakeSystem{inFlight: 10, rerun: 4, twice: 3}
	sc := scenario{Name: "k", Jobs: 100, Sleep: 200 * time.Millisecond, Producers: 4, Workers: 5}
	// The bound is what the kill test waits for the lost jobs: short here.
	r := kill(context.Background(), f, sc, 0, 50*time.Millisecond, true, io.Discard)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if !f.restarted {
		t.Fatal("not restarted")
	}
	if r.Lost != 6 || r.Twice != 3 || r.Rerun != 4+3 || r.Remaining != 10 || r.Work != 400*time.Millisecond {
		t.Errorf("lost %d twice %d rerun %d remaining %d work %v, want 6 3 7 10 400ms", r.Lost, r.Twice, r.Rerun, r.Remaining, r.Work)
	}
	if r.NotEnded != -1 {
		t.Errorf("not ended in the store %d, want -1 (unknown) for a system without StoreState", r.NotEnded)
	}
	r = kill(context.Background(), &fakeSystem{}, sc, 0, time.Minute, false, io.Discard)
	if r.Err != nil || r.Lost != 0 || r.Twice != -1 {
		t.Errorf("a system whose second ends are not seen: %+v", r)
	}
}

// TestMarkdownHasEveryRowAndTheRatioToAsynq: a row per system with the
// median round's rate, its range, and its ratio to asynq's median; a
// failed round makes the row an error.
func TestMarkdownHasEveryRowAndTheRatioToAsynq(t *testing.T) {
	rep := report{
		Date: time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC), CPUs: 2, Go: "go1.26",
		Options: options{Rounds: 3, Jobs: 20000, Sleep: time.Millisecond, Producers: 16, Workers: 32, Kill: true,
			KillJobs: 2000, KillSleep: 200 * time.Millisecond, KillAfter: 1500 * time.Millisecond, KillBound: 3 * time.Minute, RiverBound: time.Minute},
		Throughput: []throughputResult{
			{System: "asynq", Jobs: 20000, Ended: 20000, Elapsed: 5 * time.Second},
			{System: "crewd", Jobs: 20000, Ended: 20000, Elapsed: 4 * time.Second},
			{System: "river", Err: fmt.Errorf("boom")},
			{System: "asynq", Jobs: 20000, Ended: 20000, Elapsed: 4 * time.Second},
			{System: "crewd", Jobs: 20000, Ended: 20000, Elapsed: 2 * time.Second},
			{System: "river", Jobs: 20000, Ended: 20000, Elapsed: time.Second},
			{System: "asynq", Jobs: 20000, Ended: 20000, Elapsed: 10 * time.Second},
			{System: "crewd", Jobs: 20000, Ended: 20000, Elapsed: 5 * time.Second},
			{System: "river", Jobs: 20000, Ended: 20000, Elapsed: time.Second},
		},
		Kill: []killResult{
			{System: "asynq", Lost: 0, NotEnded: 0, Twice: 0, LastAfter: 105 * time.Second, Work: 11 * time.Second},
			{System: "crewd", Lost: 0, NotEnded: 0, Twice: -1, Rerun: 32, LastAfter: 11300 * time.Millisecond, Work: 11100 * time.Millisecond},
		},
	}
	md := rep.markdown()
	for _, want := range []string{
		"| asynq | 4000 (2000..5000) | 1.00 |",
		"| crewd | 5000 (4000..10000) | 1.25 |",
		"| river | error |",
		"| 0 | 0 | n/a | 32 | 11.3 s | 11.1 s |",
		"| 0 | 0 | 0 | 0 | 105.0 s | 11.0 s |",
		"boom",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
	if rep.err() == nil {
		t.Error("err() is nil with a failed scenario")
	}
}
