package natsjs

import (
	"context"
	"errors"
	"fmt"
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
)
