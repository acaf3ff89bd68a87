package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crew-go/crew/natsjs/natstest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

type config struct {
	messages    int
	concurrency int
	latencyFor  time.Duration
	rounds      int
	only        string
	cpuProfile  string
	works       []time.Duration
}

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

type result struct {
	contender string
	work      time.Duration
	perSecond float64
	held      int // the most messages delivered and not acked, median over rounds
	p50, p99  time.Duration
	rate      float64 // of the latency run
}

func run(cfg config, log io.Writer) ([]result, error) {
	dir, err := os.MkdirTemp("", "natsjs-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	opts := natstest.Options(dir, -1)
	opts.NoLog = os.Getenv("BENCH_SERVER_LOG") == ""
	srv, err := natstest.Run(opts)
	if err != nil {
		return nil, err
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "bench: GOMAXPROCS=%d, %s, %d messages, concurrency %d\n", runtime.GOMAXPROCS(0), runtime.Version(), cfg.messages, cfg.concurrency)

	var out []result
	for _, work := range []time.Duration{0, time.Millisecond} {
		// Rounds alternate the contenders, so that a burst of load from
		// elsewhere on the machine does not fall on one of them only; each
		// figure is the median of its rounds.
		rates := make([][]float64, len(contenders))
		helds := make([][]float64, len(contenders))
		// A warm-up round, not counted: the first runs on a new server are
		// slower for everyone (its file store and the heap grow).
		warm := cfg
		warm.messages = max(100, cfg.messages/5)
		for i, c := range contenders {
			if cfg.only != "" && i > 0 && !strings.Contains(c.name, cfg.only) {
				continue
			}
			if _, _, err := throughput(nc, js, c, warm, work); err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
		}
		for round := range cfg.rounds {
			for k := range contenders {
				i := (k + round) % len(contenders)
				c := contenders[i]
				if cfg.only != "" && i > 0 && !strings.Contains(c.name, cfg.only) {
					continue
				}
				r, held, err := throughput(nc, js, c, cfg, work)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", c.name, err)
				}
				fmt.Fprintf(log, "bench: round %d %-30s work=%-4v %9.0f msgs/s, held at most %d\n", round+1, c.name, work, r, held)
				rates[i] = append(rates[i], r)
				helds[i] = append(helds[i], float64(held))
			}
		}
		floorRate := 50000.0
		if len(rates[0]) > 0 {
			floorRate = median(rates[0])
		}
		rate := max(100, floorRate/2)
		for i, c := range contenders {
			if len(rates[i]) == 0 {
				continue
			}
			r := result{contender: c.name, work: work, perSecond: median(rates[i]), held: int(median(helds[i]))}
			r.p50, r.p99, err = latency(nc, js, c, cfg, work, rate)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
			r.rate = rate
			fmt.Fprintf(log, "bench: %-30s work=%-4v %9.0f msgs/s  p50=%v p99=%v (at %.0f msgs/s)\n", c.name, work, r.perSecond, r.p50, r.p99, rate)
			out = append(out, r)
		}
	}
	return out, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// A target is a stream, named as its one subject (as Watermill wants it),
// and a durable consumer on it.
type target struct{ stream, consumer string }

var (
	runs int
	last target // the previous run's, deleted by the next fresh
)

// fresh makes a new stream and a durable consumer on it, then deletes the
// previous one. In that order: deleting an account's last stream lets the
// server remove its streams directory, racing with a create that follows.
func fresh(js jetstream.JetStream, last target) (target, error) {
	ctx := context.Background()
	if last.stream != "" {
		defer func() { _ = js.DeleteStream(ctx, last.stream) }()
	}
	runs++
	t := target{stream: fmt.Sprintf("bench%d", runs), consumer: "c"}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: t.stream, Subjects: []string{t.stream}, Storage: jetstream.FileStorage}); err != nil {
		return t, err
	}
	_, err := js.CreateOrUpdateConsumer(ctx, t.stream, jetstream.ConsumerConfig{
		Durable: t.consumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxAckPending: -1,
	})
	return t, err
}

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

