package natsjs_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/natsjs"
)

// TestShutdownHandsUnstartedToAnotherConsumer: a Source holding messages
// it has not started hands them back at once, and another consumer runs
// them at once, not after AckWait (30 s here); Shutdown returns
// only after the running handler has finished and acked (nats.go #1328 and
// #1672: a Drain that did not wait).
func TestShutdownHandsUnstartedToAnotherConsumer(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, -1)
	const n = 10
	e.publish(t, "jobs.a", n)
	ran := newSeen()
	release := make(chan struct{})
	var aStarted atomic.Int32
	a := newSource(t, newPool(t, 1), cons, func(ctx context.Context, m *natsjs.Msg) error {
		aStarted.Add(1)
		ran.add(m.StreamSeq())
		<-release
		return nil
	}, natsjs.WithWindow(3))
	aDone := make(chan error, 1)
	go func() { aDone <- a.Run(context.Background()) }()
	openRelease := opener(t, release)
	eventually(t, 10*time.Second, "a holds 1 running and 3 waiting", func() bool {
		return aStarted.Load() == 1 && a.Stats().InFlight == 4
	})
	b := newSource(t, newPool(t, 4), cons, func(ctx context.Context, m *natsjs.Msg) error {
		ran.add(m.StreamSeq())
		return nil
	})
	run(t, b)
	eventually(t, 10*time.Second, "b runs what a does not hold", func() bool { return b.Stats().Acked == n-4 })

	shut := make(chan error, 1)
	begin := time.Now()
	go func() { shut <- a.Shutdown(context.Background()) }()
	eventually(t, 10*time.Second, "b runs what a handed back", func() bool { return b.Stats().Acked == n-1 })
	// At once, not after AckWait (30 s): a third of it is a bound that a
	// loaded machine's scheduling does not reach, and a redelivery does.
	if took := time.Since(begin); took > 10*time.Second {
		t.Fatalf("handed back messages reached b after %v, want well within AckWait (30 s)", took)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v while a handler was running", err)
	case <-time.After(100 * time.Millisecond):
	}
	openRelease()
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	st := a.Stats()
	if st.HandedBack != 3 || st.Acked != 1 || st.InFlight != 0 || aStarted.Load() != 1 {
		t.Fatalf("a: %v, started %d", st, aStarted.Load())
	}
	if ran.distinct() != n {
		t.Fatalf("%d distinct ran, want %d", ran.distinct(), n)
	}
}

// TestPoolHardStopHandsBackRunning: a handler cancelled by the pool's hard
// stop is handed back at once (no backoff), and another consumer gets it.
func TestPoolHardStopHandsBackRunning(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, -1)
	e.publish(t, "jobs.a", 1)
	var started atomic.Int32
	pool, err := crew.New(crew.WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	a := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		started.Add(1)
		<-ctx.Done()
		return ctx.Err()
	}, natsjs.WithBackoff(time.Minute, time.Minute))
	run(t, a)
	eventually(t, 10*time.Second, "started", func() bool { return started.Load() == 1 })
	if err := pool.Shutdown(context.Background(), crew.Hard); err != nil {
		t.Fatal(err)
	}
	// The pool's stop stops the Source too.
	if err := a.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var attempt atomic.Int32
	b := newSource(t, newPool(t, 1), cons, func(ctx context.Context, m *natsjs.Msg) error {
		attempt.Store(int32(m.Attempt()))
		return nil
	})
	run(t, b)
	begin := time.Now()
	eventually(t, 20*time.Second, "b runs it", func() bool { return b.Stats().Acked == 1 })
	// No backoff (a minute here) and no AckWait (30 s): a third of AckWait
	// bounds it on a loaded machine.
	if took := time.Since(begin); took > 10*time.Second {
		t.Fatalf("handed back after %v, want well within AckWait and the backoff (no backoff)", took)
	}
	if st := a.Stats(); st.HandedBack != 1 || st.Naked != 0 || st.Received != 1 {
		t.Fatalf("a: %v", st)
	}
	if attempt.Load() != 2 {
		t.Fatalf("b saw attempt %d, want 2", attempt.Load())
	}
}

