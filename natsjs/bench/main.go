// Command bench measures, in one run and on one embedded nats-server, how
// fast three consumers run the messages of a JetStream pull consumer:
//
//   - crew: a natsjs.Source on a crew pool;
//   - floor: a plain Consume loop with a semaphore, each message on its own
//     goroutine (what a hand-written consumer does, and the floor to beat);
//   - watermill: Watermill's NATS JetStream subscriber (watermill-nats/v2,
//     pkg/jetstream), one subscription per unit of concurrency.
//
// Each runs with the same concurrency, for empty handlers and for 1 ms
// handlers. Throughput is measured on a backlog published beforehand;
// latency (publish to handled, p50 and p99) at a steady publish rate of half
// the floor's throughput. It prints a Markdown table.
//
// It lives in its own module so that natsjs's users do not inherit
// Watermill's dependencies.
//
//	cd natsjs/bench && go run . [-n 50000] [-concurrency 64]
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

func main() {
	cfg := config{}
	flag.IntVar(&cfg.messages, "n", 50_000, "messages in the backlog of each throughput run")
	flag.IntVar(&cfg.concurrency, "concurrency", 64, "workers, semaphore slots and Watermill subscriptions")
	flag.DurationVar(&cfg.latencyFor, "latency-for", 3*time.Second, "length of each steady-rate latency run")
	flag.IntVar(&cfg.rounds, "rounds", 5, "throughput rounds per contender; the median is reported")
	flag.StringVar(&cfg.only, "only", "", "run only the contenders whose name contains this")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	res, err := run(cfg, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return
	}
	fmt.Print(table(cfg, res))
}
