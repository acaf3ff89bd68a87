package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/crew-go/crew/natsjs/natstest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// config is the command line.
type config struct {
	messages    int
	concurrency int
	latencyFor  time.Duration
	rounds      int
	only        string
	cpuProfile  string
}

// runs says whether the contender at i runs: the floor, at 0, always does.
func (cfg config) runs(i int, c contender) bool {
	return cfg.only == "" || i == 0 || strings.Contains(c.name, cfg.only)
}

type result struct {
	contender string
	work      time.Duration
	perSecond float64
	held      int // the most messages delivered and not acked, median over rounds
	p50, p99  time.Duration
	rate      float64 // of the latency run
}

// run measures the contenders on one embedded server, for empty handlers
// then for handlers of 1 ms.
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
	b := &bench{cfg: cfg, log: log, nc: nc, js: js}
	var out []result
	for _, work := range []time.Duration{0, time.Millisecond} {
		res, err := b.measure(work)
		if err != nil {
			return nil, err
		}
		out = append(out, res...)
	}
	return out, nil
}

// A bench is a run's connection to its server, and the streams it made.
type bench struct {
	cfg     config
	log     io.Writer
	nc      *nats.Conn
	js      jetstream.JetStream
	streams int    // made so far, for the next one's name
	last    target // the previous measurement's, deleted by the next fresh
}

// measure runs the contenders with handlers of work: a warm-up, then the
// throughput rounds, then each one's latency at half the floor's rate.
func (b *bench) measure(work time.Duration) ([]result, error) {
	if err := b.warmUp(work); err != nil {
		return nil, err
	}
	rates, helds, err := b.rounds(work)
	if err != nil {
		return nil, err
	}
	floorRate := 50000.0
	if len(rates[0]) > 0 {
		floorRate = median(rates[0])
	}
	rate := max(100, floorRate/2)
	var out []result
	for i, c := range contenders {
		if len(rates[i]) == 0 {
			continue
		}
		r := result{contender: c.name, work: work, perSecond: median(rates[i]), held: int(median(helds[i]))}
		r.p50, r.p99, err = b.latency(c, work, rate)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		r.rate = rate
		fmt.Fprintf(b.log, "bench: %-30s work=%-4v %9.0f msgs/s  p50=%v p99=%v (at %.0f msgs/s)\n", c.name, work, r.perSecond, r.p50, r.p99, rate)
		out = append(out, r)
	}
	return out, nil
}

// warmUp runs each contender once on a smaller backlog, not counted: the
// first runs on a new server are slower for everyone (its file store and
// the heap grow).
func (b *bench) warmUp(work time.Duration) error {
	messages := max(100, b.cfg.messages/5)
	for i, c := range contenders {
		if !b.cfg.runs(i, c) {
			continue
		}
		if _, _, err := b.throughput(c, messages, work); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return nil
}

// rounds measures each contender's throughput cfg.rounds times, and
// returns the rates and the most held, by contender. Rounds alternate the
// contenders, so that a burst of load from elsewhere on the machine does
// not fall on one of them only; each figure is the median of its rounds.
func (b *bench) rounds(work time.Duration) (rates, helds [][]float64, err error) {
	rates = make([][]float64, len(contenders))
	helds = make([][]float64, len(contenders))
	for round := range b.cfg.rounds {
		for k := range contenders {
			i := (k + round) % len(contenders)
			c := contenders[i]
			if !b.cfg.runs(i, c) {
				continue
			}
			r, held, err := b.throughput(c, b.cfg.messages, work)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", c.name, err)
			}
			fmt.Fprintf(b.log, "bench: round %d %-30s work=%-4v %9.0f msgs/s, held at most %d\n", round+1, c.name, work, r, held)
			rates[i] = append(rates[i], r)
			helds[i] = append(helds[i], float64(held))
		}
	}
	return rates, helds, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// busy is a handler's work: d of waiting, as for a call to a database (a
// spin would measure the two cores, not the consumers).
func busy(d time.Duration) {
	if d == 0 {
		return
	}
	time.Sleep(d)
}
