package jobs

import (
	"context"
	"time"
)

// Ends are the jobs that ended in one minute, counted by their end state.
type Ends struct {
	Minute time.Time `json:"minute"` // its start
	Counts Counts    `json:"counts"` // by terminal state; a state with none is left out
}

// MaxEndsMinutes bounds the minutes EndsPerMinute is asked for: a day.
const MaxEndsMinutes = 24 * 60

// EndCounter is a Lister that counts the jobs ended a minute without
// reading its store: jsjobs from its index of the records.
type EndCounter interface {
	// EndsPerMinute counts the jobs that ended in each of the last
	// minutes (1 to MaxEndsMinutes) minutes, oldest first, the current
	// one last (not yet whole), by the time their end was recorded: as
	// far as their records are kept (a succeeded job's for an hour by
	// default), and a job retried since counts where it is now.
	EndsPerMinute(ctx context.Context, minutes int) ([]Ends, error)
}
