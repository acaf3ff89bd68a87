package natsjs_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/natsjs"
)

// TestThenFreesTheSlot: on a pool of one worker, what the first message's
// handler leaves with Then runs off the pool: the next messages start
// while it waits, with the slot free (Busy 0), and the first message is
// held (in flight, not acked) until it returns. The second message's
// handler leaves work too while the first's still runs: past the pool's
// bound it runs on the slot, so the third waits (Busy 1). An error left
// naks its message; a panic left is an error, not a crash.
func TestThenFreesTheSlot(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 5*time.Second, 5)
	e.publish(t, "jobs.a", 5)
	pool := newPool(t, 1)
	first, second := make(chan struct{}), make(chan struct{})
	firstIn, secondIn := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	handled := map[uint64]int{}
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		mu.Lock()
		handled[m.StreamSeq()]++
		mu.Unlock()
		switch m.StreamSeq() {
		case 1:
			return natsjs.Then(func(ctx context.Context) error {
				close(firstIn)
				<-first
				return nil
			})
		case 2:
			return natsjs.Then(func(ctx context.Context) error {
				close(secondIn)
				<-second
				return nil
			})
		case 3:
			return natsjs.Then(func(ctx context.Context) error { return errors.New("left to fail") })
		case 4:
			return natsjs.Then(func(ctx context.Context) error { panic("left to panic") })
		}
		return nil
	}, natsjs.WithBackoff(time.Hour, time.Hour))
	run(t, src)
	var freeFirst, freeSecond sync.Once
	t.Cleanup(func() { // before the Source's stop, should the test fail
		freeFirst.Do(func() { close(first) })
		freeSecond.Do(func() { close(second) })
	})

	within(t, firstIn, "the first's work started")
	within(t, secondIn, "the second's work started while the first's ran") // on the slot, the first's off it
	if st := pool.Stats(); st.Busy != 1 {
		t.Fatalf("the second's work past the bound: pool %+v, want it on the slot (Busy 1)", st)
	}
	mu.Lock()
	three := handled[3]
	mu.Unlock()
	if three != 0 {
		t.Fatal("the third message started while the second's work held the only slot")
	}
	if st := src.Stats(); st.Acked != 0 || st.InFlight < 2 {
		t.Fatalf("with work left running: %+v, want none acked and both held", st)
	}
	freeSecond.Do(func() { close(second) })
	eventually(t, 10*time.Second, "the others settled, the first still held", func() bool {
		st := src.Stats()
		return st.Acked == 2 && st.Naked == 2 && st.InFlight == 1
	})
	if st := pool.Stats(); st.Busy != 0 {
		t.Fatalf("the first's work off the pool: pool %+v, want Busy 0", st)
	}
	if info := consumerInfo(t, cons); info.NumAckPending < 1 {
		t.Fatalf("the first message acked before its work ended: %+v", info)
	}
	freeFirst.Do(func() { close(first) })
	eventually(t, 10*time.Second, "the first acked", func() bool { return src.Stats().Acked == 3 })
	mu.Lock()
	defer mu.Unlock()
	for seq := uint64(1); seq <= 5; seq++ {
		if handled[seq] != 1 {
			t.Errorf("message %d handled %d times, want once", seq, handled[seq])
		}
	}
}

// TestThenKeepsTheLease: work left with Then that lasts three AckWaits is
// not given to anyone else meanwhile (its lease is renewed), is acked once
// it returns, and Shutdown waits for it.
func TestThenKeepsTheLease(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	const ackWait = 500 * time.Millisecond
	cons := e.consumer(t, "jobs", "crewd", ackWait, 5)
	e.publish(t, "jobs.a", 1)
	pool := newPool(t, 2)
	in, release := make(chan struct{}), make(chan struct{})
	var runs sync.Map
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		if _, again := runs.LoadOrStore(strconv.Itoa(m.Attempt()), true); again || m.Attempt() != 1 {
			t.Errorf("message delivered again: attempt %d", m.Attempt())
		}
		return natsjs.Then(func(ctx context.Context) error {
			close(in)
			select {
			case <-release:
				return ctx.Err()
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		})
	})
	errc := make(chan error, 1)
	go func() { errc <- src.Run(context.Background()) }()
	within(t, in, "the work started")
	time.Sleep(3 * ackWait)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := src.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with work left running: %v, want it to wait (deadline exceeded)", err)
	}
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if st := src.Stats(); st.Acked != 1 || st.Redelivered != 0 || st.LeasesLost != 0 || st.Heartbeats == 0 {
		t.Fatalf("after the work: %+v, want it acked once, its lease renewed", st)
	}
}

