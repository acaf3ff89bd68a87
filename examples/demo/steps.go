package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/crew-go/crew"
)

// burst queues n short tasks: no allocation, no timeout.
func (d *demo) burst(n int) error {
	var sum atomic.Int64
	start := time.Now()
	for i := range n {
		if err := d.pool.Go(func() { sum.Add(int64(i)) }, crew.Named("sum")); err != nil {
			return err
		}
	}
	fmt.Fprintf(d.w, "queued %d short tasks in %v\n", n, time.Since(start).Round(time.Microsecond))
	return nil
}

// longTasks submits n long tasks with a timeout; every fourth is too slow
// and times out, its waiter released at the deadline.
func (d *demo) longTasks(n int) error {
	tasks := make([]*crew.Task, n)
	for i := range tasks {
		wait := 2 * time.Millisecond
		if i%4 == 3 {
			wait = time.Second
		}
		var err error
		tasks[i], err = d.pool.Submit(d.ctx, func(ctx context.Context) error {
			select {
			case <-time.After(wait):
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
	fmt.Fprintf(d.w, "%d long tasks, %d timed out\n", n, timedOut)
	return nil
}

// panicking runs a task that panics: the panic becomes an error with its
// stack, and the worker lives on.
func (d *demo) panicking() {
	t, _ := d.pool.Submit(d.ctx, func(context.Context) error { panic("nil map write") }, crew.Named("buggy"))
	var pe *crew.PanicError
	if errors.As(t.Wait(), &pe) {
		fmt.Fprintf(d.w, "panic recovered: %v (stack of %d bytes kept)\n", pe.Value, len(pe.Stack))
	}
}

// batch runs a ForEach over 1,000 ids that stops at its first error.
func (d *demo) batch() {
	ids := make([]int, 1000)
	for i := range ids {
		ids[i] = i
	}
	var calls atomic.Int64
	before := d.pool.Stats()
	err := crew.ForEach(d.ctx, d.pool, ids, func(ctx context.Context, id int) error {
		calls.Add(1)
		if id == 100 {
			return fmt.Errorf("user %d: api refused", id)
		}
		return nil
	}, crew.Limit(4))
	fmt.Fprintf(d.w, "batch stopped after %d of %d calls: %v\n", calls.Load(), len(ids), err)
	// The pool counts a batch by its participants (the caller and the
	// runners that claim elements in chunks), not by its elements.
	after := d.pool.Stats()
	fmt.Fprintf(d.w, "  in the pool's counts: %d participant task(s): succeeded %d, failed %d, canceled %d (a participant that finds the batch already stopped ends canceled)\n",
		after.Submitted-before.Submitted, after.Succeeded-before.Succeeded, after.Failed-before.Failed, after.Canceled-before.Canceled)
}

// pauseAndResize pauses the pool, whose submits still queue, then gives it
// more workers at run time and resumes it.
func (d *demo) pauseAndResize() error {
	_ = d.pool.Pause()
	for range 100 {
		_ = d.pool.Go(func() { time.Sleep(time.Millisecond) }, crew.Named("held"))
	}
	d.show("paused with 100 queued")
	if err := d.pool.Resize(d.workers * 4); err != nil {
		return err
	}
	fmt.Fprintf(d.w, "resized from %d to %d workers and resumed: the 100 held tasks run\n", d.workers, d.workers*4)
	_ = d.pool.Resume()
	return nil
}

// shutdown stops the pool as a pod's SIGTERM would: it runs what was
// accepted, hard just before the deadline.
func (d *demo) shutdown() error {
	ctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
	defer cancel()
	return d.pool.Shutdown(ctx, crew.DrainThenHard)
}