// busy is a handler's work: d of waiting, as for a call to a database (a
// spin would measure the two cores, not the consumers).
func busy(d time.Duration) {
	if d == 0 {
		return
	}
	time.Sleep(d)
}

// throughput runs a backlog through c, and returns its rate and the most
// messages it held (delivered and not acked, as the server counts them,
// read every 5 ms).
func throughput(nc *nats.Conn, js jetstream.JetStream, c contender, cfg config, work time.Duration) (float64, int, error) {
	return throughputRun(nc, js, c, cfg, work)
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

func throughputRun(nc *nats.Conn, js jetstream.JetStream, c contender, cfg config, work time.Duration) (float64, int, error) {
	t, err := fresh(js, last)
	last = t
	if err != nil {
		return 0, 0, err
	}
	n := cfg.messages
	if work > 0 {
		n = min(n, 20_000)
	}
	if err := publish(js, t.stream, n); err != nil {
		return 0, 0, err
	}
	stopWatch := make(chan struct{})
	heldMost := watchHeld(js, t, stopWatch)
	var handled atomic.Int64
	done := make(chan struct{})
	begin := time.Now()
	stop, err := c.start(nc, js, t, cfg.concurrency, func([]byte) {
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
	// Acks first, then the stop: a consumer stopped right after its last
	// handler may drop that handler's ack (Watermill does).
	ackErr := allAcked(js, t, n)
	if err := stop(); err != nil {
		return 0, 0, err
	}
	if ackErr != nil && !c.peer {
		return 0, 0, ackErr
	} else if ackErr != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.name, ackErr)
	}
	return float64(n) / elapsed.Seconds(), held, nil
}

func latency(nc *nats.Conn, js jetstream.JetStream, c contender, cfg config, work time.Duration, rate float64) (p50, p99 time.Duration, err error) {
	t, err := fresh(js, last)
	last = t
	if err != nil {
		return 0, 0, err
	}
	n := int(rate * cfg.latencyFor.Seconds())
	var mu sync.Mutex
	lat := make([]time.Duration, 0, n)
	done := make(chan struct{})
	stop, err := c.start(nc, js, t, cfg.concurrency, func(data []byte) {
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
	// Publish at rate, in ticks of a millisecond.
	perTick := rate / 1000
	tick := time.NewTicker(time.Millisecond)
	sent, owed := 0, 0.0
	for sent < n {
		<-tick.C
		owed += perTick
		for ; owed >= 1 && sent < n; owed-- {
			if _, err := js.PublishAsync(t.stream, payload()); err != nil {
				tick.Stop()
				_ = stop()
				return 0, 0, err
			}
			sent++
		}
	}
	tick.Stop()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = stop()
		return 0, 0, errors.New("latency run did not finish")
	}
	ackErr := allAcked(js, t, n)
	if err := stop(); err != nil {
		return 0, 0, err
	}
	if ackErr != nil && !c.peer {
		return 0, 0, ackErr
	} else if ackErr != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.name, ackErr)
	}
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100], nil
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

func table(cfg config, res []result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| handler | consumer | msgs/s | vs floor | held at most | p50 | p99 |\n|---|---|---:|---:|---:|---:|---:|\n")
	floor := map[time.Duration]float64{}
	for _, r := range res {
		if strings.HasPrefix(r.contender, "floor") {
			floor[r.work] = r.perSecond
		}
	}
	for _, r := range res {
		work := "empty"
		if r.work > 0 {
			work = r.work.String()
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %.2fx | %d | %v | %v |\n", work, r.contender, r.perSecond,
			floor[r.work]/r.perSecond, r.held, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond))
	}
	fmt.Fprintf(&b, "\n%d messages per throughput run (20,000 with 1 ms handlers), concurrency %d, GOMAXPROCS %d, %s. "+
		"Held at most: the most messages delivered and not yet acked, as the server counted them every 5 ms (median over rounds).\n",
		cfg.messages, cfg.concurrency, runtime.GOMAXPROCS(0), runtime.Version())
	return b.String()
}
