package crew_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crew-go/crew"
)

// FuzzPoolOperations drives a pool with a sequence of operations read from
// the input, in a synctest bubble so that time (timeouts, idle retirement,
// deadlines) is part of the sequence, and checks invariant 7 after every
// operation, once the bubble is quiet, and invariants 1, 3, 5 and 6 at the
// end. Each byte is one operation; the byte after an operation that
// takes an argument is its argument.
func FuzzPoolOperations(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add([]byte{6, 0, 0, 2, 7, 9, 3})
	f.Add([]byte{2, 200, 2, 5, 10, 10, 3, 11, 1})
	f.Add([]byte{8, 1, 0, 0, 0, 0, 2, 3, 8, 6, 7, 11, 2})
	f.Add([]byte{12, 3, 12, 4, 4, 12, 5, 13, 12, 1, 5, 9, 1})
	// A warm pool, then a burst; a resize up under a backlog; a resume.
	f.Add([]byte{3, 0, 8, 0, 7, 0, 1, 7, 1, 7, 1, 7, 1, 7, 8})
	f.Add([]byte{6, 0, 1, 7, 1, 7, 1, 7, 6, 3, 8})
	f.Add([]byte{4, 1, 7, 1, 7, 1, 7, 5, 8})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 256 {
			ops = ops[:256]
		}
		synctest.Test(t, func(t *testing.T) {
			runOps(t, ops)
		})
	})
}

func runOps(t *testing.T, ops []byte) {
	l := &ledger{}
	l.bound.Store(2)
	p, err := crew.New(crew.WithWorkers(2), crew.WithQueueSize(3), crew.WithIdleTimeout(5*time.Millisecond),
		crew.WithStopGrace(time.Second), crew.WithObserver(l.observe))
	if err != nil {
		t.Fatal(err)
	}
	arg := func(i *int) int {
		*i++
		if *i < len(ops) {
			return int(ops[*i])
		}
		return 0
	}
	// work sleeps d, then ends as kind says; it honours its context only
	// when asked to.
	work := func(d time.Duration, kind int) func(context.Context) error {
		return func(ctx context.Context) error {
			l.enter()
			defer l.leave()
			if kind&1 == 1 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return ctx.Err()
				}
			} else {
				time.Sleep(d)
			}
			switch kind >> 1 & 3 {
			case 1:
				return errors.New("failed")
			case 2:
				panic("fuzz")
			}
			return nil
		}
	}
	closed := false
	gctx, cancelGroup := context.WithCancel(context.Background())
	defer cancelGroup()
	group, _ := crew.NewGroup(gctx, p, crew.Limit(2))
	var maps sync.WaitGroup
	for i := 0; i < len(ops); i++ {
		switch ops[i] % 15 {
		case 14: // a ForEach from its own goroutine: the caller helps on a borrowed slot
			a := arg(&i)
			in := make([]int, 1+a%6)
			fn := work(time.Duration(a%3)*time.Millisecond, a>>2)
			maps.Go(func() {
				_ = crew.ForEach(context.Background(), p, in, func(ctx context.Context, _ int) error { return fn(ctx) }, crew.NameTasks("map"))
			})
		case 12: // a group task; blocking only when the pool is not paused
			a := arg(&i)
			fn := work(time.Duration(a%8)*time.Millisecond, a)
			var err error
			if p.Stats().Paused {
				err = group.TryGo(func() error { return fn(context.Background()) })
			} else {
				err = group.Go(func() error { return fn(context.Background()) })
			}
			if err == nil {
				l.accepted.Add(1)
			}
		case 13:
			cancelGroup()
		case 0, 1: // short task, blocking when not paused
			a := arg(&i)
			fn := work(time.Duration(a%8)*time.Millisecond, a)
			if p.Stats().Paused {
				if p.TryGo(func() { _ = fn(context.Background()) }) == nil {
					l.accepted.Add(1)
				}
			} else if p.Go(func() { _ = fn(context.Background()) }) == nil {
				l.accepted.Add(1)
			}
		case 2: // long task with a deadline on the wait and maybe a timeout
			a := arg(&i)
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(a%4)*time.Millisecond)
			var opts []crew.TaskOption
			if a&16 != 0 {
				opts = append(opts, crew.Timeout(time.Duration(1+a%5)*time.Millisecond))
			}
			task, err := p.Submit(ctx, work(time.Duration(a%8)*time.Millisecond, a>>3), opts...)
			cancel()
			if err == nil {
				l.accepted.Add(1)
				l.tasks = append(l.tasks, task)
			} else if closed && !errors.Is(err, crew.ErrClosed) {
				t.Fatalf("Submit after shutdown = %v", err)
			}
		case 3:
			if task, err := p.TrySubmit(work(time.Millisecond, arg(&i))); err == nil {
				l.accepted.Add(1)
				l.tasks = append(l.tasks, task)
			}
		case 4:
			if err := p.Pause(); closed != errors.Is(err, crew.ErrClosed) {
				t.Fatalf("Pause = %v (closed %v)", err, closed)
			}
		case 5:
			if err := p.Resume(); closed != errors.Is(err, crew.ErrClosed) {
				t.Fatalf("Resume = %v (closed %v)", err, closed)
			}
		case 6:
			n := 1 + arg(&i)%4
			if err := p.Resize(n); err == nil && int64(n) > l.bound.Load() {
				l.bound.Store(int64(n))
			}
		case 7:
			time.Sleep(time.Duration(arg(&i)%10) * time.Millisecond)
		case 8:
			synctest.Wait()
			s := p.Stats()
			if s.Busy > s.Workers || s.Queued > s.QueueCapacity || s.Workers > max(s.MaxWorkers, int(l.bound.Load())) {
				t.Fatalf("stats out of range: %+v", s)
			}
		case 9, 10: // shutdown with a deadline, in the mode the argument says
			a := arg(&i)
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(a%6)*time.Millisecond)
			_ = p.Shutdown(ctx, crew.ShutdownMode(a%5))
			cancel()
			closed = true
			if err := p.Go(func() {}); !errors.Is(err, crew.ErrClosed) {
				t.Fatalf("Go after Shutdown = %v", err)
			}
		case 11:
			_ = p.Close()
			closed = true
		}
		// Invariant 7 at every quiescent point.
		synctest.Wait()
		checkConservation(t, p)
	}
	// The group's waiter is released whatever happened (a hang would be a
	// deadlock in the bubble); Resume first, as a paused pool holds it.
	_ = p.Resume()
	_ = group.Wait()
	maps.Wait()
	// Wait for every function, including those that ignore cancellation.
	if err := p.Shutdown(context.Background(), crew.Drain); err != nil && !errors.Is(err, crew.ErrStuck) {
		t.Fatal(err)
	}
	if err := p.Shutdown(context.Background(), crew.Drain); err != nil {
		t.Fatalf("second Shutdown = %v", err)
	}
	for _, task := range l.tasks {
		if !task.State().Terminal() {
			t.Fatalf("task %v after Shutdown", task.State())
		}
	}
	s := checkCounts(t, p)
	var observed uint64
	for _, n := range l.observed {
		observed += n
	}
	// A ForEach's tasks (the caller's share, its runners) are known only by
	// their name.
	accepted := uint64(l.accepted.Load()) + l.mapped
	if observed != accepted || s.Submitted-s.Rejected != accepted || s.Dropped != l.observed[crew.Dropped] {
		t.Fatalf("accepted %d, observed %d: %+v %v", accepted, observed, s, l.observed)
	}
	if l.peak.Load() > l.bound.Load() {
		t.Fatalf("peak %d > bound %d", l.peak.Load(), l.bound.Load())
	}
}
