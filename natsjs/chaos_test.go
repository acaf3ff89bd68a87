// Long chaos and stress runs (handlers that panic, exit, fail or report
// outages on a pool paused and resized; concurrent stops; a consumer
// recreated).
package natsjs_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/natsjs"
)

// TestConcurrentShutdownsHandEverythingBack: Shutdown three times at
// once (one with an expired context) while messages flow, then the pool's
// DrainThenHard; a second Source must then get every message not acked
// well within AckWait (30 s): nothing left held by the first.
func TestConcurrentShutdownsHandEverythingBack(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, -1)
	const n = 300
	e.publish(t, "jobs.a", n)
	done := newSeen()
	h := func(ctx context.Context, m *natsjs.Msg) error {
		select {
		case <-time.After(time.Duration(rand.N(20)) * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		if m.StreamSeq()%7 == 0 {
			return natsjs.Then(func(context.Context) error { time.Sleep(5 * time.Millisecond); done.add(m.StreamSeq()); return nil })
		}
		done.add(m.StreamSeq())
		return nil
	}
	pool, err := crew.New(crew.WithWorkers(4))
	if err != nil {
		t.Fatal(err)
	}
	a := newSource(t, pool, cons, h)
	errc := make(chan error, 1)
	go func() { errc <- a.Run(context.Background()) }()
	eventually(t, 10*time.Second, "some acked", func() bool { return a.Stats().Acked >= 40 })
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := time.Duration(i) * 2 * time.Second
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			_ = a.Shutdown(ctx)
		}()
	}
	go func() { _ = pool.Shutdown(context.Background(), crew.DrainThenHard) }()
	wg.Wait()
	select {
	case <-errc:
	case <-time.After(5 * time.Second):
		t.Fatalf("Run did not return: %v", a.Stats())
	}
	b := newSource(t, newPool(t, 4), cons, h)
	run(t, b)
	deadline := time.Now().Add(10 * time.Second)
	for done.distinct() < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if done.distinct() < n {
		t.Fatalf("%d of %d done 10 s after the stop; a %v; b %v; consumer %+v", done.distinct(), n, a.Stats(), b.Stats(), consumerInfo(t, cons).NumAckPending)
	}
}

// TestChaosHandlers: handlers that panic, leave a Then that panics,
// call runtime.Goexit, report outages or fail, on their first attempts,
// with WithDoubleAck, a pool resized and paused while the Source pulls:
// every message ends acked, and Run returns.
func TestChaosHandlers(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 2*time.Second, -1)
	const n = 400
	e.publish(t, "jobs.a", n)
	done := newSeen()
	pool, err := crew.New(crew.WithWorkers(4))
	if err != nil {
		t.Fatal(err)
	}
	var running, most atomic.Int32
	h := func(ctx context.Context, m *natsjs.Msg) error {
		r := running.Add(1)
		defer running.Add(-1)
		for {
			old := most.Load()
			if r <= old || most.CompareAndSwap(old, r) {
				break
			}
		}
		time.Sleep(time.Duration(rand.N(3)) * time.Millisecond)
		if m.Attempt() == 1 && m.Runs() == 1 {
			switch m.StreamSeq() % 6 {
			case 0:
				panic("boom")
			case 1:
				return natsjs.Then(func(context.Context) error { panic("then boom") })
			case 2:
				return natsjs.Unavailable(errors.New("down"))
			case 3:
				return errors.New("fail")
			case 4:
				runtime.Goexit()
			}
		}
		if m.StreamSeq()%2 == 0 {
			return natsjs.Then(func(context.Context) error { done.add(m.StreamSeq()); return nil })
		}
		done.add(m.StreamSeq())
		return nil
	}
	a := newSource(t, pool, cons, h, natsjs.WithDoubleAck(), natsjs.WithBackoff(time.Millisecond, 5*time.Millisecond),
		natsjs.WithUnavailableDelay(time.Millisecond))
	errc := make(chan error, 1)
	go func() { errc <- a.Run(context.Background()) }()
	go func() {
		for i := 0; done.distinct() < n && i < 200; i++ {
			time.Sleep(20 * time.Millisecond)
			switch i % 4 {
			case 0:
				_ = pool.Resize(2)
			case 1:
				_ = pool.Pause()
			case 2:
				_ = pool.Resume()
			case 3:
				_ = pool.Resize(4)
			}
		}
		_ = pool.Resume()
		_ = pool.Resize(4)
	}()
	eventually(t, 30*time.Second, "all done", func() bool { return done.distinct() == n })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v; %v", err, a.Stats())
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	_ = pool.Shutdown(ctx, crew.Drain)
	if most.Load() > 4 {
		t.Fatalf("%d handlers at once on a pool of 4", most.Load())
	}
	eventually(t, 10*time.Second, "nothing pending", func() bool {
		info := consumerInfo(t, cons)
		return info.NumAckPending == 0 && info.NumPending == 0
	})
	t.Logf("%v", a.Stats())
}

// TestConsumerDeletedAndRecreated: the consumer is deleted while
// handlers run and recreated; the Source goes on with the new one and
// Shutdown returns.
func TestConsumerDeletedAndRecreated(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 2*time.Second, -1)
	e.publish(t, "jobs.a", 50)
	done := newSeen()
	pool := newPool(t, 4)
	a := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		time.Sleep(20 * time.Millisecond)
		done.add(m.StreamSeq())
		return nil
	})
	run(t, a)
	eventually(t, 10*time.Second, "some done", func() bool { return done.distinct() >= 10 })
	if err := e.js.DeleteConsumer(context.Background(), "jobs", "crewd"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	e.consumer(t, "jobs", "crewd", 2*time.Second, -1)
	eventually(t, 15*time.Second, "all done after the consumer came back", func() bool { return done.distinct() == 50 })
	e.publish(t, "jobs.a", 10)
	eventually(t, 15*time.Second, "new ones done", func() bool { return done.distinct() == 60 })
}
