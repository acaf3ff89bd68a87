package natsjs_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew/natsjs"
)

var errStoreDown = errors.New("record store: no responders")

// TestUnavailableIsHandedBackNotFailed: a handler that reports an outage
// (natsjs.Unavailable) four times, past WithMaxDeliver's two attempts and
// with a dead-letter subject set, is handed back each time after the short
// fixed delay, never naked with backoff nor termed, and is acked when the
// outage ends.
func TestUnavailableIsHandedBackNotFailed(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	e.stream(t, "dead", "dead.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, -1)
	e.publish(t, "jobs.a", 1)
	pool := newPool(t, 2)
	var mu sync.Mutex
	var attempts []int
	var at []time.Time
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		mu.Lock()
		attempts = append(attempts, m.Attempt())
		at = append(at, time.Now())
		mu.Unlock()
		if m.Attempt() <= 4 {
			return natsjs.Unavailable(fmt.Errorf("load record: %w", errStoreDown))
		}
		return nil
	}, natsjs.WithMaxDeliver(2), natsjs.WithDeadLetter(e.js, "dead.jobs"),
		natsjs.WithBackoff(5*time.Second, time.Minute), natsjs.WithUnavailableDelay(50*time.Millisecond))
	run(t, src)
	// With the backoff of a failure the second attempt alone would wait
	// 2.5 s or more; four hand-backs at 50 ms take well under that.
	eventually(t, 10*time.Second, "acked once the outage ended", func() bool { return src.Stats().Acked == 1 })
	st := src.Stats()
	if st.Unavailable != 4 || st.Naked != 0 || st.Termed != 0 || st.DeadLettered != 0 {
		t.Fatalf("want 4 hand-backs for the outage and no failure: %v", st)
	}
	if n := streamMsgs(t, e.js, "dead"); n != 0 {
		t.Fatalf("%d dead letters for an outage", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(attempts) != "[1 2 3 4 5]" {
		t.Fatalf("attempts %v, want [1 2 3 4 5]", attempts)
	}
	if total := at[4].Sub(at[0]); total >= 2500*time.Millisecond {
		t.Fatalf("five deliveries took %v: the hand-backs waited a failure's backoff", total)
	}
}

// TestUnavailableAtTheLastDeliveryIsKept: with a finite MaxDeliver on the
// consumer the server never delivers a message again after its last
// delivery, so an outage then cannot be handed back: the message goes to
// the dead-letter subject rather than nowhere.
func TestUnavailableAtTheLastDeliveryIsKept(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	e.stream(t, "dead", "dead.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, 2)
	e.publish(t, "jobs.a", 1)
	pool := newPool(t, 1)
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		return natsjs.Unavailable(errStoreDown)
	}, natsjs.WithDeadLetter(e.js, "dead.jobs"), natsjs.WithUnavailableDelay(10*time.Millisecond))
	run(t, src)
	eventually(t, 10*time.Second, "dead-lettered at the last delivery", func() bool { return src.Stats().DeadLettered == 1 })
	if st := src.Stats(); st.Unavailable != 1 || st.Naked != 0 {
		t.Fatalf("stats: %v", st)
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
