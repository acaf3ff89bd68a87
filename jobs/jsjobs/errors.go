package jsjobs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go/jetstream"
)

// errChanged is a write refused because the record changed since it was
// read: another run of the same job wrote it.
var errChanged = errors.New("job record changed meanwhile")

// storeError maps an error of the bucket or the stream to the Runner's:
// ErrFull for a stream full of jobs, ctx's own error as it is, and
// ErrUnavailable for the rest.
func storeError(err error) error {
	var api *jetstream.APIError
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &api) && api.ErrorCode != jetstream.JSErrCodeStreamMessageExceedsMaximum && full(api.Description):
		return jobs.ErrFull
	}
	return fmt.Errorf("%w: %v", jobs.ErrUnavailable, err)
}

// full reports whether a store's error says it has reached a limit.
func full(description string) bool {
	for _, s := range []string{"maximum messages", "maximum bytes", "resource limits exceeded", "insufficient resources"} {
		if strings.Contains(description, s) {
			return true
		}
	}
	return false
}

// errTimedOut ends a job's context at its own timeout, to tell it from the
// end of the task's context (a hard stop, a lost lease).
var errTimedOut = errors.New("job timed out")

// errNotMarked cancels a first delivery's run whose record could not be
// read, or says it must not run.
var errNotMarked = errors.New("job's start not recorded")

// errEnded is keep giving way to an end or a cancel recorded first.
var errEnded = errors.New("job ended meanwhile")

// errJobCanceled is the cause of a run's context ended by a cancel.
var errJobCanceled = errors.New("job canceled")
