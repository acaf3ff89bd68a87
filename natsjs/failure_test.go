package natsjs_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew/natsjs"
	"github.com/nats-io/nats.go"
)

func TestFailureIsNakedWithBackoffThenRetried(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, 5)
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
		if m.Attempt() < 3 {
			return errors.New("not yet")
		}
		return nil
	}, natsjs.WithBackoff(100*time.Millisecond, time.Second))
	run(t, src)
	eventually(t, 10*time.Second, "acked on the third attempt", func() bool { return src.Stats().Acked == 1 })
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(attempts) != "[1 2 3]" {
		t.Fatalf("attempts %v, want [1 2 3]", attempts)
	}
	// The nak after attempt 2 asks for 100ms·2 less up to half: >= 100 ms.
	if gap := at[2].Sub(at[1]); gap < 100*time.Millisecond {
		t.Fatalf("retry after %v, want the backoff of at least 100 ms", gap)
	}
	if st := src.Stats(); st.Naked != 2 || st.Redelivered != 2 || st.Termed != 0 {
		t.Fatalf("stats: %v", st)
	}
}

// TestRetryAfterTakesTheHandlersDelay: a failure marked RetryAfter is
// naked with the handler's delay, not the Source's backoff (1 ms here):
// the next delivery comes no sooner than the 400 ms asked for.
func TestRetryAfterTakesTheHandlersDelay(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, 5)
	e.publish(t, "jobs.a", 1)
	pool := newPool(t, 1)
	var mu sync.Mutex
	var at []time.Time
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		if m.Attempt() == 1 {
			return natsjs.RetryAfter(errors.New("later"), 400*time.Millisecond)
		}
		return nil
	}, natsjs.WithBackoff(time.Millisecond, time.Millisecond))
	run(t, src)
	eventually(t, 10*time.Second, "acked on the second attempt", func() bool { return src.Stats().Acked == 1 })
	mu.Lock()
	defer mu.Unlock()
	if gap := at[1].Sub(at[0]); gap < 400*time.Millisecond {
		t.Fatalf("redelivered after %v, want the handler's 400 ms", gap)
	}
	if st := src.Stats(); st.Naked != 1 {
		t.Fatalf("stats: %v", st)
	}
	if natsjs.RetryAfter(nil, time.Second) != nil {
		t.Fatal("RetryAfter(nil) is not nil")
	}
}

func TestPanicIsAFailureNotACrash(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, 5)
	e.publish(t, "jobs.a", 1)
	pool := newPool(t, 1)
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		if m.Attempt() == 1 {
			panic("boom")
		}
		return nil
	}, natsjs.WithBackoff(10*time.Millisecond, 10*time.Millisecond))
	run(t, src)
	eventually(t, 10*time.Second, "acked after the panic", func() bool { return src.Stats().Acked == 1 })
	if st := src.Stats(); st.Naked != 1 {
		t.Fatalf("stats: %v", st)
	}
}

