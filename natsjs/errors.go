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

	// ErrRunning is returned by a second call to Run.
	ErrRunning = errors.New("natsjs: Run already called")

	// ErrUnavailable is matched (errors.Is) by every error made by
	// Unavailable.
	ErrUnavailable = errors.New("natsjs: unavailable")
)

// Unavailable marks err, returned by a handler, as an outage of something
// the handler needs (a store that timed out, had no responders or no
// leader), not a failure of the message: the Source hands the message back
// after the unavailable delay (WithUnavailableDelay), with no backoff, and
// never terms or dead-letters it for that; it counts it as Unavailable. The
// server still counts the delivery: with a finite MaxDeliver on the
// consumer, the message's last delivery cannot be handed back and is
// dead-lettered instead, so a consumer whose outages must cost no attempt
// has MaxDeliver -1 and its handler counts the attempts that matter.
// Unavailable(nil) is nil.
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
