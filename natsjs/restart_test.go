package natsjs_test

import (
	"context"
	"testing"
	"time"

	"github.com/crew-go/crew/natsjs"
)

// TestSourceSurvivesServerRestart: the server stops and comes back (same
// port, same file store) in the middle of a run; every message completes,
// Run goes on, and duplicates stay within what was in flight.
func TestSourceSurvivesServerRestart(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	// What was held at the stop comes back after it; a renewal delayed by
	// more than half of it on a loaded machine would add duplicates that
	// the restart did not cause.
	const ackWait = 4 * time.Second
	cons := e.consumer(t, "jobs", "crewd", ackWait, -1)
	const n, workers, window = 1000, 8, 2
	e.publish(t, "jobs.a", n)
	ran := newSeen()
	runs := newSeen()
	src := newSource(t, newPool(t, workers), cons, func(ctx context.Context, m *natsjs.Msg) error {
		time.Sleep(time.Millisecond)
		runs.add(0)
		ran.add(m.StreamSeq())
		return nil
	}, natsjs.WithWindow(window), natsjs.WithConn(e.nc))
	run(t, src)
	eventually(t, 20*time.Second, "a third done", func() bool { return ran.distinct() >= n/3 })
	e.restart(t)
	eventually(t, 60*time.Second, "every message done after the restart", func() bool { return ran.distinct() == n })
	eventually(t, 20*time.Second, "every message acked on the server", func() bool {
		info := consumerInfo(t, cons)
		return info.NumAckPending == 0 && info.NumPending == 0
	})
	runs.mu.Lock()
	dups := runs.runs[0] - n
	runs.mu.Unlock()
	t.Logf("duplicates after a server restart: %d (stats %v)", dups, src.Stats())
	// At-least-once: what was held or had its ack in flight when the
	// server stopped may run again, nothing else.
	if dups > 4*(workers+window) {
		t.Fatalf("%d duplicates, want at most %d", dups, 4*(workers+window))
	}
}