// TestPoisonMessageEndsInDeadLetter: a message that always fails is tried
// MaxDeliver times, every retry taken (Watermill #645 skipped them), then
// published to the dead-letter subject with its payload and the reason, and
// termed, while the other messages flow.
func TestPoisonMessageEndsInDeadLetter(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	e.stream(t, "dead", "dead.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, 3)
	const n = 200
	e.publish(t, "jobs.a", n/2)
	poison := nats.NewMsg("jobs.poison")
	poison.Data = []byte("poison")
	poison.Header.Set("X-Id", "p1")
	poison.Header.Set(nats.MsgIdHdr, "p1")
	ack, err := e.js.PublishMsg(context.Background(), poison)
	if err != nil {
		t.Fatal(err)
	}
	e.publish(t, "jobs.a", n/2)
	pool := newPool(t, 4)
	var mu sync.Mutex
	var poisonAttempts []int
	good := newSeen()
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		if m.Subject() == "jobs.poison" {
			mu.Lock()
			poisonAttempts = append(poisonAttempts, m.Attempt())
			mu.Unlock()
			return errors.New("always fails")
		}
		good.add(m.StreamSeq())
		return nil
	}, natsjs.WithBackoff(10*time.Millisecond, 20*time.Millisecond), natsjs.WithDeadLetter(e.js, "dead.jobs"))
	run(t, src)
	eventually(t, 20*time.Second, "the poison dead-lettered and the rest acked", func() bool {
		st := src.Stats()
		return st.DeadLettered == 1 && st.Acked == n
	})
	if good.distinct() != n {
		t.Fatalf("%d good messages ran, want %d", good.distinct(), n)
	}
	mu.Lock()
	if fmt.Sprint(poisonAttempts) != "[1 2 3]" {
		t.Fatalf("poison attempts %v, want [1 2 3]", poisonAttempts)
	}
	mu.Unlock()
	dead, err := e.js.Stream(context.Background(), "dead")
	if err != nil {
		t.Fatal(err)
	}
	dl, err := dead.GetMsg(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		natsjs.HeaderReason:    "always fails",
		natsjs.HeaderAttempts:  "3",
		natsjs.HeaderStream:    "jobs",
		natsjs.HeaderStreamSeq: strconv.FormatUint(ack.Sequence, 10),
		natsjs.HeaderSubject:   "jobs.poison",
		natsjs.HeaderConsumer:  "crewd",
		"X-Id":                 "p1",
		nats.MsgIdHdr:          "",
	}
	for k, v := range want {
		if got := dl.Header.Get(k); got != v {
			t.Errorf("dead letter header %s = %q, want %q", k, got, v)
		}
	}
	if string(dl.Data) != "poison" || dl.Subject != "dead.jobs" {
		t.Errorf("dead letter %q on %q", dl.Data, dl.Subject)
	}
	if st := src.Stats(); st.Termed != 1 || st.Naked != 2 {
		t.Fatalf("stats: %v", st)
	}
	eventually(t, 10*time.Second, "nothing left pending", func() bool {
		info := consumerInfo(t, cons)
		return info.NumAckPending == 0 && info.NumPending == 0
	})
}

// TestDeadLetterFailureDoesNotTerm: when the dead-letter publish fails, the
// message is naked, not termed without its copy.
func TestDeadLetterFailureDoesNotTerm(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, -1)
	e.publish(t, "jobs.a", 1)
	pool := newPool(t, 1)
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		return errors.New("always fails")
	}, natsjs.WithBackoff(10*time.Millisecond, 10*time.Millisecond),
		natsjs.WithMaxDeliver(2), natsjs.WithDeadLetter(e.js, "nowhere.dead"))
	run(t, src)
	eventually(t, 20*time.Second, "a fourth attempt", func() bool { return src.Stats().Received >= 4 })
	if st := src.Stats(); st.Termed != 0 || st.DeadLettered != 0 {
		t.Fatalf("termed without a dead letter: %v", st)
	}
}

// TestDeadLetterAtTheLastDeliveryWaitsForItsStream: the consumer's
// MaxDeliver is 2 and the dead-letter stream is missing when the message's
// last delivery fails. A nak then would leave it to no one (the server never
// delivers it again), so the Source holds it and publishes the dead letter
// again until the stream, back a moment later, stores it; then terms it.
func TestDeadLetterAtTheLastDeliveryWaitsForItsStream(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 2*time.Second, 2)
	e.publish(t, "jobs.a", 1)
	pool := newPool(t, 1)
	var calls atomic.Int32
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		calls.Add(1)
		return errors.New("always fails")
	}, natsjs.WithBackoff(10*time.Millisecond, 10*time.Millisecond),
		natsjs.WithUnavailableDelay(100*time.Millisecond),
		natsjs.WithDeadLetter(e.js, "dead.jobs"))
	run(t, src)
	// The last run returned and its settlement (the failed publish) is
	// done once the pool's worker is free again.
	eventually(t, 10*time.Second, "the last delivery's failure settled", func() bool {
		return calls.Load() == 2 && pool.Stats().Busy == 0
	})
	// Longer than AckWait: the held message's lease is renewed meanwhile.
	time.Sleep(3 * time.Second)
	if st := src.Stats(); st.InFlight != 1 || st.Termed != 0 || st.Naked != 1 {
		t.Fatalf("the message is not held for its dead letter: %v", st)
	}
	e.stream(t, "dead", "dead.>") // the dead-letter stream is back
	eventually(t, 10*time.Second, "dead-lettered and termed", func() bool {
		st := src.Stats()
		return st.DeadLettered == 1 && st.Termed == 1 && st.InFlight == 0
	})
	if n := streamMsgs(t, e.js, "dead"); n != 1 {
		t.Fatalf("%d dead letters, want 1", n)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("the handler ran %d times, want 2", n)
	}
}
