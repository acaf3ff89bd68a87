package crew_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"go.uber.org/goleak"
)

// ledger checks the pool from the outside: the observer records every
// terminal task once, task functions record how many of them run at once.
type ledger struct {
	mu       sync.Mutex
	observed [crew.Dropped + 1]uint64
	mapped   uint64 // observations of tasks named "map"
	gauge
	bound    atomic.Int64 // the largest bound ever set
	accepted atomic.Int64
	tasks    []*crew.Task
}

func (l *ledger) observe(o crew.Observation) {
	l.mu.Lock()
	l.observed[o.State]++
	if o.Name == "map" {
		l.mapped++
	}
	l.mu.Unlock()
}

// body is a random task body: fast, failing, panicking, slow, or slow and
// ignoring its context.
func (l *ledger) body(r *rand.Rand) func(context.Context) error {
	kind := r.IntN(6)
	d := time.Duration(r.IntN(300)) * time.Microsecond
	return func(ctx context.Context) error {
		l.enter()
		defer l.leave()
		switch kind {
		case 0:
			return nil
		case 1:
			return errors.New("failed")
		case 2:
			panic("stress panic")
		case 3:
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return ctx.Err()
			}
		case 4:
			time.Sleep(d) // ignores cancellation
		}
		return nil
	}
}

// TestStress runs many goroutines that submit in every way (groups too),
// pause, resume, resize, read stats, cancel groups and stop the pool at
// random, and checks invariants 1, 2, 3 and 6 at the end of every round,
// invariant 7 while it runs, and that every group's Wait returns.
func TestStress(t *testing.T) {
	rounds := 12
	if testing.Short() {
		rounds = 3
	}
	for round := range rounds {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			stressRound(t, seed)
			goleak.VerifyNone(t)
		})
	}
}

