package natsjs

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Every error value of the package is here; match them with errors.Is.
var (
	// ErrInvalidOption is wrapped by the error New returns for a bad option
	// or argument.
	ErrInvalidOption = errors.New("natsjs: invalid option")

	// ErrLeaseLost is the cause of the end of a handler's context when the
	// message's lease could not be renewed for a whole AckWait: the server
	// may already have given the message to someone else.
	// errors.Is(ErrLeaseLost, context.Canceled) holds.
	ErrLeaseLost = fmt.Errorf("natsjs: message lease lost: %w", context.Canceled)

	// ErrCalledFromHandler is returned by Shutdown called with a handler's
	// context, or one made from it: the stop has begun, but a handler
	// cannot wait for its own end. Run returns once the handler has.
	ErrCalledFromHandler = errors.New("natsjs: Shutdown called from a handler: the stop has begun; a handler cannot wait for itself")

	// ErrRunning is returned by a second call to Run.
	ErrRunning = errors.New("natsjs: Run already called")

	// ErrUnavailable is matched (errors.Is) by every error made by
	// Unavailable.
	ErrUnavailable = errors.New("natsjs: unavailable")
)

// Unavailable marks err, returned by a handler, as an outage of something
// the handler needs (a store that timed out, had no responders or no
// leader), not a failure of the message: the Source runs the handler
// again with the same delivery after the unavailable delay
// (WithUnavailableDelay), with no backoff, renewing the message's lease
// meanwhile, and counts it as Unavailable. The server's delivery count does
// not move, so an outage spends no attempt, neither the consumer's
// MaxDeliver nor WithMaxDeliver's, and never terms or dead-letters a
// message, even at its last delivery; Msg.Runs tells the runs of one
// delivery apart. A stop meanwhile hands the message back as one not
// started. Unavailable(nil) is nil.
func Unavailable(err error) error {
	if err == nil {
		return nil
	}
	return &unavailableError{err}
}

type unavailableError struct{ err error }

func (e *unavailableError) Error() string        { return "unavailable: " + e.err.Error() }
func (e *unavailableError) Unwrap() error        { return e.err }
func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }

// RetryAfter marks err, returned by a handler, as a failure whose next
// delivery the handler schedules itself: the Source naks the message with
// delay d rather than its own backoff (a job system's retry with its own
// backoff, or a snooze). Like any failure it counts as naked, and a
// finite MaxDeliver still dead-letters the last delivery. RetryAfter(nil,
// d) is nil.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfterError{err, d}
}

type retryAfterError struct {
	err error
	d   time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }
