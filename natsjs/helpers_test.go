package natsjs_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/natsjs"
	"github.com/crew-go/crew/natsjs/natstest"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// startServer runs an embedded JetStream server on loopback with file
// storage in dir, on port (-1: any), shut down when t ends.
func startServer(t testing.TB, dir string, port int) *server.Server {
	t.Helper()
	return natstest.Start(t, natstest.Options(dir, port))
}

// env is a server, a connection and a stream for one test.
type env struct {
	srv *server.Server
	nc  *nats.Conn
	js  jetstream.JetStream
	dir string
}

// portOf returns the port of a server's listener address.
func portOf(addr net.Addr) int { return addr.(*net.TCPAddr).Port }

// restart stops the server and starts another on the same port and store.
func (e *env) restart(t testing.TB) {
	t.Helper()
	addr := e.srv.Addr()
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
	e.srv = startServer(t, e.dir, portOf(addr))
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{dir: t.TempDir()}
	e.srv = startServer(t, e.dir, -1)
	nc, err := nats.Connect(e.srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	e.nc = nc
	// Generous bounds on the JetStream API (5 s by default): on a loaded
	// machine a file-store write or a consumer's info can take seconds,
	// and a test must fail on a wrong answer, not a slow one.
	e.js, err = jetstream.New(nc, jetstream.WithDefaultTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.nc.Close()
		e.srv.Shutdown()
		e.srv.WaitForShutdown()
	})
	return e
}

func (e *env) stream(t testing.TB, name string, subjects ...string) jetstream.Stream {
	t.Helper()
	st, err := e.js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: name, Subjects: subjects, Storage: jetstream.FileStorage,
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (e *env) consumer(t testing.TB, stream, name string, ackWait time.Duration, maxDeliver int) jetstream.Consumer {
	t.Helper()
	c, err := e.js.CreateOrUpdateConsumer(context.Background(), stream, jetstream.ConsumerConfig{
		Durable:       name,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxDeliver:    maxDeliver,
		MaxAckPending: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *env) publish(t testing.TB, subject string, n int) {
	t.Helper()
	ctx := context.Background()
	futures := make([]jetstream.PubAckFuture, 0, 256)
	for i := range n {
		f, err := e.js.PublishAsync(subject, fmt.Appendf(nil, "%d", i))
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, f)
		if len(futures) == cap(futures) || i == n-1 {
			for _, f := range futures {
				select {
				case <-f.Ok():
				case err := <-f.Err():
					t.Fatal(err)
				case <-ctx.Done():
				}
			}
			futures = futures[:0]
		}
	}
}

func newPool(t testing.TB, workers int) *crew.Pool {
	t.Helper()
	p, err := crew.New(crew.WithWorkers(workers))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Shutdown(context.Background(), crew.Drain); err != nil {
			t.Error(err)
		}
	})
	return p
}

// seen records completions by stream sequence.
type seen struct {
	mu   sync.Mutex
	runs map[uint64]int
}

func newSeen() *seen { return &seen{runs: map[uint64]int{}} }

func (s *seen) add(seq uint64) {
	s.mu.Lock()
	s.runs[seq]++
	s.mu.Unlock()
}

func (s *seen) distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runs)
}

func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// run starts src.Run and registers a cleanup that shuts it down and checks
// what Run returned.
func run(t testing.TB, src *natsjs.Source) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- src.Run(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := src.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
			return // Run is stuck with a handler: do not wait for it
		}
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func newSource(t testing.TB, pool *crew.Pool, cons jetstream.Consumer, h natsjs.Handler, opts ...natsjs.Option) *natsjs.Source {
	t.Helper()
	src, err := natsjs.New(pool, cons, h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func consumerInfo(t testing.TB, cons jetstream.Consumer) *jetstream.ConsumerInfo {
	t.Helper()
	info, err := cons.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func streamMsgs(t testing.TB, js jetstream.JetStream, stream string) uint64 {
	t.Helper()
	st, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// opener closes ch once, from the test or from its cleanup, so that a
// failed test does not leave handlers blocked on ch (and its cleanup
// waiting for them). Call it after run, so that its cleanup runs first.
func opener(t testing.TB, ch chan struct{}) func() {
	var once sync.Once
	open := func() { once.Do(func() { close(ch) }) }
	t.Cleanup(open)
	return open
}
