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
			src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
				<-release
				return nil
			}, natsjs.WithWindow(c.window))
			run(t, src)
			openRelease, openOther := opener(t, release), opener(t, other)
			running := c.workers - c.busy
			bound := running + c.window
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
