package natsjs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/natsjs"
	"github.com/crew-go/crew/natsjs/natstest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// exampleJetStream starts an embedded server with the stream "jobs" and
// the durable consumer "crewd" (AckWait 30 s, 3 deliveries at most), and
// returns a JetStream on it and a function that stops everything.
func exampleJetStream() (jetstream.JetStream, jetstream.Consumer, func()) {
	dir, err := os.MkdirTemp("", "natsjs-example-")
	if err != nil {
		panic(err)
	}
	srv, err := natstest.Run(natstest.Options(dir, -1))
	if err != nil {
		panic(err)
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		panic(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "jobs", Subjects: []string{"jobs.>"}}); err != nil {
		panic(err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, "jobs", jetstream.ConsumerConfig{
		Durable: "crewd", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxDeliver: 3,
	})
	if err != nil {
		panic(err)
	}
	return js, cons, func() {
		nc.Close()
		srv.Shutdown()
		srv.WaitForShutdown()
		_ = os.RemoveAll(dir)
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(cond func() bool) {
	for deadline := time.Now().Add(10 * time.Second); !cond() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}

// A Source runs a consumer's messages on a pool. On SIGTERM a service
// calls the Source's Shutdown, then the pool's.
func ExampleSource() {
	js, cons, stop := exampleJetStream()
	defer stop()
	ctx := context.Background()
	for _, job := range []string{"a", "b", "c"} {
		if _, err := js.Publish(ctx, "jobs."+job, []byte(job)); err != nil {
			panic(err)
		}
	}

	pool, err := crew.New(crew.WithWorkers(4))
	if err != nil {
		panic(err)
	}
	var mu sync.Mutex
	done := map[string]bool{}
	src, err := natsjs.New(pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		mu.Lock()
		defer mu.Unlock()
		done[string(m.Data())] = true
		return nil // ack
	})
	if err != nil {
		panic(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- src.Run(ctx) }()
	waitFor(func() bool { return src.Stats().Acked == 3 })

	// Shutdown: the Source first (stop pulling, hand back what has not
	// started, wait for the rest), then the pool.
	if err := src.Shutdown(ctx); err != nil {
		panic(err)
	}
	if err := <-runErr; err != nil {
		panic(err)
	}
	if err := pool.Shutdown(ctx, crew.DrainThenHard); err != nil {
		panic(err)
	}
	fmt.Println(len(done), "jobs done;", src.Stats().Acked, "acked")
	// Output: 3 jobs done; 3 acked
}

// Delivery is at-least-once: a message can run twice (here the first run
// fails after its effect, as a pod killed before its ack would). An
// idempotent handler keys its effect by the stream sequence, the same on
// every delivery, and makes the second run a no-op.
func ExampleMsg() {
	js, cons, stop := exampleJetStream()
	defer stop()
	ctx := context.Background()
	if _, err := js.Publish(ctx, "jobs.pay", []byte("order-42")); err != nil {
		panic(err)
	}
	pool, err := crew.New()
	if err != nil {
		panic(err)
	}
	defer pool.Close()

	var mu sync.Mutex
	paid := map[uint64]int{} // stands for a table with a unique key
	src, err := natsjs.New(pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		mu.Lock()
		if paid[m.StreamSeq()] == 0 {
			paid[m.StreamSeq()]++ // the effect, recorded with its key
		}
		mu.Unlock()
		if m.Attempt() == 1 {
			return errors.New("lost before the ack")
		}
		return nil
	}, natsjs.WithBackoff(time.Millisecond, time.Millisecond))
	if err != nil {
		panic(err)
	}
	go func() { _ = src.Run(ctx) }()
	defer func() { _ = src.Shutdown(ctx) }()
	waitFor(func() bool { return src.Stats().Acked == 1 })

	mu.Lock()
	defer mu.Unlock()
	fmt.Println("deliveries:", src.Stats().Received, "payments:", paid[1])
	// Output: deliveries: 2 payments: 1
}

// A message that fails on its last delivery (the consumer's MaxDeliver, 3
// here) is published to the dead-letter subject with the reason, then
// termed.
func ExampleWithDeadLetter() {
	js, cons, stop := exampleJetStream()
	defer stop()
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "dead", Subjects: []string{"dead.>"}}); err != nil {
		panic(err)
	}
	if _, err := js.Publish(ctx, "jobs.poison", []byte("poison")); err != nil {
		panic(err)
	}
	pool, err := crew.New()
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	src, err := natsjs.New(pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		return fmt.Errorf("cannot parse %q", m.Data())
	}, natsjs.WithDeadLetter(js, "dead.jobs"), natsjs.WithBackoff(time.Millisecond, time.Millisecond))
	if err != nil {
		panic(err)
	}
	go func() { _ = src.Run(ctx) }()
	defer func() { _ = src.Shutdown(ctx) }()
	waitFor(func() bool { return src.Stats().DeadLettered == 1 })

	dead, err := js.Stream(ctx, "dead")
	if err != nil {
		panic(err)
	}
	dl, err := dead.GetMsg(ctx, 1)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(dl.Data), dl.Header.Get(natsjs.HeaderAttempts), dl.Header.Get(natsjs.HeaderReason))
	// Output: poison 3 cannot parse "poison"
}

// Stats counts what a Source did; Lag asks the server what is left.
func ExampleSource_Stats() {
	js, cons, stop := exampleJetStream()
	defer stop()
	ctx := context.Background()
	for range 5 {
		if _, err := js.Publish(ctx, "jobs.x", nil); err != nil {
			panic(err)
		}
	}
	pool, err := crew.New()
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	src, err := natsjs.New(pool, cons, func(ctx context.Context, m *natsjs.Msg) error { return nil })
	if err != nil {
		panic(err)
	}
	// The server counts a publish in the consumer's lag just after its ack.
	var lag uint64
	waitFor(func() bool {
		lag, err = src.Lag(ctx)
		return err == nil && lag == 5
	})
	fmt.Println("lag before:", lag)
	go func() { _ = src.Run(ctx) }()
	waitFor(func() bool { return src.Stats().Acked == 5 })
	if err := src.Shutdown(ctx); err != nil {
		panic(err)
	}
	st := src.Stats()
	fmt.Println("received:", st.Received, "acked:", st.Acked, "held:", st.InFlight)
	// Output:
	// lag before: 5
	// received: 5 acked: 5 held: 0
}

// A Handler returns nil to ack, an error to retry later. A long one watches
// its context: it ends on the pool's timeout or hard stop, and with
// ErrLeaseLost when the server may already have given the message to
// someone else.
func ExampleHandler() {
	js, cons, stop := exampleJetStream()
	defer stop()
	ctx := context.Background()
	if _, err := js.Publish(ctx, "jobs.resize", []byte("image-7")); err != nil {
		panic(err)
	}
	var handle natsjs.Handler = func(ctx context.Context, m *natsjs.Msg) error {
		select {
		case <-time.After(10 * time.Millisecond): // the work
			return nil
		case <-ctx.Done():
			// After the pool's stop the message is handed back; after
			// ErrLeaseLost it is left alone, to run again elsewhere.
			return ctx.Err()
		}
	}
	pool, err := crew.New()
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	src, err := natsjs.New(pool, cons, handle, natsjs.WithTaskName("resize"))
	if err != nil {
		panic(err)
	}
	go func() { _ = src.Run(ctx) }()
	defer func() { _ = src.Shutdown(ctx) }()
	waitFor(func() bool { return src.Stats().Acked == 1 })
	fmt.Println("acked:", src.Stats().Acked)
	// Output: acked: 1
}
