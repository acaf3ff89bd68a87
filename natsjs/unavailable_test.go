package natsjs_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew/natsjs"
)

var errStoreDown = errors.New("record store: no responders")

// TestUnavailableRunsAgainOnTheSameDelivery: a handler that reports an
// outage (natsjs.Unavailable) four times, with WithMaxDeliver's two
// attempts and a dead-letter subject set, runs again after the short fixed
// delay each time on the same delivery (attempt 1, runs 1 to 5), never
// naked with backoff nor termed, and is acked when the outage ends.
func TestUnavailableRunsAgainOnTheSameDelivery(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	e.stream(t, "dead", "dead.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, -1)
	e.publish(t, "jobs.a", 1)
	pool := newPool(t, 2)
	var mu sync.Mutex
	var runs []string
	var at []time.Time
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		mu.Lock()
		runs = append(runs, fmt.Sprintf("%d/%d", m.Attempt(), m.Runs()))
		at = append(at, time.Now())
		mu.Unlock()
		if m.Runs() <= 4 {
			return natsjs.Unavailable(fmt.Errorf("load record: %w", errStoreDown))
		}
		return nil
	}, natsjs.WithMaxDeliver(2), natsjs.WithDeadLetter(e.js, "dead.jobs"),
		natsjs.WithBackoff(5*time.Second, time.Minute), natsjs.WithUnavailableDelay(50*time.Millisecond))
	run(t, src)
	// With the backoff of a failure the second run alone would wait 2.5 s
	// or more; four outages of 50 ms take well under that.
	eventually(t, 10*time.Second, "acked once the outage ended", func() bool { return src.Stats().Acked == 1 })
	st := src.Stats()
	if st.Unavailable != 4 || st.Naked != 0 || st.Termed != 0 || st.DeadLettered != 0 || st.Received != 1 {
		t.Fatalf("want one delivery, 4 outages and no failure: %v", st)
	}
	if n := streamMsgs(t, e.js, "dead"); n != 0 {
		t.Fatalf("%d dead letters for an outage", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(runs) != "[1/1 1/2 1/3 1/4 1/5]" {
		t.Fatalf("attempt/run %v, want [1/1 1/2 1/3 1/4 1/5]", runs)
	}
	if total := at[4].Sub(at[0]); total >= 2500*time.Millisecond {
		t.Fatalf("five runs took %v: the outages waited a failure's backoff", total)
	}
}

// TestOutagesSpendNoAttempt: consumer MaxDeliver -1 and WithMaxDeliver(3).
// Two outages, then real failures: the outages spend none of the three
// attempts, so the message fails three times (attempts 1, 2, 3) before it is
// termed.
func TestOutagesSpendNoAttempt(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, -1)
	e.publish(t, "jobs.a", 1)
	pool := newPool(t, 1)
	var mu sync.Mutex
	var failures []int
	var calls int
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls <= 2 {
			return natsjs.Unavailable(errors.New("store down"))
		}
		failures = append(failures, m.Attempt())
		return errors.New("real failure")
	}, natsjs.WithMaxDeliver(3), natsjs.WithUnavailableDelay(10*time.Millisecond),
		natsjs.WithBackoff(10*time.Millisecond, 10*time.Millisecond))
	run(t, src)
	eventually(t, 10*time.Second, "termed", func() bool { return src.Stats().Termed == 1 })
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(failures) != "[1 2 3]" {
		t.Fatalf("failed at attempts %v (want [1 2 3]) after 2 outages: %v", failures, src.Stats())
	}
}

// TestUnavailableAtTheLastDeliveryRunsAgain: with a finite MaxDeliver on
// the consumer the server never delivers a message again after its last
// delivery; an outage then spends nothing either: the message runs again on
// that delivery until the outage ends, and is acked, not dead-lettered.
func TestUnavailableAtTheLastDeliveryRunsAgain(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	e.stream(t, "dead", "dead.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, 2)
	e.publish(t, "jobs.a", 1)
	pool := newPool(t, 1)
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		switch {
		case m.Attempt() == 1:
			return errors.New("a real failure first")
		case m.Runs() <= 3:
			return natsjs.Unavailable(errStoreDown)
		}
		return nil
	}, natsjs.WithDeadLetter(e.js, "dead.jobs"), natsjs.WithUnavailableDelay(10*time.Millisecond),
		natsjs.WithBackoff(10*time.Millisecond, 10*time.Millisecond))
	run(t, src)
	eventually(t, 10*time.Second, "acked at the last delivery", func() bool { return src.Stats().Acked == 1 })
	if st := src.Stats(); st.Unavailable != 3 || st.Naked != 1 || st.DeadLettered != 0 || st.Termed != 0 {
		t.Fatalf("stats: %v", st)
	}
}