func stressRound(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 1))
	l := &ledger{}
	workers := 1 + r.IntN(6)
	l.bound.Store(int64(workers))
	poolCtx, cancelPool := context.WithCancel(context.Background())
	defer cancelPool()
	p, err := crew.New(
		crew.WithWorkers(workers),
		crew.WithQueueSize(1+r.IntN(16)),
		crew.WithIdleTimeout(time.Duration(1+r.IntN(5))*time.Millisecond),
		crew.WithStopGrace(5*time.Second),
		crew.WithContext(poolCtx),
		crew.WithObserver(l.observe),
	)
	if err != nil {
		t.Fatal(err)
	}
	var boundMu sync.Mutex // Resize and the record of the largest bound
	var wg sync.WaitGroup
	for g := range 12 {
		rg := rand.New(rand.NewPCG(seed, uint64(g)+2))
		wg.Go(func() {
			var mine []*crew.Task
			var gopts []crew.GroupOption
			if rg.IntN(2) == 0 {
				gopts = append(gopts, crew.JoinErrors())
			}
			if rg.IntN(2) == 0 {
				gopts = append(gopts, crew.Limit(1+rg.IntN(4)))
			}
			gctx, cancelGroup := context.WithCancel(context.Background())
			defer cancelGroup()
			group, _ := crew.NewGroup(gctx, p, gopts...)
			for range 150 {
				if rg.IntN(4) == 0 { // a quarter of the operations go to the group
					fn := l.body(rg)
					switch rg.IntN(10) {
					case 0:
						cancelGroup()
					case 1, 2:
						if group.TryGo(func() error { return fn(context.Background()) }) == nil {
							l.accepted.Add(1)
						}
					default:
						if group.Go(func() error { return fn(context.Background()) }) == nil {
							l.accepted.Add(1)
						}
					}
					continue
				}
				switch op := rg.IntN(100); {
				case op < 30:
					fn := l.body(rg)
					if p.Go(func() { _ = fn(context.Background()) }) == nil {
						l.accepted.Add(1)
					}
				case op < 45:
					fn := l.body(rg)
					if p.TryGo(func() { _ = fn(context.Background()) }) == nil {
						l.accepted.Add(1)
					}
				case op < 70:
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rg.IntN(2000))*time.Microsecond)
					var opts []crew.TaskOption
					if rg.IntN(2) == 0 {
						opts = append(opts, crew.Timeout(time.Duration(1+rg.IntN(300))*time.Microsecond))
					}
					if task, err := p.Submit(ctx, l.body(rg), opts...); err == nil {
						l.accepted.Add(1)
						mine = append(mine, task)
					}
					cancel()
				case op < 80:
					if task, err := p.TrySubmit(l.body(rg)); err == nil {
						l.accepted.Add(1)
						mine = append(mine, task)
					}
				case op < 85:
					_ = p.Pause()
				case op < 91:
					_ = p.Resume()
				case op < 95:
					n := 1 + rg.IntN(6)
					boundMu.Lock()
					if p.Resize(n) == nil && int64(n) > l.bound.Load() {
						l.bound.Store(int64(n))
					}
					boundMu.Unlock()
				case op < 99:
					s := p.Stats()
					if s.Submitted < s.Succeeded+s.Failed+s.Panicked+s.TimedOut+s.Canceled+s.Dropped+s.Rejected {
						t.Errorf("snapshot shows more finished than submitted: %+v", s)
					}
				default:
					switch rg.IntN(4) {
					case 0:
						cancelPool()
					case 1:
						ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
						_ = p.Shutdown(ctx, crew.ShutdownMode(rg.IntN(5)))
						cancel()
					}
				}
			}
			// Every group waiter is released, whatever happened to the pool.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var ue *crew.UnfinishedError
			if err := group.WaitContext(ctx); errors.As(err, &ue) {
				t.Errorf("group wait hung: %v", err)
			}
			l.mu.Lock()
			l.tasks = append(l.tasks, mine...)
			l.mu.Unlock()
		})
	}
	// A paused pool with a full queue blocks Go until Resume: a janitor
	// resumes now and then so that the round ends. It also watches
	// invariant 7: a task queued while the pool, open and unpaused, runs
	// fewer functions than its bound must be taken within a bounded time.
	// Each snapshot can catch a worker between its wake-up and its pop, so
	// only a violation that lasts (a second, under -race on a loaded
	// machine) fails.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	var since time.Time
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-tick.C:
			if s := p.Stats(); !s.Closed && !s.Paused && s.Queued > 0 && s.Busy < s.MaxWorkers {
				if since.IsZero() {
					since = time.Now()
				} else if time.Since(since) > time.Second {
					t.Fatalf("invariant 7: tasks queued for %v while workers were free: %+v", time.Since(since), s)
				}
			} else {
				since = time.Time{}
			}
			if r.IntN(4) == 0 {
				_ = p.Resume()
			}
		}
	}
	// Resume in case the last word was Pause; then stop in a random mode.
	_ = p.Resume()
	mode := crew.ShutdownMode(r.IntN(5))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err = p.Shutdown(ctx, mode)
	if mode == crew.Drain || mode == crew.Soft {
		err = p.Shutdown(context.Background(), mode) // wait for the rest
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown(%v) = %v", mode, err)
	}

	// Invariant 1: every accepted task reached exactly one terminal state,
	// and every handle is released.
	for _, task := range l.tasks {
		select {
		case <-task.Done():
		default:
			t.Fatalf("task still %v after Shutdown", task.State())
		}
		if !task.State().Terminal() {
			t.Fatalf("task state %v", task.State())
		}
	}
	s := p.Stats()
	l.mu.Lock()
	var observed uint64
	for _, n := range l.observed {
		observed += n
	}
	byState := l.observed
	l.mu.Unlock()
	if observed != uint64(l.accepted.Load()) {
		t.Fatalf("accepted %d tasks, observed %d terminal (%v)", l.accepted.Load(), observed, byState)
	}
	// Invariant 6: the counts agree with what was observed.
	refused := s.Submitted - uint64(l.accepted.Load())
	want := crew.Stats{
		Succeeded: byState[crew.Succeeded], Failed: byState[crew.Failed], Panicked: byState[crew.Panicked],
		TimedOut: byState[crew.TimedOut], Canceled: byState[crew.Canceled], Dropped: byState[crew.Dropped], Rejected: refused,
	}
	got := crew.Stats{Succeeded: s.Succeeded, Failed: s.Failed, Panicked: s.Panicked, TimedOut: s.TimedOut, Canceled: s.Canceled, Dropped: s.Dropped, Rejected: s.Rejected}
	if got != want || s.InFlight() != 0 {
		t.Fatalf("counts %+v, observed %+v, in flight %d", got, want, s.InFlight())
	}
	// Invariant 2.
	if l.peak.Load() > l.bound.Load() {
		t.Fatalf("%d task functions ran at once, bound %d", l.peak.Load(), l.bound.Load())
	}
	// Invariant 3 is checked by the caller with goleak once the ignoring
	// tasks (at most 300µs each) are done.
}