// within waits up to 10 s for ch to close, else fails the test with what
// did not happen.
func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("not within 10s: %s", what)
	}
}

func TestThenOfNil(t *testing.T) {
	if err := natsjs.Then(nil); err != nil {
		t.Fatalf("Then(nil) = %v", err)
	}
	if _, ok := natsjs.ThenFunc(errors.New("x")); ok {
		t.Fatal("ThenFunc of another error")
	}
	if fn, ok := natsjs.ThenFunc(natsjs.Then(func(context.Context) error { return nil })); !ok || fn == nil {
		t.Fatal("ThenFunc of Then's error")
	}
}

// TestShutdownLetsGoOfABlockedThen: what a handler left with Then blocks,
// ignoring its context. The Source's Shutdown reaches its deadline and the
// pool stops hard; from then on the message's lease is renewed no more, so
// another consumer gets it after AckWait, and the fn's context has ended
// with ErrLeaseLost. (A handler's message in the same case is let go once
// the pool cancelled it.)
func TestShutdownLetsGoOfABlockedThen(t *testing.T) {
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
	var started atomic.Bool
	cause := make(chan error, 1)
	a := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		return natsjs.Then(func(ctx context.Context) error {
			started.Store(true)
			<-block
			cause <- context.Cause(ctx)
			return nil
		})
	})
	errc := make(chan error, 1)
	go func() { errc <- a.Run(context.Background()) }()
	eventually(t, 5*time.Second, "fn started", started.Load)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := a.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want its deadline", err)
	}
	_ = pool.Shutdown(ctx, crew.Hard)
	var got atomic.Int32
	b := newSource(t, newPool(t, 1), cons, func(ctx context.Context, m *natsjs.Msg) error { got.Add(1); return nil })
	run(t, b)
	eventually(t, 4*ackWait, "the message given to another consumer", func() bool { return got.Load() == 1 })
	close(block)
	if err := <-cause; !errors.Is(err, natsjs.ErrLeaseLost) {
		t.Fatalf("fn's context ended with %v, want ErrLeaseLost", err)
	}
	select {
	case <-errc:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return once fn had")
	}
}

// TestThenRunsWhileThePoolDrains: a Shutdown whose context ends lets go of
// what a handler left with Then only once the pool has stopped too, not as
// soon as the pool's drain begins: a handler on the pool (here one that
// runs until the test lets it return) still gets the drain, and so does
// the Then of the message beside it. While the pool drains, fn's context
// stays open.
func TestThenRunsWhileThePoolDrains(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, -1)
	e.publish(t, "jobs.a", 2)
	pool, err := crew.New(crew.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	long := make(chan struct{})
	openLong := opener(t, long)
	fnDone := make(chan struct{})
	openFn := opener(t, fnDone)
	var fnStarted, longStarted atomic.Bool
	cause := make(chan error, 1)
	a := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		if m.StreamSeq() == 2 {
			longStarted.Store(true)
			<-long
			return nil
		}
		return natsjs.Then(func(ctx context.Context) error {
			fnStarted.Store(true)
			select {
			case <-ctx.Done():
			case <-fnDone:
			}
			cause <- context.Cause(ctx)
			return nil
		})
	})
	errc := make(chan error, 1)
	go func() { errc <- a.Run(context.Background()) }()
	eventually(t, 10*time.Second, "fn and the long handler started", func() bool {
		return fnStarted.Load() && longStarted.Load()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := a.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want its deadline", err)
	}
	drained := make(chan error, 1)
	go func() { drained <- pool.Shutdown(context.Background(), crew.Drain) }()
	// Run's loop looks every tick (at most 100 ms): a second is many.
	select {
	case err := <-cause:
		t.Fatalf("fn's context ended (%v) while the pool still drained a handler", err)
	case <-time.After(time.Second):
	}
	openLong()
	if err := <-drained; err != nil {
		t.Fatalf("pool Shutdown: %v", err)
	}
	openFn()
	<-cause
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return once fn had")
	}
}
