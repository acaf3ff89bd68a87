package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// throughputResult is one system's throughput scenario.
type throughputResult struct {
	System   string
	Settings string
	Err      error
	Jobs     int
	Ended    int
	Elapsed  time.Duration // first enqueue to last first end
	Enqueue  time.Duration // first enqueue to last enqueue returned
	FirstEnd time.Duration // first enqueue to the first end
	P50, P99 time.Duration
	Twice    int
}

// Rate is jobs ended per second over Elapsed.
func (r throughputResult) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ended) / r.Elapsed.Seconds()
}

// EnqueueRate is jobs enqueued per second, from the first enqueue to the
// last enqueue's return.
func (r throughputResult) EnqueueRate() float64 {
	if r.Enqueue <= 0 {
		return 0
	}
	return float64(r.Jobs) / r.Enqueue.Seconds()
}

// killResult is one system's kill scenario.
type killResult struct {
	System    string
	Err       error
	Jobs      int
	KillAfter time.Duration // from the first enqueue to the kill
	Bound     time.Duration // how long after the restart the benchmark waited
	Lost      int           // never ran to the end within the bound
	Twice     int           // ran to the end more than once; -1: not observable
	Rerun     int           // runs started more than once
	LastAfter time.Duration // from the restart to the last first end
	Remaining int           // jobs not ended at the kill
	Work      time.Duration // Remaining x sleep / workers
	NotEnded  int           // what the store holds as not ended after the bound; -1: unknown
	Store     string        // in which states (StoreState)
}

// produce enqueues sc.Jobs jobs from sc.Producers goroutines and returns
// the time the last Enqueue returned; the first error stops it.
func produce(ctx context.Context, s system, sc scenario, t *tracker) (time.Time, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range sc.Producers {
		wg.Go(func() {
			for {
				n := int(next.Add(1) - 1)
				if n >= sc.Jobs || ctx.Err() != nil {
					return
				}
				t.enqueue(n, time.Now())
				if err := s.Enqueue(ctx, n); err != nil {
					cancel(fmt.Errorf("enqueue job %d: %w", n, err))
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Now(), context.Cause(ctx)
}

// throughput runs sc on s: every job enqueued by the producers while the
// workers run them, until every job has ended or bound passes.
func throughput(ctx context.Context, s system, sc scenario, bound time.Duration) (r throughputResult) {
	r = throughputResult{System: s.Name(), Settings: s.Settings(), Jobs: sc.Jobs}
	t := newTracker(sc.Jobs)
	if err := s.Start(ctx, sc, t); err != nil {
		r.Err = fmt.Errorf("start: %w", err)
		return r
	}
	defer func() {
		if err := s.Stop(); err != nil && r.Err == nil {
			r.Err = fmt.Errorf("stop: %w", err)
		}
	}()
	enqueued, err := produce(ctx, s, sc, t)
	if err != nil {
		r.Err = err
		return r
	}
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if err := s.WaitAll(wctx); err != nil {
		r.Err = fmt.Errorf("waiting for the jobs: %w", err)
	}
	sum := t.summary()
	r.Ended, r.Twice = sum.Ended, sum.Twice
	r.Enqueue = enqueued.Sub(sum.First)
	r.Elapsed = sum.Last.Sub(sum.First)
	r.FirstEnd = sum.FirstEnd.Sub(sum.First)
	r.P50, r.P99 = sum.P50, sum.P99
	return r
}

// kill runs sc on s and SIGKILLs the workers killAfter after the first
// enqueue (or when the last enqueue returned, if later), starts them again
// at once, and waits for every job to end, at most bound after the
// restart.
func kill(ctx context.Context, s system, sc scenario, killAfter, bound time.Duration, twiceSeen bool, log io.Writer) (r killResult) {
	r = killResult{System: s.Name(), Jobs: sc.Jobs, Bound: bound}
	t := newTracker(sc.Jobs)
	if err := s.Start(ctx, sc, t); err != nil {
		r.Err = fmt.Errorf("start: %w", err)
		return r
	}
	defer func() {
		if err := s.Stop(); err != nil && r.Err == nil {
			r.Err = fmt.Errorf("stop: %w", err)
		}
	}()
	start := time.Now()
	enqueued, err := produce(ctx, s, sc, t)
	if err != nil {
		r.Err = err
		return r
	}
	first := t.summary().First
	if wait := time.Until(first.Add(killAfter)); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			r.Err = ctx.Err()
			return r
		}
	}
	// A system that polls for the ends (crewd) polls through the kill.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	waited := make(chan error, 1)
	go func() { waited <- s.WaitAll(wctx) }()
	killed, restarted, err := s.Restart(ctx)
	r.KillAfter = killed.Sub(first)
	fmt.Fprintf(log, "  %s: enqueued in %v, killed %v after the first enqueue\n", s.Name(), enqueued.Sub(start).Round(time.Millisecond), r.KillAfter.Round(time.Millisecond))
	if err != nil {
		r.Err = fmt.Errorf("restart: %w", err)
		return r
	}
	timer := time.NewTimer(time.Until(restarted.Add(bound)))
	defer timer.Stop()
	select {
	case err := <-waited:
		if err != nil {
			r.Err = fmt.Errorf("waiting for the jobs: %w", err)
		}
	case <-timer.C:
		cancel()
		if err := <-waited; err != nil && !errors.Is(err, context.Canceled) {
			r.Err = fmt.Errorf("waiting for the jobs: %w", err)
		}
	}
	sum := t.summary()
	r.Lost = sc.Jobs - sum.Ended
	r.Twice, r.Rerun = sum.Twice, sum.Rerun
	if !twiceSeen {
		r.Twice = -1
	}
	if sum.Last.After(restarted) {
		r.LastAfter = sum.Last.Sub(restarted)
	}
	r.Remaining = sum.RemainingAt(killed)
	r.Work = time.Duration(r.Remaining) * sc.Sleep / time.Duration(sc.Workers)
	r.NotEnded = -1
	if sr, ok := s.(storeReporter); ok {
		n, state, err := sr.StoreState(ctx)
		if err != nil {
			state = "store: " + err.Error()
		} else {
			r.NotEnded = n
		}
		r.Store = state
	}
	return r
}
