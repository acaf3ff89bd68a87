package crew_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew"
)

func newPool(t testing.TB, opts ...crew.Option) *crew.Pool {
	t.Helper()
	p, err := crew.New(opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// gate is a task function that blocks until released, or until its context
// ends when it honours it.
type gate struct {
	started chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{started: make(chan struct{}, 1024), release: make(chan struct{})} }

// ignore blocks until released, ignoring its context.
func (g *gate) ignore(context.Context) error {
	g.started <- struct{}{}
	<-g.release
	return nil
}

// honour blocks until released or until ctx ends, and returns ctx.Err().
func (g *gate) honour(ctx context.Context) error {
	g.started <- struct{}{}
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) short() {
	g.started <- struct{}{}
	<-g.release
}

func (g *gate) open() { close(g.release) }

func (g *gate) waitStarted(t testing.TB, n int) {
	t.Helper()
	for range n {
		select {
		case <-g.started:
		case <-time.After(10 * time.Second):
			t.Fatalf("task did not start")
		}
	}
}

func submit(t testing.TB, p *crew.Pool, fn func(context.Context) error, opts ...crew.TaskOption) *crew.Task {
	t.Helper()
	task, err := p.Submit(context.Background(), fn, opts...)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	return task
}

// checkCounts asserts invariant 6 on a stopped pool: nothing in flight, and
// the counts sum to what was submitted.
func checkCounts(t testing.TB, p *crew.Pool) crew.Stats {
	t.Helper()
	s := p.Stats()
	sum := s.Succeeded + s.Failed + s.Panicked + s.TimedOut + s.Canceled + s.Dropped + s.Rejected
	if s.InFlight() != 0 || sum != s.Submitted {
		t.Fatalf("counts disagree: %+v (in flight %d, sum %d)", s, s.InFlight(), sum)
	}
	return s
}

// gauge counts task functions running at once and keeps the peak.
type gauge struct {
	running, peak atomic.Int64
}

func (g *gauge) enter() {
	n := g.running.Add(1)
	for m := g.peak.Load(); n > m && !g.peak.CompareAndSwap(m, n); m = g.peak.Load() {
	}
}

func (g *gauge) leave() { g.running.Add(-1) }
