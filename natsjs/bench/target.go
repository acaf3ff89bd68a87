package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A target is a stream, named as its one subject (as Watermill wants it),
// and a durable consumer on it.
type target struct{ stream, consumer string }

// fresh makes a new stream and a durable consumer on it, then deletes the
// previous one. In that order: deleting an account's last stream lets the
// server remove its streams directory, racing with a create that follows.
func (b *bench) fresh() (target, error) {
	ctx := context.Background()
	if last := b.last; last.stream != "" {
		defer func() { _ = b.js.DeleteStream(ctx, last.stream) }()
	}
	b.streams++
	t := target{stream: fmt.Sprintf("bench%d", b.streams), consumer: "c"}
	b.last = t
	if _, err := b.js.CreateStream(ctx, jetstream.StreamConfig{Name: t.stream, Subjects: []string{t.stream}, Storage: jetstream.FileStorage}); err != nil {
		return t, err
	}
	_, err := b.js.CreateOrUpdateConsumer(ctx, t.stream, jetstream.ConsumerConfig{
		Durable: t.consumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxAckPending: -1,
	})
	return t, err
}

// payload is a message's body: when it was published.
func payload() []byte {
	return binary.AppendVarint(make([]byte, 0, 16), time.Now().UnixNano())
}

func publish(js jetstream.JetStream, subject string, n int) error {
	for i := 0; i < n; i += 1000 {
		for range min(1000, n-i) {
			if _, err := js.PublishAsync(subject, payload()); err != nil {
				return err
			}
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-time.After(30 * time.Second):
			return errors.New("publish stalled")
		}
	}
	return nil
}

// finish waits for the server to have the n messages of t acked, then
// stops c. Acks first, then the stop: a consumer stopped right after its
// last handler may drop that handler's ack (Watermill does). A peer's
// message left unacked is reported on stderr, not failed.
func finish(js jetstream.JetStream, t target, n int, c contender, stop func() error) error {
	ackErr := allAcked(js, t, n)
	if err := stop(); err != nil {
		return err
	}
	if ackErr != nil && !c.peer {
		return ackErr
	} else if ackErr != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.name, ackErr)
	}
	return nil
}

// allAcked waits for the server to have every message acked.
func allAcked(js jetstream.JetStream, t target, n int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := js.Consumer(context.Background(), t.stream, t.consumer)
		if err != nil {
			return err
		}
		ci := info.CachedInfo()
		if ci.AckFloor.Stream >= uint64(n) && ci.NumAckPending == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not all acked: ack floor %d of %d, %d pending", ci.AckFloor.Stream, n, ci.NumAckPending)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
