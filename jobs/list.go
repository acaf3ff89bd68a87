package jobs

import (
	"context"
	"errors"
	"fmt"
)

// Lister is a Runner that lists its jobs by state and counts them; both
// stores are.
type Lister interface {
	Runner
	// List returns a page of jobs, newest first (jsjobs: by the store's
	// time of each job's latest change; memjobs: of its latest
	// submission), and the cursor of the next page. A Query that
	// Validate refuses, or a cursor this store did not make, is an
	// *InvalidError naming the field.
	List(ctx context.Context, q Query) (Page, error)
	// Counts counts the jobs in each state.
	Counts(ctx context.Context) (Counts, error)
}

// Query selects a page of jobs: those in State (any state if empty), of
// Kind (any kind if empty), in Queue (any queue if empty; DefaultQueue
// for the jobs that name none), at most Limit of them (0 is
// DefaultLimit), after the cursor After (the newest if empty).
type Query struct {
	State State
	Kind  string
	Queue string
	Limit int
	After string
}

// DefaultLimit and MaxLimit bound a page's size.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Validate checks q's state and limit and fills in the default limit; a
// store checks the cursor.
func (q *Query) Validate() error {
	if q.State != "" && !q.State.Known() {
		return &InvalidError{Reason: fmt.Sprintf(`"state" %.40q: want one of %v`, string(q.State), States)}
	}
	switch {
	case q.Limit < 0 || q.Limit > MaxLimit:
		return &InvalidError{Reason: fmt.Sprintf(`"limit" %d: want 1 to %d`, q.Limit, MaxLimit)}
	case q.Limit == 0:
		q.Limit = DefaultLimit
	}
	if len(q.Kind) > 200 {
		return &InvalidError{Reason: fmt.Sprintf(`"kind" of %d bytes: want at most 200`, len(q.Kind))}
	}
	if q.Queue != "" {
		return CheckQueue(q.Queue)
	}
	return nil
}

// Page is a page of jobs, and the cursor of the next one (Query.After):
// empty when this page is the last.
type Page struct {
	Jobs []Record `json:"jobs"`
	Next string   `json:"next,omitempty"`
}

// Counts are how many jobs are in each state; a state with none is left
// out.
type Counts map[State]int

// States are the states a job can be in, in the order of its life.
var States = []State{Scheduled, Waiting, Queued, Running, Retrying, Succeeded, Failed, TimedOut, Canceled, NotRun}

// Known reports whether s is one of States.
func (s State) Known() bool {
	for _, k := range States {
		if s == k {
			return true
		}
	}
	return false
}

// BadCursor is the error of a cursor a store cannot read.
func BadCursor(after string) error {
	return &InvalidError{Reason: fmt.Sprintf(`"after" %.40q: not a cursor this list gave (use a page's "next" as it is)`, after)}
}

// Retrier is a Runner that runs an ended job again; both stores are.
type Retrier interface {
	Runner
	// Retry runs a job that failed, timed out, was canceled or was not run
	// again, under its id, with fresh attempts: its record is queued again
	// (Record.Retries counts the retries), keeping the errors of its
	// earlier runs. A job not yet ended is answered as it is, so that a
	// retry repeated is answered like the first; a succeeded one is an
	// *EndedError; an unknown one ErrNotFound.
	Retry(ctx context.Context, id string) (Record, error)
}

// ErrNoSpec refuses to retry a job whose record does not keep its spec
// (one ended before records kept it).
var ErrNoSpec = errors.New("job's record keeps no spec to run it again")
