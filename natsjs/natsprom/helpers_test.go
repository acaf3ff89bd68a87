package natsprom_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/natsjs"
	"github.com/crew-go/crew/natsjs/natstest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// fixture is an embedded server with a stream "jobs" holding n messages, a
// consumer "crewd" and a Source on a pool of 2, not running.
type fixture struct {
	src     *natsjs.Source
	cleanup func()
}

func newFixture(n int) (*fixture, error) {
	dir, err := os.MkdirTemp("", "natsprom-")
	if err != nil {
		return nil, err
	}
	srv, err := natstest.Run(natstest.Options(dir, -1))
	if err != nil {
		return nil, err
	}
	f := &fixture{}
	var nc *nats.Conn
	var pool *crew.Pool
	f.cleanup = func() {
		if pool != nil {
			_ = pool.Shutdown(context.Background(), crew.Drain)
		}
		if nc != nil {
			nc.Close()
		}
		srv.Shutdown()
		srv.WaitForShutdown()
		_ = os.RemoveAll(dir)
	}
	fail := func(err error) (*fixture, error) {
		f.cleanup()
		return nil, err
	}
	if nc, err = nats.Connect(srv.ClientURL()); err != nil {
		return fail(err)
	}
	if pool, err = crew.New(crew.WithWorkers(2)); err != nil {
		return fail(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "jobs", Subjects: []string{"jobs.>"}}); err != nil {
		return fail(err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, "jobs", jetstream.ConsumerConfig{Durable: "crewd", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		return fail(err)
	}
	for range n {
		if _, err := js.Publish(ctx, "jobs.a", []byte("x")); err != nil {
			return fail(err)
		}
	}
	// The consumer, made before the publishes, counts them as pending a
	// moment after the stream has stored them: wait for the count, so that
	// a lag read at once is exact.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		info, err := cons.Info(ctx)
		if err != nil {
			return fail(err)
		}
		if info.NumPending == uint64(n) {
			break
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("the consumer counts %d pending of %d published after 10 s", info.NumPending, n))
		}
	}
	if f.src, err = natsjs.New(pool, cons, func(context.Context, *natsjs.Msg) error { return nil }); err != nil {
		return fail(err)
	}
	return f, nil
}

func setup(t testing.TB, n int) (*natsjs.Source, func(context.Context) error) {
	t.Helper()
	f, err := newFixture(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.cleanup)
	return f.src, f.src.Run
}
