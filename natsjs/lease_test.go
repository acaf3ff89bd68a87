package natsjs_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/natsjs"
)

// TestLongTaskIsNotRedelivered: a handler running 2.5 times AckWait keeps
// its lease with heartbeats, so a second consumer never gets its message;
// and the heartbeats come once per period, not in a storm (nats.go #1726).
func TestLongTaskIsNotRedelivered(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	// Renewed every half AckWait: a renewal that a loaded machine delays by
	// more than the other half loses the lease. 2 s leaves a second to it.
	const ackWait = 2 * time.Second
	cons := e.consumer(t, "jobs", "crewd", ackWait, -1)
	e.publish(t, "jobs.a", 1)
	var runs atomic.Int32
	h := func(ctx context.Context, m *natsjs.Msg) error {
		runs.Add(1)
		select {
		case <-time.After(5 * ackWait / 2):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	a := newSource(t, newPool(t, 1), cons, h)
	b := newSource(t, newPool(t, 1), cons, h)
	run(t, a)
	eventually(t, 5*time.Second, "the task started", func() bool { return runs.Load() == 1 })
	run(t, b)
	eventually(t, 20*time.Second, "acked", func() bool { return a.Stats().Acked+b.Stats().Acked == 1 })
	if runs.Load() != 1 {
		t.Fatalf("ran %d times, want once", runs.Load())
	}
	st := a.Stats()
	if st.Redelivered != 0 || b.Stats().Received != 0 {
		t.Fatalf("redelivered: a %v; b %v", st, b.Stats())
	}
	// Renewed every half AckWait over 2.5 AckWaits: about 4 or 5, surely
	// more than 1 and far fewer than a storm.
	if st.Heartbeats < 2 || st.Heartbeats > 12 {
		t.Fatalf("%d heartbeats over 2.5 AckWaits, want about 5", st.Heartbeats)
	}
}

// TestLeaseLostCancelsTheHandler: with the server gone for longer than
// AckWait, a running handler's context ends with ErrLeaseLost, as does
// the context of what a handler left with Then; the message comes back
// once the server does, and is not naked by the first run.
func TestLeaseLostCancelsTheHandler(t *testing.T) {
	t.Run("handler", func(t *testing.T) { leaseLostCancels(t, false) })
	t.Run("then", func(t *testing.T) { leaseLostCancels(t, true) })
}

func leaseLostCancels(t *testing.T, then bool) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	const ackWait = time.Second
	cons := e.consumer(t, "jobs", "crewd", ackWait, -1)
	e.publish(t, "jobs.a", 1)
	cause := make(chan error, 1)
	var started atomic.Int32
	quit := make(chan struct{})
	src := newSource(t, newPool(t, 1), cons, func(ctx context.Context, m *natsjs.Msg) error {
		if started.Add(1) > 1 {
			return nil
		}
		wait := func(ctx context.Context) error {
			select {
			case <-ctx.Done():
			case <-quit: // the test failed
			}
			cause <- ctx.Err()
			return ctx.Err()
		}
		if then {
			return natsjs.Then(wait)
		}
		return wait(ctx)
	}, natsjs.WithConn(e.nc))
	run(t, src)
	opener(t, quit)
	eventually(t, 5*time.Second, "the task started", func() bool { return started.Load() == 1 })
	addr := e.srv.Addr()
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
	select {
	case err := <-cause:
		if !errors.Is(err, natsjs.ErrLeaseLost) || !errors.Is(err, context.Canceled) {
			t.Fatalf("handler's context ended with %v, want ErrLeaseLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("handler not cancelled within 10 s of a lost lease")
	}
	e.srv = startServer(t, e.dir, portOf(addr))
	eventually(t, 20*time.Second, "redelivered and acked", func() bool { return src.Stats().Acked == 1 })
	if st := src.Stats(); st.LeasesLost != 1 || st.Naked != 0 || st.Redelivered != 1 {
		t.Fatalf("stats: %v", st)
	}
}

// TestHandlerIgnoringItsContextDoesNotHoldTheMessage: once the pool's task
// timeout cancelled a handler that goes on regardless, its lease is no
// longer renewed, and the message comes back to another consumer after
// AckWait instead of staying stuck (River #1258). With a window, the stuck
// Source may take it back first; it hands it back once it has waited an
// AckWait with no handler started.
func TestHandlerIgnoringItsContextDoesNotHoldTheMessage(t *testing.T) {
	for _, window := range []int{0, 2} {
		t.Run(fmt.Sprintf("window %d", window), func(t *testing.T) {
			e := newEnv(t)
			e.stream(t, "jobs", "jobs.>")
			// Without a window the task must time out (200 ms) before its
			// first renewal (half AckWait): 1.5 s, also when a loaded
			// machine delays the cancellation. With one, a second is
			// enough, and the test waits for a few AckWaits.
			ackWait := time.Second
			if window == 0 {
				ackWait = 3 * time.Second
			}
			cons := e.consumer(t, "jobs", "crewd", ackWait, -1)
			e.publish(t, "jobs.a", 1)
			pool, err := crew.New(crew.WithWorkers(1), crew.WithTaskTimeout(200*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = pool.Close() })
			release := make(chan struct{})
			var started atomic.Int32
			a := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
				started.Add(1)
				<-release // ignores ctx
				return nil
			}, natsjs.WithWindow(window))
			run(t, a)
			openRelease := opener(t, release)
			eventually(t, 10*time.Second, "started", func() bool { return started.Load() == 1 })
			var attempt atomic.Int32
			b := newSource(t, newPool(t, 1), cons, func(ctx context.Context, m *natsjs.Msg) error {
				attempt.Store(int32(m.Attempt()))
				return nil
			})
			run(t, b)
			eventually(t, 20*time.Second, "b runs it", func() bool { return b.Stats().Acked == 1 })
			st := a.Stats()
			if window == 0 {
				// Nothing waits in a: the running copy alone, never renewed
				// after its timeout (200 ms, before the first renewal).
				if attempt.Load() != 2 || st.Heartbeats != 0 {
					t.Fatalf("b saw attempt %d; a: %v", attempt.Load(), st)
				}
			} else if attempt.Load() < 2 || (st.Received > 1 && st.HandedBack == 0) {
				t.Fatalf("b saw attempt %d; a: %v", attempt.Load(), st)
			}
			openRelease()
			eventually(t, 10*time.Second, "a settles", func() bool { return a.Stats().InFlight == 0 })
		})
	}
}

// TestLongHandlerSpendsNoWaitingAttempt: one slot; a healthy handler runs
// 2.5 AckWaits (its lease renewed) while the next message waits. The pool
// is busy, not stuck: the waiting message is renewed, not handed back
// (a hand-back costs a delivery), so with MaxDeliver 3 a failing message
// still runs at attempts 1, 2 and 3 before it is termed.
func TestLongHandlerSpendsNoWaitingAttempt(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	const ackWait = time.Second
	cons := e.consumer(t, "jobs", "crewd", ackWait, 3)
	e.publish(t, "jobs.a", 2)
	pool := newPool(t, 1)
	var mu sync.Mutex
	var attempts []int
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		if m.StreamSeq() == 1 {
			time.Sleep(5 * ackWait / 2)
			return nil
		}
		mu.Lock()
		attempts = append(attempts, m.Attempt())
		mu.Unlock()
		return errors.New("fails")
	}, natsjs.WithBackoff(10*time.Millisecond, 10*time.Millisecond))
	run(t, src)
	eventually(t, 20*time.Second, "the failing message termed", func() bool { return src.Stats().Termed == 1 })
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(attempts) != "[1 2 3]" {
		t.Fatalf("the failing message ran at attempts %v, want [1 2 3]; %v", attempts, src.Stats())
	}
	if st := src.Stats(); st.HandedBack != 0 || st.Acked != 1 {
		t.Fatalf("stats: %v", st)
	}
}