// TestShutdownReturnsAtItsDeadline: a handler that never ends does not hold
// Shutdown past its context.
func TestShutdownReturnsAtItsDeadline(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, -1)
	e.publish(t, "jobs.a", 1)
	release := make(chan struct{})
	var started atomic.Int32
	src := newSource(t, newPool(t, 1), cons, func(ctx context.Context, m *natsjs.Msg) error {
		started.Add(1)
		<-release
		return nil
	})
	errc := make(chan error, 1)
	go func() { errc <- src.Run(context.Background()) }()
	openRelease := opener(t, release)
	eventually(t, 10*time.Second, "started", func() bool { return started.Load() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := src.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want DeadlineExceeded", err)
	}
	openRelease()
	if err := src.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if st := src.Stats(); st.Acked != 1 {
		t.Fatalf("stats: %v", st)
	}
}

// TestStopKeepsMessagesAtTheirLastDelivery: a nak after the consumer's
// last delivery would lose the message (the server gives it to no one), so
// a stop does not hand such messages back: they run if the pool runs them,
// and are dead-lettered if the pool stopped without running them.
func TestStopKeepsMessagesAtTheirLastDelivery(t *testing.T) {
	for _, poolStops := range []bool{false, true} {
		name := "pool runs them"
		if poolStops {
			name = "pool drops them"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.stream(t, "jobs", "jobs.>")
			e.stream(t, "dead", "dead.>")
			cons := e.consumer(t, "jobs", "crewd", 30*time.Second, 1)
			e.publish(t, "jobs.a", 4)
			pool, err := crew.New(crew.WithWorkers(1))
			if err != nil {
				t.Fatal(err)
			}
			release := make(chan struct{})
			var started atomic.Int32
			src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
				started.Add(1)
				<-release
				return nil
			}, natsjs.WithWindow(3), natsjs.WithDeadLetter(e.js, "dead.jobs"))
			errc := make(chan error, 1)
			go func() { errc <- src.Run(context.Background()) }()
			openRelease := opener(t, release)
			eventually(t, 10*time.Second, "1 running, 3 waiting", func() bool {
				return started.Load() == 1 && src.Stats().InFlight == 4
			})
			shut := make(chan error, 1)
			go func() { shut <- src.Shutdown(context.Background()) }()
			poolDone := make(chan error, 1)
			if poolStops {
				go func() { poolDone <- pool.Shutdown(context.Background(), crew.Soft) }()
				eventually(t, 10*time.Second, "the pool dropped the queued", func() bool { return pool.Stats().Dropped == 3 })
			}
			openRelease()
			if err := <-shut; err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			st := src.Stats()
			if poolStops {
				if err := <-poolDone; err != nil {
					t.Fatal(err)
				}
				if st.HandedBack != 0 || st.Acked != 1 || st.DeadLettered != 3 || streamMsgs(t, e.js, "dead") != 3 {
					t.Fatalf("stats %v", st)
				}
			} else {
				if err := pool.Shutdown(context.Background(), crew.Drain); err != nil {
					t.Fatal(err)
				}
				if st.HandedBack != 0 || st.Acked != 4 {
					t.Fatalf("stats %v", st)
				}
			}
		})
	}
}

// TestShutdownFromItsOwnHandler: a handler that calls Shutdown on its own
// Source with its context (here one made from it) cannot wait for its own
// end: Shutdown begins the stop and returns ErrCalledFromHandler at once,
// and Run returns once the handler has (its message acked).
func TestShutdownFromItsOwnHandler(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 2*time.Second, -1)
	e.publish(t, "jobs.a", 1)
	pool := newPool(t, 2)
	var src *natsjs.Source
	res := make(chan error, 1)
	src = newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		// A bound of our own so that the test ends: 6 s, 3 AckWaits.
		c, cancel := context.WithTimeout(ctx, 6*time.Second)
		defer cancel()
		start := time.Now()
		err := src.Shutdown(c)
		if !errors.Is(err, natsjs.ErrCalledFromHandler) || time.Since(start) > time.Second {
			res <- fmt.Errorf("Shutdown from the handler returned %v after %v", err, time.Since(start))
		} else {
			res <- nil
		}
		return nil
	})
	errc := make(chan error, 1)
	go func() { errc <- src.Run(context.Background()) }()
	if err := <-res; err != nil {
		t.Error(err)
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
	if st := src.Stats(); st.Acked != 1 {
		t.Fatalf("the handler's message not acked: %v", st)
	}
}
