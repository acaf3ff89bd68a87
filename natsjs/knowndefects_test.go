//go:build knowndefects

// Tests of defects found and not yet fixed: each fails today. They run only
// with -tags knowndefects; a fix moves its test out of this file.
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

// TestDeadLetterFailureAtServerLastDelivery: the consumer's MaxDeliver
// is 2; the dead-letter stream is out when the message's last delivery
// fails, and back a moment later. The README promises "if the publish
// fails, nak instead: never termed without its copy"; but a nak at the
// server's last delivery is never redelivered, so the message must still end
// in the dead-letter stream (or come back), not vanish.
func TestDeadLetterFailureAtServerLastDelivery(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 2*time.Second, 2)
	e.publish(t, "jobs.a", 1)
	pool := newPool(t, 1)
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		return errors.New("always fails")
	}, natsjs.WithBackoff(10*time.Millisecond, 10*time.Millisecond),
		natsjs.WithDeadLetter(e.js, "dead.jobs"))
	run(t, src)
	eventually(t, 10*time.Second, "the last delivery's failure", func() bool { return src.Stats().Naked >= 2 })
	e.stream(t, "dead", "dead.>") // the dead-letter stream is back
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		if streamMsgs(t, e.js, "dead") == 1 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	info := consumerInfo(t, cons)
	t.Fatalf("message lost: no dead letter 8 s after the dead-letter stream came back; stats %v; consumer ack pending %d, redelivered %d, pending %d",
		src.Stats(), info.NumAckPending, info.NumRedelivered, info.NumPending)
}

// TestShutdownFromItsOwnHandler: a handler that calls Shutdown on its
// own Source with its context waits for itself: the handler's context never
// ends (its lease is renewed), so Shutdown, the pool's slot and Run are
// stuck. The pool's own Shutdown detects the case (ErrCalledFromTask).
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
		if time.Since(start) > 5*time.Second {
			res <- errors.New("Shutdown called from the handler blocked until its caller's deadline: " + err.Error())
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
	case <-errc:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
}

// TestLongHandlerBurnsWaitingAttempts: one slot; a healthy handler
// runs 2.5 AckWaits (its lease renewed, as the README supports); meanwhile
// the next message waits in the window. The stall rule (lease.go
// handBackStalled) takes "no start for an AckWait" for a stuck pool and
// naks the waiting message: a delivery attempt spent without a run. With
// MaxDeliver 3 a failing message then runs twice, not three times, before
// it is dead-lettered (the retry the README's Watermill #645 line promises
// is skipped).
func TestLongHandlerBurnsWaitingAttempts(t *testing.T) {
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
}

// TestBlockedThenHoldsTheMessageForEver: what a handler left with
// Then blocks, ignoring its context. The Source's Shutdown times out and
// the pool stops hard; the message is still renewed, so no other consumer
// gets it for as long as the process lives (a handler's message in the
// same case is let go: renewals stop once the pool cancelled it).
func TestBlockedThenHoldsTheMessageForEver(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	const ackWait = time.Second
	cons := e.consumer(t, "jobs", "crewd", ackWait, -1)
	e.publish(t, "jobs.a", 1)
	pool, err := crew.New(crew.WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	block := make(chan struct{})
	defer close(block)
	var started atomic.Bool
	a := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		return natsjs.Then(func(context.Context) error { started.Store(true); <-block; return nil })
	})
	go a.Run(context.Background())
	eventually(t, 5*time.Second, "fn started", started.Load)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_ = a.Shutdown(ctx)
	_ = pool.Shutdown(ctx, crew.Hard)
	var got atomic.Int32
	b := newSource(t, newPool(t, 1), cons, func(ctx context.Context, m *natsjs.Msg) error { got.Add(1); return nil })
	run(t, b)
	time.Sleep(4 * ackWait)
	if got.Load() == 0 {
		t.Fatalf("4 AckWaits after the stop the message is still held by the stopped Source: %v", a.Stats())
	}
}

// TestOutagesSpendWithMaxDeliverAttempts: consumer MaxDeliver -1 (as
// the Unavailable doc advises for outages that must cost no attempt) and
// WithMaxDeliver(3). Two outages, then a real failure: settle.go says
// Unavailable spends "no attempt of ours", yet the first real failure is
// already "the last attempt" (attempt 3 >= 3) and is dead-lettered with no
// retry.
func TestOutagesSpendWithMaxDeliverAttempts(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, -1)
	e.publish(t, "jobs.a", 1)
	pool := newPool(t, 1)
	var mu sync.Mutex
	var failures int
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		if m.Attempt() <= 2 {
			return natsjs.Unavailable(errors.New("store down"))
		}
		mu.Lock()
		failures++
		mu.Unlock()
		return errors.New("real failure")
	}, natsjs.WithMaxDeliver(3), natsjs.WithUnavailableDelay(10*time.Millisecond),
		natsjs.WithBackoff(10*time.Millisecond, 10*time.Millisecond))
	run(t, src)
	eventually(t, 10*time.Second, "termed", func() bool { return src.Stats().Termed == 1 })
	mu.Lock()
	defer mu.Unlock()
	if failures < 3 {
		t.Fatalf("dead-lettered after %d real failures (WithMaxDeliver 3) and 2 outages: %v", failures, src.Stats())
	}
}
