package crew_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/crew-go/crew"
)

// TestFinishedTasksAreNotRetained: once a task has run, neither an idle
// worker nor a handle the caller keeps holds on to its function and what
// it captured.
func TestFinishedTasksAreNotRetained(t *testing.T) {
	p := newPool(t, crew.WithWorkers(1), crew.WithIdleTimeout(time.Hour))
	freedShort, freedLong := make(chan struct{}), make(chan struct{})
	ran := make(chan struct{})
	var handle *crew.Task
	func() {
		short, long := new([1 << 16]byte), new([1 << 16]byte)
		runtime.AddCleanup(short, func(ch chan struct{}) { close(ch) }, freedShort)
		runtime.AddCleanup(long, func(ch chan struct{}) { close(ch) }, freedLong)
		handle = submit(t, p, func(context.Context) error { long[0] = 1; return nil })
		_ = p.Go(func() { short[0] = 1; close(ran) })
	}()
	<-ran
	if err := handle.Wait(); err != nil {
		t.Fatal(err)
	}
	for name, freed := range map[string]chan struct{}{"short task": freedShort, "long task with a kept handle": freedLong} {
		// Liveness, not timing: collect until the cleanup runs, or give up.
		deadline := time.Now().Add(10 * time.Second)
		for done := false; !done; {
			runtime.GC()
			select {
			case <-freed:
				done = true
			case <-time.After(5 * time.Millisecond):
				if time.Now().After(deadline) {
					t.Fatalf("%s: what its function captured is still reachable", name)
				}
			}
		}
	}
	runtime.KeepAlive(handle)
}
