package crew_test

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew"
)

// stormTime is how long TestStopDuringPauseStorm runs each mode at each
// GOMAXPROCS. The long form is a command of its own:
//
//	go test -run '^TestStopDuringPauseStorm$' -storm 30s .
//	go test -run '^TestStopDuringPauseStorm$' -storm 30s -tags crewyield .
var stormTime = flag.Duration("storm", 0, "how long TestStopDuringPauseStorm runs each mode at each GOMAXPROCS (default 200ms)")

// TestStopDuringPauseStorm is invariant 1 for a stop that races Pause and
// Resume under real threads: a small pool is paused and resumed in a loop
// while two submitters keep it full, and then stopped. When Shutdown
// returns nil, every task Go accepted has run (Drain and DrainThenHard) or
// has run or been counted as dropped (Soft, SoftThenHard and Hard), and nothing
// is left queued or in flight. A run takes a few milliseconds; the test runs
// as many as its time allows, at GOMAXPROCS 2, 4 and 8. Built with -tags
// crewyield the pool yields at random between the steps of its protocols,
// which widens the windows between a stop's steps too.
func TestStopDuringPauseStorm(t *testing.T) {
	d := *stormTime
	if d == 0 {
		d = 200 * time.Millisecond
	}
	modes := []crew.ShutdownMode{crew.Drain, crew.DrainThenHard, crew.Soft, crew.SoftThenHard, crew.Hard}
	for _, procs := range []int{2, 4, 8} {
		for _, mode := range modes {
			t.Run(fmt.Sprintf("GOMAXPROCS=%d/%v", procs, mode), func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				n := 0
				for end := time.Now().Add(d); time.Now().Before(end); n++ {
					if !pauseStorm(t, mode, n) {
						t.Fatalf("lost accepted tasks in run %d", n)
					}
				}
				t.Logf("%d stops, none lost a task", n)
			})
		}
	}
}

// pauseStorm runs one storm and its stop, and reports false, having said
// why, if an accepted task was lost.
func pauseStorm(t *testing.T, mode crew.ShutdownMode, n int) bool {
	t.Helper()
	p, err := crew.New(crew.WithWorkers(2), crew.WithQueueSize(8))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var accepted, ran atomic.Int64
	task := func() { ran.Add(1) }
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if p.Pause() != nil || p.Resume() != nil {
				return
			}
		}
	})
	for range 2 {
		wg.Go(func() {
			for {
				if p.Go(task) != nil {
					return
				}
				accepted.Add(1)
			}
		})
	}
	time.Sleep(time.Duration(1+n%4) * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = p.Shutdown(ctx, mode)
	close(stop)
	wg.Wait()
	s := p.Stats()
	lost := accepted.Load() - ran.Load() - int64(s.Dropped)
	if mode == crew.Drain || mode == crew.DrainThenHard {
		lost = accepted.Load() - ran.Load()
	}
	if err != nil || lost != 0 || s.Queued != 0 || s.InFlight() != 0 {
		t.Errorf("run %d, %v: Shutdown: %v; accepted %d, ran %d, dropped %d: %d lost; %v",
			n, mode, err, accepted.Load(), ran.Load(), s.Dropped, lost, s)
		return false
	}
	return true
}
