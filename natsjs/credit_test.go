package natsjs_test

import (
	"context"
	"testing"
	"time"

	"github.com/crew-go/crew/natsjs"
)

// TestSourceHoldsOnlyFreeSlotsPlusWindow: with every handler blocked, the
// server sees no more messages out than the pool's free slots plus the
// window, also when other work takes part of the pool; once released,
// everything runs.
func TestSourceHoldsOnlyFreeSlotsPlusWindow(t *testing.T) {
	cases := []struct {
		name          string
		workers, busy int // pool bound, slots taken by other work
		window        int
	}{
		{"own pool", 2, 0, 1},
		{"shared pool", 3, 2, 1},
		{"no window", 2, 0, 0},
		// The default: handlers that never finish never starve the pool,
		// so the adaptive window stays at its floor.
		{"adaptive", 4, 1, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.stream(t, "jobs", "jobs.>")
			cons := e.consumer(t, "jobs", "crewd", 30*time.Second, -1)
			const n = 40
			e.publish(t, "jobs.a", n)
			pool := newPool(t, c.workers)
			other := make(chan struct{})
			for range c.busy {
				if err := pool.Go(func() { <-other }); err != nil {
					t.Fatal(err)
				}
			}
			release := make(chan struct{})
			var opts []natsjs.Option
			window := c.window
			if window >= 0 {
				opts = append(opts, natsjs.WithWindow(window))
			} else {
				window = natsjs.MinWindow
			}
			src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
				<-release
				return nil
			}, opts...)
			run(t, src)
			openRelease, openOther := opener(t, release), opener(t, other)
			running := c.workers - c.busy
			bound := running + window
			eventually(t, 10*time.Second, "the free slots taken", func() bool { return pool.Stats().Busy == c.workers })
			// Watch for a while: the bound must hold through many pull
			// decisions (Run decides at least every 100 ms).
			for range 10 {
				info := consumerInfo(t, cons)
				if info.NumAckPending > bound || src.Stats().InFlight > bound {
					t.Fatalf("%d out (server), %d held (source); want <= %d free slots + window", info.NumAckPending, src.Stats().InFlight, bound)
				}
				time.Sleep(30 * time.Millisecond)
			}
			if got := consumerInfo(t, cons).NumAckPending; got < running {
				t.Fatalf("%d out, want at least the %d free slots", got, running)
			}
			openRelease()
			openOther()
			eventually(t, 20*time.Second, "every message acked", func() bool { return src.Stats().Acked == n })
			if st := src.Stats(); st.Redelivered != 0 {
				t.Fatalf("redelivered: %v", st)
			}
		})
	}
}

// TestAdaptiveWindowGrowsUnderABacklog: with fast handlers and a backlog
// the default window grows past its floor (the pool would starve between
// pulls), and never past MaxWindowFactor times the pool's bound.
func TestAdaptiveWindowGrowsUnderABacklog(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, -1)
	const n, workers = 3000, 4
	e.publish(t, "jobs.a", n)
	pool := newPool(t, workers)
	src := newSource(t, pool, cons, func(context.Context, *natsjs.Msg) error { return nil })
	run(t, src)
	most := 0
	eventually(t, 30*time.Second, "every message acked", func() bool {
		st := src.Stats()
		most = max(most, st.Window)
		if st.Window > natsjs.MaxWindowFactor*workers {
			t.Fatalf("window %d past %d x the bound %d", st.Window, natsjs.MaxWindowFactor, workers)
		}
		return st.Acked == n
	})
	if most <= natsjs.MinWindow {
		t.Fatalf("the window stayed at %d through a backlog of %d", most, n)
	}
	t.Logf("the window reached %d (cap %d)", most, natsjs.MaxWindowFactor*workers)
}

// TestOutageDoesNotStopThePulls: messages waiting out an outage
// (Unavailable) are not on the pool: its slots are free, and the messages
// that need nothing of what is down must still be pulled and run. Here
// three messages whose store is down for the whole test take a pool of two
// slots plus a window of one; the three others are acked meanwhile.
func TestOutageDoesNotStopThePulls(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, -1)
	e.publish(t, "jobs.down", 3)
	e.publish(t, "jobs.up", 3)
	src := newSource(t, newPool(t, 2), cons, func(ctx context.Context, m *natsjs.Msg) error {
		if m.Subject() == "jobs.down" {
			return natsjs.Unavailable(errStoreDown)
		}
		return nil
	}, natsjs.WithWindow(1), natsjs.WithUnavailableDelay(200*time.Millisecond))
	run(t, src)
	eventually(t, 10*time.Second, "the three messages that need no store acked", func() bool {
		return src.Stats().Acked == 3
	})
}
