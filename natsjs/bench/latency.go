package main

import (
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// latency publishes to c at rate for cfg.latencyFor, and returns the p50
// and p99 of the time from publish to handled.
func (b *bench) latency(c contender, work time.Duration, rate float64) (p50, p99 time.Duration, err error) {
	t, err := b.fresh()
	if err != nil {
		return 0, 0, err
	}
	n := int(rate * b.cfg.latencyFor.Seconds())
	var mu sync.Mutex
	lat := make([]time.Duration, 0, n)
	done := make(chan struct{})
	stop, err := c.start(b.nc, b.js, t, b.cfg.concurrency, func(data []byte) {
		busy(work)
		sent, _ := binary.Varint(data)
		d := time.Since(time.Unix(0, sent))
		mu.Lock()
		lat = append(lat, d)
		if len(lat) == n {
			close(done)
		}
		mu.Unlock()
	})
	if err != nil {
		return 0, 0, err
	}
	if err := publishAt(b.js, t.stream, n, rate); err != nil {
		_ = stop()
		return 0, 0, err
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = stop()
		return 0, 0, errors.New("latency run did not finish")
	}
	if err := finish(b.js, t, n, c, stop); err != nil {
		return 0, 0, err
	}
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100], nil
}

// publishAt publishes n messages at rate a second, in ticks of a
// millisecond.
func publishAt(js jetstream.JetStream, subject string, n int, rate float64) error {
	perTick := rate / 1000
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	sent, owed := 0, 0.0
	for sent < n {
		<-tick.C
		owed += perTick
		for ; owed >= 1 && sent < n; owed-- {
			if _, err := js.PublishAsync(subject, payload()); err != nil {
				return err
			}
			sent++
		}
	}
	return nil
}
