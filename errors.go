package crew

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
)

// Every error value and type of the package is here. Sentinels are matched
// with errors.Is, types with errors.As.
var (
	// ErrClosed is returned by every call made after Shutdown or Close has
	// begun, and is wrapped by the error of a queued task that shutdown
	// completed without running it (see ErrNotRun).
	ErrClosed = errors.New("crew: pool closed")

	// ErrNotRun completes a queued task that shutdown (soft or hard) removed
	// from the queue without running it. errors.Is(ErrNotRun, ErrClosed) holds.
	ErrNotRun = fmt.Errorf("crew: task not run: %w", ErrClosed)

	// ErrQueueFull is returned by TryGo and TrySubmit when the queue has no
	// room, and by a group's TryGo when its Limit has none.
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
	// functions were still running, after their contexts had been cancelled,
	// when the wait had to end: at the deadline of the context given to
	// Shutdown, or after the stop grace (WithStopGrace) without one. The
	// error names the tasks.
	ErrStuck = errors.New("crew: task functions still running after cancellation")

	// ErrGoexit completes a task whose function called runtime.Goexit (as
	// t.FailNow does in a test). The worker it ran on is replaced.
	ErrGoexit = errors.New("crew: task function called runtime.Goexit")

	// ErrCalledFromTask is returned by Shutdown and Close when they are
	// called from a function running on the pool itself: waiting for the
	// pool's workers would wait for the caller. The stop has begun as asked;
	// the pool terminates once the calling function returns, and another
	// Shutdown made from outside the pool waits for that.
	ErrCalledFromTask = errors.New("crew: Shutdown called from one of the pool's own tasks would wait for itself")
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

// catch recovers a task's panic; it must be deferred directly (recover
// works only there). It stores the panic in *pe as a *PanicError named name.
func catch(name string, pe **PanicError) {
	if v := recover(); v != nil {
		*pe = panicError(name, v)
	}
}

// panicError is the one place a recovered panic value becomes an error. A
// panic the package passes on (passOn: a typed result passing its own on)
// is kept as it is, named if it was not, so that a panic is never wrapped
// twice. Any other value, a *PanicError the task's function panicked with
// included, is wrapped anew: that one belongs to the user (the error of
// another task, say) and must be neither renamed nor have its stack stand
// for this panic's.
func panicError(name string, v any) *PanicError {
	if p, ok := v.(passOn); ok {
		if p.pe.Task == "" {
			p.pe.Task = name
		}
		return p.pe
	}
	return &PanicError{Task: name, Value: v, Stack: debug.Stack()}
}

// passOn is the value the package panics with to pass a panic it already
// caught, as a *PanicError, on to the worker (results.go).
type passOn struct{ pe *PanicError }

// IndexError is the error of one element of Map, ForEach, MapSeq or
// ForEachSeq: its position in the input, and what went wrong there (the
// function's error, or a *PanicError). Match it with errors.As; errors.Is
// and errors.As see through it to Err. With JoinErrors, the joined errors
// come back in input order.
type IndexError struct {
	// Index is the element's position in the slice or sequence.
	Index int
	// Err is the element's error.
	Err error

	// caught: Err is a panic recovered by atIndex or atIndexOf and not yet
	// reported. The first look (elementPanic) reports it and clears this,
	// so that the same error returned by a function further out (a group
	// task returning the error of a Map it ran) is a returned error, not a
	// second panic.
	caught bool
}

func (e *IndexError) Error() string { return fmt.Sprintf("crew: element %d: %v", e.Index, e.Err) }

// Unwrap returns the element's error.
func (e *IndexError) Unwrap() error { return e.Err }

// UnfinishedError is returned by a wait with a deadline that passed before
// every task had finished.
type UnfinishedError struct {
	// Running and Queued count the tasks still running and not yet started.
	Running, Queued int
	// Indexes lists, in submission order, the tasks that had not finished,
	// where the caller tracks them (Results, Map).
	Indexes []int
	// Err is the cause of the end of the wait, such as
	// context.DeadlineExceeded.
	Err error
}

func (e *UnfinishedError) Error() string {
	return fmt.Sprintf("crew: wait ended (%v) with %d task(s) running and %d queued", e.Err, e.Running, e.Queued)
}

// Unwrap returns the cause of the end of the wait.
func (e *UnfinishedError) Unwrap() error { return e.Err }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
}

// atIndex is deferred by an element's function: it wraps the element's
// error, or its panic, in an *IndexError. A panic is recovered here and
// returned as an IndexError wrapping the *PanicError, which the group still
// counts and reports as a panic (see Group.run).
func atIndex(i int, err *error) {
	if v := recover(); v != nil {
		*err = &IndexError{Index: i, Err: panicError("", v), caught: true}
	} else if *err != nil {
		*err = &IndexError{Index: i, Err: *err}
	}
}

// atIndexOf is atIndex for a run of elements (split.calls): the element
// is the one *i is on when the run ends.
func atIndexOf(i *int64, err *error) {
	if v := recover(); v != nil {
		*err = &IndexError{Index: int(*i), Err: panicError("", v), caught: true}
	} else if *err != nil {
		*err = &IndexError{Index: int(*i), Err: *err}
	}
}

// elementPanic is the panic an element's error carries (atIndex wraps it
// in an *IndexError), named name if it has no name of its own, or nil. It
// reports a panic once: called again with the same error, it returns nil.
func elementPanic(err error, name string) *PanicError {
	if ie, ok := err.(*IndexError); ok && ie.caught {
		ie.caught = false
		if pe, ok := ie.Err.(*PanicError); ok {
			if pe.Task == "" {
				pe.Task = name
			}
			return pe
		}
	}
	return nil
}

func indexOf(err error) int {
	if ie, ok := err.(*IndexError); ok {
		return ie.Index
	}
	return math.MaxInt
}
