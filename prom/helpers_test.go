package prom_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/prom"
)

// Every test in the package must leave no goroutine behind: see main_test.go.

// requireBinary returns the path of a Prometheus tool. A missing one fails
// the test, so that the checks never pass by skipping unseen; a machine
// that cannot install it says so with CREW_SKIP_PROMETHEUS=1, and the test
// then skips.
func requireBinary(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := name + " not found in PATH: install Debian's prometheus package (see .ci/install)"
	if os.Getenv("CREW_SKIP_PROMETHEUS") == "1" {
		t.Skip(msg + " (CREW_SKIP_PROMETHEUS=1)")
	}
	t.Fatal(msg + ", or set CREW_SKIP_PROMETHEUS=1 to skip these checks")
	return ""
}

// scene is a pool held in a known state: finished tasks of every kind that
// can be made deterministically, running tasks held on a gate, a paused and
// full queue, one refused TryGo and submitters blocked for room.
type scene struct {
	pool    *crew.Pool
	tasks   *prom.TaskMetrics
	want    crew.Stats
	release func() // lets everything finish and shuts the pool down
}

// Finished tasks of the scene, by name and outcome.
const (
	sceneSucceeded = 3 // "ok"
	scenePanicked  = 1 // "boom"
	sceneFailed    = 1 // "fail"
	sceneTimedOut  = 1 // "slow"
	sceneFinished  = sceneSucceeded + scenePanicked + sceneFailed + sceneTimedOut
)

// newScene builds the scene on a pool named name with the given number of
// workers (all held), queue size (all queued) and blocked submitters.
func newScene(t *testing.T, name string, workers, queue, waiters int) *scene {
	t.Helper()
	tasks, err := prom.NewTaskMetrics()
	if err != nil {
		t.Fatal(err)
	}
	// The test learns that a task is finished, counted and observed from
	// this channel: the observer is the pool's last step for a task.
	observed := make(chan crew.Observation, 4*(sceneFinished+workers+queue+waiters))
	pool, err := crew.New(
		crew.WithName(name),
		crew.WithWorkers(workers),
		crew.WithQueueSize(queue),
		crew.WithObserver(func(o crew.Observation) {
			tasks.Observe(o)
			observed <- o
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	released := false
	launched := 0 // blocked submitters started
	gate := make(chan struct{})
	errs := make(chan error, waiters)
	s := &scene{pool: pool, tasks: tasks}
	s.release = func() {
		if released {
			return
		}
		released = true
		close(gate)
		if err := pool.Resume(); err != nil && !errors.Is(err, crew.ErrClosed) {
			t.Error(err)
		}
		// The blocked submitters get in as the queue drains.
		for range launched {
			if err := <-errs; err != nil {
				t.Errorf("blocked submitter: %v", err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := pool.Shutdown(ctx, crew.Drain); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}
	t.Cleanup(s.release)

	// Finished tasks, one observation each.
	for range sceneSucceeded {
		mustGo(t, pool.Go(func() {}, crew.Named("ok")))
	}
	mustGo(t, pool.Go(func() { panic("boom") }, crew.Named("boom")))
	ctx := context.Background()
	if _, err := pool.Submit(ctx, func(context.Context) error { return errors.New("fail") }, crew.Named("fail")); err != nil {
		t.Fatal(err)
	}
	// The function returns only once the timeout has completed its task, so
	// the outcome is TimedOut and never Failed.
	handle := make(chan *crew.Task, 1)
	slow, err := pool.Submit(ctx, func(ctx context.Context) error {
		<-ctx.Done()
		<-(<-handle).Done()
		return ctx.Err()
	}, crew.Named("slow"), crew.Timeout(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	handle <- slow
	for range sceneFinished {
		<-observed
	}

	// Every worker held on the gate.
	started := make(chan struct{})
	for range workers {
		mustGo(t, pool.Go(func() {
			started <- struct{}{}
			<-gate
		}, crew.Named("held")))
	}
	for range workers {
		<-started
	}

	// A paused, full queue, one refusal and blocked submitters.
	if err := pool.Pause(); err != nil {
		t.Fatal(err)
	}
	for range queue {
		mustGo(t, pool.TryGo(func() {}, crew.Named("queued")))
	}
	if err := pool.TryGo(func() {}, crew.Named("refused")); !errors.Is(err, crew.ErrQueueFull) {
		t.Fatalf("TryGo on a full queue: %v, want ErrQueueFull", err)
	}
	for range waiters {
		launched++
		go func() { errs <- pool.Go(func() {}, crew.Named("late")) }()
	}
	deadline := time.Now().Add(10 * time.Second)
	for pool.Stats().Waiting < waiters {
		if time.Now().After(deadline) {
			t.Fatalf("submitters waiting: %d, want %d", pool.Stats().Waiting, waiters)
		}
		runtime.Gosched()
	}

	s.want = crew.Stats{
		Workers: workers, Busy: workers, MaxWorkers: workers,
		Queued: queue, QueueCapacity: queue, Waiting: waiters,
		Paused:    true,
		Submitted: sceneFinished + uint64(workers+queue) + 1,
		Succeeded: sceneSucceeded, Failed: sceneFailed, Panicked: scenePanicked, TimedOut: sceneTimedOut,
		Rejected: 1,
	}
	if got := pool.Stats(); got != s.want {
		t.Fatalf("scene stats:\n got %+v\nwant %+v", got, s.want)
	}
	return s
}

func mustGo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
