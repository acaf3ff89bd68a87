// Package kinds is crewd's kinds of job, registered with the jobs library
// the way any program's are: sleep (wait a while, to load the service)
// and factorial (the article's computation).
package kinds

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crew-go/crew/jobs"
)

// Sleep waits Duration, honouring its context; then, while the time is
// before FailUntil, it fails (to try retries and dead letters).
type Sleep struct {
	Duration  jobs.Duration `json:"duration"`
	FailUntil time.Time     `json:"fail_until,omitzero"`
}

func (Sleep) Kind() string { return "sleep" }

// Validate refuses a missing or negative duration.
func (s Sleep) Validate() error {
	if s.Duration == 0 {
		return errors.New(`"duration" is required for sleep jobs: a string such as "50ms"`)
	}
	if s.Duration < 0 {
		return fmt.Errorf(`"duration" %v: want more than 0`, time.Duration(s.Duration))
	}
	return nil
}

// Factorial computes N!.
type Factorial struct {
	N *int `json:"n"`
}

func (Factorial) Kind() string { return "factorial" }

// Validate refuses an n whose factorial overflows a uint64.
func (f Factorial) Validate() error {
	if f.N == nil || *f.N < 0 || *f.N > MaxFactorial {
		return fmt.Errorf(`"n" from 0 to %d is required (%d! overflows a uint64)`, MaxFactorial, MaxFactorial+1)
	}
	return nil
}

// MaxFactorial is the largest n whose factorial fits in a uint64.
const MaxFactorial = 20

// Of returns n! for 0 <= n <= MaxFactorial.
func Of(n int) uint64 {
	f := uint64(1)
	for i := 2; i <= n; i++ {
		f *= uint64(i)
	}
	return f
}

// New returns crewd's kinds.
func New() *jobs.Kinds {
	var ks jobs.Kinds
	must(jobs.Register(&ks, func(ctx context.Context, s Sleep) (any, error) {
		t := time.NewTimer(time.Duration(s.Duration))
		defer t.Stop()
		select {
		case <-t.C:
			if time.Now().Before(s.FailUntil) {
				return nil, fmt.Errorf("sleep job: failing until %s", s.FailUntil.Format(time.RFC3339))
			}
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}))
	must(jobs.Register(&ks, func(_ context.Context, f Factorial) (uint64, error) { return Of(*f.N), nil }))
	return &ks
}

func must(err error) {
	if err != nil {
		panic(err) // a kind of crewd's own is wrong: a bug, caught by every test
	}
}
