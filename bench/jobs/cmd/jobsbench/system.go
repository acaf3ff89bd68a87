package main

import (
	"context"
	"time"
)

// system is one job system under test: its store's server, a client that
// enqueues, and workers that can be killed and started again.
//
// A new contender is one more implementation of system, added to
// newSystems. The crew jobs library's own Go client and workers on an
// embedded server (modules github.com/crew-go/crew/jobs, jobs/jsjobs and
// jobs/natsd) go there as
// "crew-jobs": its Enqueue calls the library's client, its workers run in
// a `jobsbench worker -system crew-jobs` process (see worker.go) so that
// Restart can SIGKILL them, and they report through the same events.
type system interface {
	// Name is the row's label in the tables.
	Name() string
	// Settings says, in a few words, how the system is configured.
	Settings() string
	// Start starts the system for one scenario: a fresh store (a flushed
	// Redis, a new database, a new data directory), the workers, and a
	// client. Runs and ends are reported to t. On return Enqueue may be
	// called.
	Start(ctx context.Context, sc scenario, t *tracker) error
	// Enqueue submits job n (0 <= n < sc.Jobs), a sleep of sc.Sleep. It is
	// called from sc.Producers goroutines at once.
	Enqueue(ctx context.Context, n int) error
	// WaitAll returns when every job has ended once (t.AllDone) or ctx is
	// done. A system whose ends are not pushed by its workers polls here.
	WaitAll(ctx context.Context) error
	// Restart SIGKILLs the process that runs the jobs and starts it again
	// at once. It returns when the kill happened and when the new process
	// was started.
	Restart(ctx context.Context) (killed, restarted time.Time, err error)
	// Stop stops whatever Start started and keeps nothing.
	Stop() error
}

// storeReporter is a system that can say what its store holds for jobs
// not ended: after the kill test's bound, what is stuck where.
type storeReporter interface {
	// StoreState counts the jobs the store holds as not ended (queued,
	// running, waiting for a retry), and says in which states.
	StoreState(ctx context.Context) (notEnded int, detail string, err error)
}

// scenario is one measurement: how many jobs of what length, from how many
// producers, on how many workers.
type scenario struct {
	Name      string
	Jobs      int
	Sleep     time.Duration
	Producers int
	Workers   int
}
