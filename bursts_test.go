package crew_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew"
)

// burstTime is how long TestWarmBursts runs at each GOMAXPROCS. The short
// form runs in ./test.sh; the long one is a command of its own:
//
//	go test -run '^TestWarmBursts$' -bursts 2m .                   # millions of bursts
//	go test -run '^TestWarmBursts$' -bursts 1m -tags crewyield .   # windows widened
var burstTime = flag.Duration("bursts", 0, "how long TestWarmBursts runs at each GOMAXPROCS (default 2s, 500ms with -short)")

// strandedAfter is how long a burst may take to start all its tasks before
// the test calls one stranded. A healthy burst starts them in microseconds;
// a stranded task here would wait for ever, since no task of the burst
// ends until all have started.
const strandedAfter = 10 * time.Second

// burstShapes are the ways a burst of bound tasks that rendezvous reaches a
// pool: the warm burst from one submitter in each API, from two
// submitters at once (pushes then finish out of order: one may still be
// writing its slot while a later one is written and relies on a looker),
// and with short tasks in between (a worker that finishes one pops the
// next as a non-looker, moving the queue's head under a looker's look).
var burstShapes = []struct {
	name  string
	burst func(p *crew.Pool, g *crew.Group, r *rand.Rand, meet func()) error
}{
	{"Go", func(p *crew.Pool, _ *crew.Group, _ *rand.Rand, meet func()) error { return p.Go(meet) }},
	{"Submit", func(p *crew.Pool, _ *crew.Group, _ *rand.Rand, meet func()) error {
		_, err := p.Submit(context.Background(), func(context.Context) error { meet(); return nil })
		return err
	}},
	{"Group.Go", func(_ *crew.Pool, g *crew.Group, _ *rand.Rand, meet func()) error {
		return g.Go(func() error { meet(); return nil })
	}},
	{"Go with short tasks between", func(p *crew.Pool, _ *crew.Group, r *rand.Rand, meet func()) error {
		for range r.IntN(3) {
			if err := p.Go(func() {}); err != nil {
				return err
			}
		}
		return p.Go(meet)
	}},
}

// TestWarmBursts is invariant 7 under real threads: in fresh pools, again
// and again, one short task runs and its caller waits for it (the lone
// worker goes idle: it spins, then parks), then bound tasks that wait for
// each other are submitted back to back, by one submitter or two. All of
// them must start: a task left queued while a slot is free strands the
// burst. Deterministic proofs (synctest, the fuzz target) cannot see the
// windows real interleavings hit once in thousands of bursts; this test
// runs as many bursts as its time allows at GOMAXPROCS 2, 4 and 8, and
// built with -tags crewyield the pool yields at random between the steps of
// its wake-up protocol, which widens those windows by orders of magnitude.
func TestWarmBursts(t *testing.T) {
	d := *burstTime
	if d == 0 {
		d = 2 * time.Second
		if testing.Short() {
			d = 500 * time.Millisecond
		}
	}
	for _, procs := range []int{2, 4, 8} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			seed := uint64(time.Now().UnixNano())
			r := rand.New(rand.NewPCG(seed, uint64(procs)))
			n := 0
			for end := time.Now().Add(d); time.Now().Before(end); n++ {
				bound := 2 + r.IntN(3) // 2 to 4, the bounds the strands were seen at
				if !warmBurst(t, r, bound, n) {
					t.Fatalf("seed %d: stranded after %d bursts", seed, n)
				}
			}
			t.Logf("%d bursts in %v, none stranded", n, d)
		})
	}
}

// warmBurst runs one burst in a fresh pool and reports false, having said
// why, if the burst stranded.
func warmBurst(t *testing.T, r *rand.Rand, bound, n int) bool {
	t.Helper()
	p, err := crew.New(crew.WithWorkers(bound), crew.WithQueueSize(4*bound))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	done := make(chan struct{})
	if err := p.Go(func() { close(done) }); err != nil {
		t.Fatal(err)
	}
	<-done

	shape := burstShapes[r.IntN(len(burstShapes))]
	g, _ := crew.NewGroup(context.Background(), p)
	var started sync.WaitGroup
	started.Add(bound)
	all, release := make(chan struct{}), make(chan struct{})
	var arrived atomic.Int32
	meet := func() {
		if arrived.Add(1) == int32(bound) {
			close(all)
		}
		started.Done()
		<-release
	}
	submitters := 1 + r.IntN(2)
	var subs sync.WaitGroup
	for s := range submitters {
		sr := rand.New(rand.NewPCG(r.Uint64(), uint64(s)))
		count := bound / submitters
		if s == 0 {
			count += bound % submitters
		}
		subs.Go(func() {
			for range count {
				if err := shape.burst(p, g, sr, meet); err != nil {
					t.Errorf("burst %d (%s): %v", n, shape.name, err)
					started.Done() // the task will never arrive
				}
			}
		})
	}
	subs.Wait()
	stranded := false
	select {
	case <-all:
	case <-time.After(strandedAfter):
		stranded = true
		t.Errorf("burst %d (%s, bound %d, %d submitter(s)): %d of %d tasks started after %v: %v",
			n, shape.name, bound, submitters, arrived.Load(), bound, strandedAfter, p.Stats())
	}
	close(release)
	if stranded {
		started.Wait() // the stranded tasks run once the others end
	}
	if err := g.Wait(); err != nil {
		t.Errorf("burst %d: group: %v", n, err)
	}
	return !stranded
}
