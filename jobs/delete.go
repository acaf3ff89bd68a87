package jobs

import "context"

// Deleter is a Runner that deletes ended jobs: the JetStream store is one.
type Deleter interface {
	Runner
	// Delete removes an ended job (succeeded, failed, timed out or
	// canceled) and what its record keeps (its result, its errors), before
	// its retention would: Get answers ErrNotFound from then on, on every
	// replica. It returns the record as it was. A job not ended is a
	// *LiveError naming its state (cancel it first); an unknown one, or
	// one deleted already, ErrNotFound. A job retried or canceled while
	// the delete read it is read again: a delete never removes a job
	// that runs.
	Delete(ctx context.Context, id string) (Record, error)
}

// LiveError refuses to delete a job that has not ended.
type LiveError struct{ State State }

func (e *LiveError) Error() string {
	return "job not ended: " + string(e.State) + " (cancel it first)"
}