// TestStopDuringAnOutageHandsBack: a message waiting out an outage's delay
// (an hour) is handed back at once by a stop, as one not started: Shutdown
// does not wait the delay, and another consumer runs it.
func TestStopDuringAnOutageHandsBack(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, -1)
	e.publish(t, "jobs.a", 1)
	a := newSource(t, newPool(t, 1), cons, func(ctx context.Context, m *natsjs.Msg) error {
		return natsjs.Unavailable(errStoreDown)
	}, natsjs.WithUnavailableDelay(time.Hour))
	run(t, a)
	eventually(t, 10*time.Second, "the outage reported", func() bool { return a.Stats().Unavailable == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if st := a.Stats(); st.HandedBack != 1 || st.InFlight != 0 {
		t.Fatalf("stats: %v", st)
	}
	var attempt atomic.Int32
	b := newSource(t, newPool(t, 1), cons, func(ctx context.Context, m *natsjs.Msg) error {
		attempt.Store(int32(m.Attempt()))
		return nil
	})
	run(t, b)
	eventually(t, 10*time.Second, "b runs it", func() bool { return b.Stats().Acked == 1 })
	if n := attempt.Load(); n != 2 {
		t.Fatalf("b saw attempt %d, want 2", n)
	}
}

func TestUnavailableWrapsAndMatches(t *testing.T) {
	err := natsjs.Unavailable(errStoreDown)
	if !errors.Is(err, natsjs.ErrUnavailable) || !errors.Is(err, errStoreDown) {
		t.Fatalf("%v: want both ErrUnavailable and its cause", err)
	}
	if natsjs.Unavailable(nil) != nil {
		t.Fatal("Unavailable(nil) is not nil")
	}
}

// TestOutageLongerThanAckWaitSpendsNoAttempt: an unavailable delay longer
// than AckWait (3 s against 1 s). While the message waits out the outage no
// handler starts and the message waits longer than an AckWait, but the pool
// is not stuck: nothing is waiting for a slot. The message is renewed, runs
// again on the same delivery (attempt 1, run 2) and is acked; the stall rule
// does not hand it back, which would spend a delivery.
func TestOutageLongerThanAckWaitSpendsNoAttempt(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", time.Second, -1)
	e.publish(t, "jobs.a", 1)
	var mu sync.Mutex
	var runs []string
	src := newSource(t, newPool(t, 1), cons, func(ctx context.Context, m *natsjs.Msg) error {
		mu.Lock()
		runs = append(runs, fmt.Sprintf("%d/%d", m.Attempt(), m.Runs()))
		mu.Unlock()
		if m.Attempt() == 1 && m.Runs() == 1 {
			return natsjs.Unavailable(errStoreDown)
		}
		return nil
	}, natsjs.WithUnavailableDelay(3*time.Second))
	run(t, src)
	eventually(t, 20*time.Second, "acked", func() bool { return src.Stats().Acked == 1 })
	mu.Lock()
	defer mu.Unlock()
	if st := src.Stats(); fmt.Sprint(runs) != "[1/1 1/2]" || st.HandedBack != 0 {
		t.Fatalf("attempt/run %v, want [1/1 1/2] on one delivery; %v", runs, st)
	}
}

// TestStopWaitsOutAnOutageAtTheLastDelivery: a message at the consumer's
// last delivery (MaxDeliver 1) cannot be handed back, so a stop keeps it
// through its outage; it still waits the unavailable delay (3 s) between
// runs, as outside a stop, rather than being run again at every turn of
// the stop's loop against a store that is down. Once the outage ends it
// runs again, is acked, and Shutdown returns.
func TestStopWaitsOutAnOutageAtTheLastDelivery(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, 1)
	e.publish(t, "jobs.a", 1)
	var runs atomic.Int32
	var up atomic.Bool
	src := newSource(t, newPool(t, 1), cons, func(ctx context.Context, m *natsjs.Msg) error {
		runs.Add(1)
		if !up.Load() {
			return natsjs.Unavailable(errStoreDown)
		}
		return nil
	}, natsjs.WithUnavailableDelay(3*time.Second))
	errc := make(chan error, 1)
	go func() { errc <- src.Run(context.Background()) }()
	eventually(t, 10*time.Second, "the outage reported", func() bool { return src.Stats().Unavailable == 1 })
	shut := make(chan error, 1)
	go func() { shut <- src.Shutdown(context.Background()) }()
	// Well within the delay, also on a loaded machine: one run so far.
	time.Sleep(1800 * time.Millisecond)
	if n := runs.Load(); n != 1 {
		t.Fatalf("%d runs within 1.8 s of a 3 s unavailable delay: %v", n, src.Stats())
	}
	up.Store(true)
	select {
	case err := <-shut:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Shutdown did not return once the outage ended")
	}
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st := src.Stats(); st.Acked != 1 || st.Termed != 0 || st.HandedBack != 0 {
		t.Fatalf("stats: %v", st)
	}
}
