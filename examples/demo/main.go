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
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"sync/atomic"
	"text/tabwriter"
	"time"

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

func run(w io.Writer, workers, short, long int, logs bool) error {
	opts := []crew.Option{crew.WithName("demo"), crew.WithWorkers(workers), crew.WithQueueSize(256)}
	if logs {
		opts = append(opts, crew.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	}
	pool, err := crew.New(opts...)
	if err != nil {
		return err
	}
	ctx := context.Background()
	show := func(step string) { printStats(w, step, pool.Stats()) }
	show("new pool (no goroutine yet)")

	// 1. A burst of short tasks: no allocation, no timeout.
	var sum atomic.Int64
	start := time.Now()
	for i := range short {
		if err := pool.Go(func() { sum.Add(int64(i)) }, crew.Named("sum")); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "queued %d short tasks in %v\n", short, time.Since(start).Round(time.Microsecond))

	// 2. Long tasks with a timeout; every fourth is too slow and times out,
	// its waiter released at the deadline.
	tasks := make([]*crew.Task, long)
	for i := range tasks {
		d := 2 * time.Millisecond
		if i%4 == 3 {
			d = time.Second
		}
		tasks[i], err = pool.Submit(ctx, func(ctx context.Context) error {
			select {
			case <-time.After(d):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}, crew.Named("fetch"), crew.Timeout(50*time.Millisecond))
		if err != nil {
			return err
		}
	}
	timedOut := 0
	for _, t := range tasks {
		if errors.Is(t.Wait(), crew.ErrTimeout) {
			timedOut++
		}
	}
	fmt.Fprintf(w, "%d long tasks, %d timed out\n", long, timedOut)

	// 3. A panic becomes an error with its stack; the worker lives on.
	t, _ := pool.Submit(ctx, func(context.Context) error { panic("nil map write") }, crew.Named("buggy"))
	var pe *crew.PanicError
	if errors.As(t.Wait(), &pe) {
		fmt.Fprintf(w, "panic recovered: %v (stack of %d bytes kept)\n", pe.Value, len(pe.Stack))
	}

	// 4. A batch that stops at its first error.
	ids := make([]int, 1000)
	for i := range ids {
		ids[i] = i
	}
	var calls atomic.Int64
	before := pool.Stats()
	err = crew.ForEach(ctx, pool, ids, func(ctx context.Context, id int) error {
		calls.Add(1)
		if id == 100 {
			return fmt.Errorf("user %d: api refused", id)
		}
		return nil
	}, crew.Limit(4))
	fmt.Fprintf(w, "batch stopped after %d of %d calls: %v\n", calls.Load(), len(ids), err)
	// The pool counts a batch by its participants (the caller and the
	// runners that claim elements in chunks), not by its elements.
	after := pool.Stats()
	fmt.Fprintf(w, "  in the pool's counts: %d participant task(s): succeeded %d, failed %d, canceled %d (a participant that finds the batch already stopped ends canceled)\n",
		after.Submitted-before.Submitted, after.Succeeded-before.Succeeded, after.Failed-before.Failed, after.Canceled-before.Canceled)
	show("after the work")

	// 5. Pause: submits still queue; Resize: more workers at run time.
	_ = pool.Pause()
	for range 100 {
		_ = pool.Go(func() { time.Sleep(time.Millisecond) }, crew.Named("held"))
	}
	show("paused with 100 queued")
	if err := pool.Resize(workers * 4); err != nil {
		return err
	}
	fmt.Fprintf(w, "resized from %d to %d workers and resumed: the 100 held tasks run\n", workers, workers*4)
	_ = pool.Resume()

	// 6. A pod's SIGTERM: run what was accepted, hard just before the deadline.
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := pool.Shutdown(sctx, crew.DrainThenHard); err != nil {
		return err
	}
	show("after Shutdown (no goroutine left)")
	return nil
}

func printStats(out io.Writer, step string, s crew.Stats) {
	w := tabwriter.NewWriter(out, 0, 0, 1, ' ', 0)
	fmt.Fprintf(w, "\n== %s\n", step)
	fmt.Fprintf(w, "workers\t%d alive, %d busy, bound %d\n", s.Workers, s.Busy, s.MaxWorkers)
	fmt.Fprintf(w, "queue\t%d of %d, %d submitters waiting, paused %v, closed %v\n", s.Queued, s.QueueCapacity, s.Waiting, s.Paused, s.Closed)
	fmt.Fprintf(w, "tasks\tsubmitted %d = succeeded %d + failed %d + panicked %d + timed out %d + canceled %d + dropped %d + rejected %d + in flight %d\n",
		s.Submitted, s.Succeeded, s.Failed, s.Panicked, s.TimedOut, s.Canceled, s.Dropped, s.Rejected, s.InFlight())
	w.Flush()
}
