// Command demo runs a crew pool through a service's day in a few seconds:
// a burst of short tasks, long tasks with timeouts (some too slow), a
// panicking task, a batch that stops at its first error, a pause and a
// resize, then a pod's shutdown; and prints what the pool did.
//
//	go run ./examples/demo
//	go run ./examples/demo -workers 8 -short 100000 -log
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"

	"github.com/crew-go/crew"
)

func main() {
	workers := flag.Int("workers", runtime.GOMAXPROCS(0), "pool bound (default: GOMAXPROCS, which follows the CPU quota)")
	short := flag.Int("short", 20000, "short tasks in the burst")
	long := flag.Int("long", 40, "long tasks, every fourth too slow for its timeout")
	logs := flag.Bool("log", false, "log the pool's events with slog")
	flag.Parse()
	if err := run(os.Stdout, *workers, *short, *long, *logs); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// run tells the pool's day to w, step by step, each step's output after
// the one before.
func run(w io.Writer, workers, short, long int, logs bool) error {
	opts := []crew.Option{crew.WithName("demo"), crew.WithWorkers(workers), crew.WithQueueSize(256)}
	if logs {
		opts = append(opts, crew.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	}
	pool, err := crew.New(opts...)
	if err != nil {
		return err
	}
	d := &demo{w: w, pool: pool, ctx: context.Background(), workers: workers}
	d.show("new pool (no goroutine yet)")
	if err := d.burst(short); err != nil {
		return err
	}
	if err := d.longTasks(long); err != nil {
		return err
	}
	d.panicking()
	d.batch()
	d.show("after the work")
	if err := d.pauseAndResize(); err != nil {
		return err
	}
	if err := d.shutdown(); err != nil {
		return err
	}
	d.show("after Shutdown (no goroutine left)")
	return nil
}

// A demo is the pool the steps run on, and where they tell what it did.
type demo struct {
	w       io.Writer
	pool    *crew.Pool
	ctx     context.Context
	workers int
}

func (d *demo) show(step string) { printStats(d.w, step, d.pool.Stats()) }
