package natsjs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew/natsjs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestSourceRunsEveryMessage(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 5*time.Second, 5)
	const n = 2000
	e.publish(t, "jobs.a", n)
	pool := newPool(t, 4)
	got := newSeen()
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		if m.Attempt() != 1 || m.Subject() != "jobs.a" || len(m.Data()) == 0 || m.Raw() == nil {
			t.Errorf("message: attempt %d subject %q data %q", m.Attempt(), m.Subject(), m.Data())
		}
		got.add(m.StreamSeq())
		return nil
	})
	run(t, src)
	eventually(t, 20*time.Second, "every message acked", func() bool { return src.Stats().Acked == n })
	if got.distinct() != n {
		t.Fatalf("distinct %d, want %d", got.distinct(), n)
	}
	eventually(t, 10*time.Second, "the server sees every ack", func() bool {
		info := consumerInfo(t, cons)
		return info.NumAckPending == 0 && info.NumPending == 0
	})
	st := src.Stats()
	if st.Received != n || st.Naked != 0 || st.Redelivered != 0 || st.InFlight != 0 {
		t.Fatalf("stats: %v", st)
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 5*time.Second, 5)
	noAck, err := e.js.CreateOrUpdateConsumer(context.Background(), "jobs", jetstream.ConsumerConfig{Durable: "noack", AckPolicy: jetstream.AckNonePolicy})
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool(t, 1)
	h := func(context.Context, *natsjs.Msg) error { return nil }
	cases := []struct {
		name string
		call func() (*natsjs.Source, error)
	}{
		{"nil pool", func() (*natsjs.Source, error) { return natsjs.New(nil, cons, h) }},
		{"nil consumer", func() (*natsjs.Source, error) { return natsjs.New(pool, nil, h) }},
		{"nil handler", func() (*natsjs.Source, error) { return natsjs.New(pool, cons, nil) }},
		{"nil option", func() (*natsjs.Source, error) { return natsjs.New(pool, cons, h, nil) }},
		{"ack none", func() (*natsjs.Source, error) { return natsjs.New(pool, noAck, h) }},
		{"negative window", func() (*natsjs.Source, error) { return natsjs.New(pool, cons, h, natsjs.WithWindow(-1)) }},
		{"zero backoff", func() (*natsjs.Source, error) { return natsjs.New(pool, cons, h, natsjs.WithBackoff(0, time.Second)) }},
		{"max below base", func() (*natsjs.Source, error) {
			return natsjs.New(pool, cons, h, natsjs.WithBackoff(time.Second, time.Millisecond))
		}},
		{"dead letter without subject", func() (*natsjs.Source, error) { return natsjs.New(pool, cons, h, natsjs.WithDeadLetter(e.js, "")) }},
		{"dead letter to a wildcard", func() (*natsjs.Source, error) {
			return natsjs.New(pool, cons, h, natsjs.WithDeadLetter(e.js, "dead.>"))
		}},
		{"dead letter to an empty token", func() (*natsjs.Source, error) {
			return natsjs.New(pool, cons, h, natsjs.WithDeadLetter(e.js, "dead..x"))
		}},
		{"dead letter with a space", func() (*natsjs.Source, error) {
			return natsjs.New(pool, cons, h, natsjs.WithDeadLetter(e.js, "dead x"))
		}},
		{"dead letter over 4 KB", func() (*natsjs.Source, error) {
			return natsjs.New(pool, cons, h, natsjs.WithDeadLetter(e.js, strings.Repeat("d", 5000)))
		}},
		{"dead letter without js", func() (*natsjs.Source, error) { return natsjs.New(pool, cons, h, natsjs.WithDeadLetter(nil, "dead")) }},
		{"max deliver 0", func() (*natsjs.Source, error) { return natsjs.New(pool, cons, h, natsjs.WithMaxDeliver(0)) }},
		{"heartbeat 0", func() (*natsjs.Source, error) { return natsjs.New(pool, cons, h, natsjs.WithHeartbeat(0)) }},
		{"heartbeat 1", func() (*natsjs.Source, error) { return natsjs.New(pool, cons, h, natsjs.WithHeartbeat(1)) }},
		{"nil logger", func() (*natsjs.Source, error) { return natsjs.New(pool, cons, h, natsjs.WithLogger(nil)) }},
		{"short pull expiry", func() (*natsjs.Source, error) {
			return natsjs.New(pool, cons, h, natsjs.WithPullExpiry(time.Millisecond))
		}},
		{"nil conn", func() (*natsjs.Source, error) { return natsjs.New(pool, cons, h, natsjs.WithConn(nil)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src, err := c.call()
			if !errors.Is(err, natsjs.ErrInvalidOption) || src != nil {
				t.Fatalf("got %v, %v; want ErrInvalidOption", src, err)
			}
		})
	}
}

