package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// throughput runs a backlog of messages (at most 20,000 with work) through
// c, and returns its rate and the most messages it held (delivered and not
// acked, as the server counts them, read every 5 ms).
func (b *bench) throughput(c contender, messages int, work time.Duration) (float64, int, error) {
	t, err := b.fresh()
	if err != nil {
		return 0, 0, err
	}
	n := messages
	if work > 0 {
		n = min(n, 20_000)
	}
	if err := publish(b.js, t.stream, n); err != nil {
		return 0, 0, err
	}
	stopWatch := make(chan struct{})
	heldMost := watchHeld(b.js, t, stopWatch)
	var handled atomic.Int64
	done := make(chan struct{})
	begin := time.Now()
	stop, err := c.start(b.nc, b.js, t, b.cfg.concurrency, func([]byte) {
		busy(work)
		if handled.Add(1) == int64(n) {
			close(done)
		}
	})
	if err != nil {
		close(stopWatch)
		<-heldMost
		return 0, 0, err
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		_ = stop()
		close(stopWatch)
		<-heldMost
		return 0, 0, fmt.Errorf("only %d of %d handled in 5 minutes", handled.Load(), n)
	}
	elapsed := time.Since(begin)
	close(stopWatch)
	held := <-heldMost
	if err := finish(b.js, t, n, c, stop); err != nil {
		return 0, 0, err
	}
	return float64(n) / elapsed.Seconds(), held, nil
}

// watchHeld samples the consumer's NumAckPending until stop is closed, and
// returns its largest value.
func watchHeld(js jetstream.JetStream, t target, stop <-chan struct{}) <-chan int {
	out := make(chan int, 1)
	go func() {
		most := 0
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		cons, err := js.Consumer(context.Background(), t.stream, t.consumer)
		for err == nil {
			select {
			case <-stop:
				out <- most
				return
			case <-tick.C:
			}
			info, ierr := cons.Info(context.Background())
			if ierr == nil {
				most = max(most, info.NumAckPending)
			}
		}
		<-stop
		out <- -1
	}()
	return out
}
