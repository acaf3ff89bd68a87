package crew_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crew-go/crew"
)

// checkConservation asserts invariant 7 at a quiescent point (after
// synctest.Wait): an open, unpaused pool with a queued task runs as many
// functions as its bound.
func checkConservation(t testing.TB, p *crew.Pool) {
	t.Helper()
	s := p.Stats()
	if !s.Closed && !s.Paused && s.Queued > 0 && s.Busy < s.MaxWorkers {
		t.Fatalf("invariant 7: %d task(s) queued while %d of %d workers run: %+v", s.Queued, s.Busy, s.MaxWorkers, s)
	}
}

// rendezvous is a set of n task functions that each wait until all n have
// started: they can only finish if the pool runs n at once. One that has
// waited an hour (of the bubble's time) gives up and says so.
type rendezvous struct {
	n       int64
	arrived atomic.Int64
	all     chan struct{}
	stuck   atomic.Int64
}

func newRendezvous(n int) *rendezvous {
	return &rendezvous{n: int64(n), all: make(chan struct{})}
}

func (r *rendezvous) meet() {
	if r.arrived.Add(1) == r.n {
		close(r.all)
	}
	select {
	case <-r.all:
	case <-time.After(time.Hour):
		r.stuck.Add(1)
	}
}

// submitKinds submits one function of a rendezvous in every way a task
// reaches the pool.
var submitKinds = map[string]func(t *testing.T, p *crew.Pool, g *crew.Group, fn func()) error{
	"Go":    func(t *testing.T, p *crew.Pool, _ *crew.Group, fn func()) error { return p.Go(fn) },
	"TryGo": func(t *testing.T, p *crew.Pool, _ *crew.Group, fn func()) error { return p.TryGo(fn) },
	"Submit": func(t *testing.T, p *crew.Pool, _ *crew.Group, fn func()) error {
		_, err := p.Submit(t.Context(), func(context.Context) error { fn(); return nil })
		return err
	},
	"TrySubmit": func(t *testing.T, p *crew.Pool, _ *crew.Group, fn func()) error {
		_, err := p.TrySubmit(func(context.Context) error { fn(); return nil }, crew.Timeout(2*time.Hour))
		return err
	},
	"Group.Go": func(t *testing.T, p *crew.Pool, g *crew.Group, fn func()) error {
		return g.Go(func() error { fn(); return nil })
	},
	"Group.TryGo": func(t *testing.T, p *crew.Pool, g *crew.Group, fn func()) error {
		return g.TryGo(func() error { fn(); return nil })
	},
}

// poolStates bring a pool of bound n to the state a burst arrives in; each
// returns what the burst must do after its submits (resume a paused pool).
var poolStates = map[string]func(t *testing.T, p *crew.Pool, n int) (after func()){
	"cold": func(*testing.T, *crew.Pool, int) func() { return nil },
	// Right after a task: the worker is still looking for work.
	"warm, spinning": func(t *testing.T, p *crew.Pool, n int) func() {
		runOne(t, p)
		return nil
	},
	"warm, parked": func(t *testing.T, p *crew.Pool, n int) func() {
		runOne(t, p)
		synctest.Wait()
		return nil
	},
	"all parked": func(t *testing.T, p *crew.Pool, n int) func() {
		r := newRendezvous(n)
		for range n {
			if err := p.Go(r.meet); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		return nil
	},
	"after resize up": func(t *testing.T, p *crew.Pool, n int) func() {
		if err := p.Resize(1); err != nil {
			t.Fatal(err)
		}
		runOne(t, p)
		synctest.Wait()
		if err := p.Resize(n); err != nil {
			t.Fatal(err)
		}
		return nil
	},
	"resumed": func(t *testing.T, p *crew.Pool, n int) func() {
		runOne(t, p)
		if err := p.Pause(); err != nil {
			t.Fatal(err)
		}
		return func() {
			synctest.Wait()
			if err := p.Resume(); err != nil {
				t.Fatal(err)
			}
		}
	},
	"after idle retirement": func(t *testing.T, p *crew.Pool, n int) func() {
		runOne(t, p)
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if s := p.Stats(); s.Workers != 0 {
			t.Fatalf("workers not retired: %+v", s)
		}
		return nil
	},
}

func runOne(t *testing.T, p *crew.Pool) {
	t.Helper()
	task, err := p.Submit(t.Context(), func(context.Context) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestRendezvousAtTheBound is invariant 7 as a user meets it: bound-many
// tasks that wait for each other all run, whatever the way they are
// submitted and whatever state the pool is in when they arrive. A pool that
// leaves one queued while a worker sleeps never finishes them (the bubble's
// clock then runs to the rendezvous' hour and the test says so).
func TestRendezvousAtTheBound(t *testing.T) {
	for _, bound := range []int{2, 4, 8} {
		for state, prepare := range poolStates {
			for kind, submit := range submitKinds {
				t.Run(fmt.Sprintf("%d/%s/%s", bound, state, kind), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						p := newPool(t, crew.WithWorkers(bound), crew.WithQueueSize(bound), crew.WithIdleTimeout(time.Minute))
						g, _ := crew.NewGroup(t.Context(), p)
						after := prepare(t, p, bound)
						r := newRendezvous(bound)
						for range bound {
							if err := submit(t, p, g, r.meet); err != nil {
								t.Fatal(err)
							}
						}
						if after != nil {
							after()
						}
						synctest.Wait()
						checkConservation(t, p)
						if err := g.Wait(); err != nil {
							t.Fatal(err)
						}
						synctest.Wait()
						if n := r.stuck.Load(); n > 0 || r.arrived.Load() != int64(bound) {
							t.Fatalf("%d of %d tasks met, %d waited an hour: %+v", r.arrived.Load(), bound, n, p.Stats())
						}
					})
				})
			}
		}
	}
}

// TestBurstIntoWarmPoolRunsAtFullWidth: 64 tasks of 10 ms into a warm pool
// of 8 take 80 ms on the bubble's clock, at 8 at once, as into a cold one.
// (Before the hand-on rule, a warm pool ran them 2 at a time: 328 ms.)
func TestBurstIntoWarmPoolRunsAtFullWidth(t *testing.T) {
	for _, state := range []string{"cold", "warm, spinning", "warm, parked"} {
		t.Run(state, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPool(t, crew.WithWorkers(8), crew.WithQueueSize(64))
				poolStates[state](t, p, 8)
				var peak gauge
				start := time.Now()
				g, _ := crew.NewGroup(t.Context(), p)
				for range 64 {
					if err := g.Go(func() error {
						peak.enter()
						defer peak.leave()
						time.Sleep(10 * time.Millisecond)
						return nil
					}); err != nil {
						t.Fatal(err)
					}
				}
				if err := g.Wait(); err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); d != 80*time.Millisecond || peak.peak.Load() != 8 {
					t.Fatalf("64 × 10 ms on 8 workers took %v at peak %d, want 80ms at 8", d, peak.peak.Load())
				}
			})
		})
	}
}