func TestRunTwiceAndShutdownBeforeRun(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 5*time.Second, 5)
	pool := newPool(t, 1)
	h := func(context.Context, *natsjs.Msg) error { return nil }

	early := newSource(t, pool, cons, h)
	if err := early.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := early.Run(context.Background()); err != nil {
		t.Fatalf("Run after Shutdown: %v", err)
	}

	src := newSource(t, pool, cons, h)
	errc := make(chan error, 2)
	for range 2 {
		go func() { errc <- src.Run(context.Background()) }()
	}
	select {
	case err := <-errc:
		if !errors.Is(err, natsjs.ErrRunning) {
			t.Fatalf("second Run: %v, want ErrRunning", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("neither Run returned within 10 s")
	}
	if err := src.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestRunStopsWhenItsContextEnds(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 5*time.Second, 5)
	pool := newPool(t, 2)
	src := newSource(t, pool, cons, func(context.Context, *natsjs.Msg) error { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- src.Run(ctx) }()
	e.publish(t, "jobs.a", 10)
	eventually(t, 10*time.Second, "acked", func() bool { return src.Stats().Acked == 10 })
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10 s of its context's end")
	}
}

func TestRunReturnsTheClosedConnection(t *testing.T) {
	for _, withConn := range []bool{false, true} {
		t.Run(fmt.Sprintf("WithConn=%v", withConn), func(t *testing.T) {
			e := newEnv(t)
			e.stream(t, "jobs", "jobs.>")
			cons := e.consumer(t, "jobs", "crewd", 5*time.Second, 5)
			pool := newPool(t, 2)
			opts := []natsjs.Option{natsjs.WithPullExpiry(100 * time.Millisecond)}
			if withConn {
				// The Source sends no pull on a connection that is not
				// connected: it must still see one closed for good.
				opts = append(opts, natsjs.WithConn(e.nc))
			}
			src := newSource(t, pool, cons, func(context.Context, *natsjs.Msg) error { return nil }, opts...)
			errc := make(chan error, 1)
			go func() { errc <- src.Run(context.Background()) }()
			e.nc.Close()
			select {
			case err := <-errc:
				if !errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, jetstream.ErrConnectionClosed) {
					t.Fatalf("Run returned %v after the connection closed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return within 10 s of the connection's close")
			}
		})
	}
}

// TestDoubleAckConfirmedBeforeShutdownReturns: with WithDoubleAck the
// confirmation is awaited off the pool's slot, but a message stays held
// until it comes: once Shutdown returns, every message handled is counted
// acked and the server holds none unacknowledged.
func TestDoubleAckConfirmedBeforeShutdownReturns(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 5*time.Second, 5)
	const n = 1000
	e.publish(t, "jobs.a", n)
	pool := newPool(t, 4)
	got := newSeen()
	last := make(chan struct{})
	var closeLast sync.Once // two handlers may both see the n-th
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		got.add(m.StreamSeq())
		if got.distinct() == n {
			closeLast.Do(func() { close(last) })
		}
		return nil
	}, natsjs.WithDoubleAck())
	errc := make(chan error, 1)
	go func() { errc <- src.Run(context.Background()) }()
	select { // Shutdown as the last handler returns: its ack not confirmed yet
	case <-last:
	case <-time.After(20 * time.Second):
		t.Fatalf("%d of %d messages handled", got.distinct(), n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := src.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if st := src.Stats(); st.Acked != n || st.InFlight != 0 {
		t.Fatalf("after Shutdown: %v, want %d acked and none in flight", st, n)
	}
	if info := consumerInfo(t, cons); info.NumAckPending != 0 {
		t.Fatalf("after Shutdown the server still waits for %d acks", info.NumAckPending)
	}
}
