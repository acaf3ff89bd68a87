package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmjs "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/jetstream"
	"github.com/crew-go/crew"
	"github.com/crew-go/crew/natsjs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A contender consumes a stream through a durable consumer (a target), calling handle for each message, until stop is called; stop
// returns once it consumes no more.
type contender struct {
	name  string
	start startFunc
	// peer: a consumer that is not ours. One that leaves a message unacked
	// is reported on stderr, not failed: Watermill's subscriber now and
	// then leaves one delivery unacknowledged past our 30 s wait (seen once
	// in a CI run, 1 of 224).
	peer bool
}

type startFunc func(nc *nats.Conn, js jetstream.JetStream, t target, concurrency int, handle func([]byte)) (stop func() error, err error)

var contenders = []contender{
	{"floor: Consume + semaphore", startFloor, false},
	{"crew: natsjs.Source, adaptive window (default)", startCrew(func(int) int { return -1 }), false},
	{"crew: natsjs.Source, window 2 (fixed)", startCrew(func(int) int { return 2 }), false},
	{"crew: natsjs.Source, window = pool", startCrew(func(c int) int { return c }), false},
	{"crew: natsjs.Source, window = 4 x pool", startCrew(func(c int) int { return 4 * c }), false},

	{"watermill-nats/v2 jetstream", startWatermill, true},
}

// startFloor is the plain loop: Consume (its default 500-message prefetch),
// a semaphore of concurrency slots, a goroutine per message, ack after.
func startFloor(_ *nats.Conn, js jetstream.JetStream, t target, concurrency int, handle func([]byte)) (func() error, error) {
	cons, err := js.Consumer(context.Background(), t.stream, t.consumer)
	if err != nil {
		return nil, err
	}
	sem := make(chan struct{}, concurrency)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			handle(m.Data())
			_ = m.Ack()
		}()
	})
	if err != nil {
		return nil, err
	}
	return func() error {
		cc.Drain()
		<-cc.Closed()
		for range concurrency { // wait for the goroutines
			sem <- struct{}{}
		}
		return nil
	}, nil
}

// startCrew runs a natsjs.Source on a pool of concurrency workers, with the
// window window(concurrency), or the adaptive default when it is negative.
func startCrew(window func(concurrency int) int) startFunc {
	return func(nc *nats.Conn, js jetstream.JetStream, t target, concurrency int, handle func([]byte)) (func() error, error) {
		return startCrewWindow(js, t, concurrency, window(concurrency), handle)
	}
}

func startCrewWindow(js jetstream.JetStream, t target, concurrency, window int, handle func([]byte)) (func() error, error) {
	cons, err := js.Consumer(context.Background(), t.stream, t.consumer)
	if err != nil {
		return nil, err
	}
	pool, err := crew.New(crew.WithWorkers(concurrency))
	if err != nil {
		return nil, err
	}
	var opts []natsjs.Option
	if window >= 0 { // else the adaptive default
		opts = append(opts, natsjs.WithWindow(window))
	}
	src, err := natsjs.New(pool, cons, func(_ context.Context, m *natsjs.Msg) error {
		handle(m.Data())
		return nil
	}, opts...)
	if err != nil {
		return nil, err
	}
	errc := make(chan error, 1)
	go func() { errc <- src.Run(context.Background()) }()
	return func() error {
		if window < 0 {
			fmt.Fprintf(os.Stderr, "bench: the adaptive window at the end: %d\n", src.Stats().Window)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := src.Shutdown(ctx); err != nil {
			return err
		}
		if err := <-errc; err != nil {
			return err
		}
		return pool.Shutdown(ctx, crew.Drain)
	}, nil
}

// startWatermill subscribes concurrency times to the existing consumer:
// each Watermill subscription hands over one message at a time and waits
// for its ack. Acks are plain (AckAsync), as for the others.
func startWatermill(nc *nats.Conn, _ jetstream.JetStream, t target, concurrency int, handle func([]byte)) (func() error, error) {
	sub, err := wmjs.NewSubscriber(wmjs.SubscriberConfig{
		Conn:                nc,
		Logger:              watermill.NopLogger{},
		AckAsync:            true,
		ResourceInitializer: wmjs.ExistingConsumer(func(string, string) jetstream.ConsumerConfig { return jetstream.ConsumerConfig{Name: t.consumer} }, ""),
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, concurrency)
	for range concurrency {
		msgs, err := sub.Subscribe(ctx, t.stream)
		if err != nil {
			cancel()
			return nil, err
		}
		go func() {
			defer func() { done <- struct{}{} }()
			for m := range msgs {
				handle(m.Payload)
				m.Ack()
			}
		}()
	}
	return func() error {
		cancel()
		for range concurrency {
			<-done
		}
		return nil
	}, nil
}
