package crew

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
)

var (
	// ErrClosed is returned by every call made after Shutdown or Close has
	// begun, and is wrapped by the error of a queued task that shutdown
	// completed without running it (see ErrNotRun).
	ErrClosed = errors.New("crew: pool closed")

	// ErrNotRun completes a queued task that shutdown (soft or hard) removed
	// from the queue without running it. errors.Is(ErrNotRun, ErrClosed) holds.
	ErrNotRun = fmt.Errorf("crew: task not run: %w", ErrClosed)

	// ErrQueueFull is returned by TryGo and TrySubmit when the queue has no room.
	ErrQueueFull = errors.New("crew: queue full")

	// ErrNilFunc is returned when a nil task function is submitted.
	ErrNilFunc = errors.New("crew: nil task function")

	// ErrInvalidOption is wrapped by every error New, Resize or a submit
	// returns for a bad option value (a negative size, a zero timeout).
	ErrInvalidOption = errors.New("crew: invalid option")

	// ErrTimeout completes a task whose timeout passed before its function
	// returned. errors.Is(ErrTimeout, context.DeadlineExceeded) holds.
	ErrTimeout = fmt.Errorf("crew: task timed out: %w", context.DeadlineExceeded)

	// ErrCanceled completes a task whose context was cancelled by a hard stop
	// or by the end of the pool's context. errors.Is(ErrCanceled,
	// context.Canceled) holds.
	ErrCanceled = fmt.Errorf("crew: task cancelled: %w", context.Canceled)

	// ErrStuck is wrapped by the error Shutdown and Close return when task
	// functions were still running after their contexts had been cancelled and
	// the stop grace (WithStopGrace) had passed. The error names the tasks.
	ErrStuck = errors.New("crew: task functions still running after cancellation")
)

// PanicError is the error of a task whose function panicked. The worker that
// ran it recovers and goes on serving; the panic value and the stack of the
// panicking goroutine are kept as fields rather than pasted into the message.
type PanicError struct {
	// Task is the task's name, empty when it had none.
	Task string
	// Value is the value passed to panic.
	Value any
	// Stack is the stack trace captured where the panic was recovered.
	Stack []byte
}

func newPanicError(name string, v any) *PanicError {
	return &PanicError{Task: name, Value: v, Stack: debug.Stack()}
}

// Error returns the panic value; the stack is in the Stack field.
func (e *PanicError) Error() string {
	if e.Task != "" {
		return fmt.Sprintf("crew: task %q panicked: %v", e.Task, e.Value)
	}
	return fmt.Sprintf("crew: task panicked: %v", e.Value)
}

// Unwrap returns the panic value when it is an error, so errors.Is and
// errors.As see through a panic(err).
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
