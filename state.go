package crew

import "time"

// State is where a task stands. A task accepted by the pool reaches exactly
// one of the terminal states, Succeeded to Dropped.
type State uint32

const (
	// Queued: accepted, waiting for a worker.
	Queued State = iota
	// Running: a worker is running its function.
	Running
	// Succeeded: the function returned nil.
	Succeeded
	// Failed: the function returned an error.
	Failed
	// Panicked: the function panicked; the error is a *PanicError.
	Panicked
	// TimedOut: the timeout passed first; the error is ErrTimeout.
	TimedOut
	// Canceled: cancelled before it finished, by a hard stop, the end of the
	// pool's context or its group's first error.
	Canceled
	// Dropped: accepted, then removed from the queue by shutdown without
	// running (ErrNotRun). A task refused at submission has no state: it was
	// never accepted, and Stats counts it as Rejected.
	Dropped

	completing // internal: a finisher has won and is writing the result
)

var stateNames = [...]string{"queued", "running", "succeeded", "failed", "panicked", "timed_out", "canceled", "dropped"}

// String returns the state's lower-case name, as used in metric labels.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// Terminal reports whether s is a final state.
func (s State) Terminal() bool { return s >= Succeeded && s <= Dropped }

// Observation describes one finished task to the observer set with
// WithObserver.
type Observation struct {
	// Name is the task's name, empty when it had none.
	Name string
	// Wait is the time from acceptance to the start of the function, or to
	// the drop for a task that never ran.
	Wait time.Duration
	// Run is the time the function ran, up to its real return, also for a
	// task that timed out; zero for a task that never ran.
	Run time.Duration
	// State is the task's terminal state.
	State State
}
