package jsjobs

import (
	"context"
	"errors"

	"github.com/crew-go/crew/jobs"
)

var errNotYet = errors.New("jsjobs: not built yet")

// List implements jobs.Lister.
func (r *Runner) List(ctx context.Context, q jobs.Query) (jobs.Page, error) {
	if err := q.Validate(); err != nil {
		return jobs.Page{}, err
	}
	return jobs.Page{}, errNotYet
}

// Counts implements jobs.Lister.
func (r *Runner) Counts(ctx context.Context) (jobs.Counts, error) { return nil, errNotYet }

// Retry implements jobs.Retrier.
func (r *Runner) Retry(ctx context.Context, id string) (jobs.Record, error) {
	return jobs.Record{}, errNotYet
}
