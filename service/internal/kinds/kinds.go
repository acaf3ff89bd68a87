// Package kinds is crewd's kinds of job, registered with the jobs library
// the way any program's are: sleep (wait a while, to load the service;
// it reports its progress once a second) and factorial (the article's
// computation).
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

// sleep runs a sleep job. Once a second it reports how much of its
// duration has gone (jobs.Progress), so that a sleep of a second or more
// shows its progress; a shorter one, as the load generator's are, reports
// nothing and costs no write.
func sleep(ctx context.Context, s Sleep) (any, error) {
	d := time.Duration(s.Duration)
	t := time.NewTimer(d)
	defer t.Stop()
	every := time.NewTicker(time.Second)
	defer every.Stop()
	start := time.Now()
	for {
		select {
		case <-t.C:
			if time.Now().Before(s.FailUntil) {
				return nil, fmt.Errorf("sleep job: failing until %s", s.FailUntil.Format(time.RFC3339))
			}
			return nil, nil
		case <-every.C:
			if slept := time.Since(start); slept < d { // not the tick of its end
				_ = jobs.Progress(ctx, float64(slept)/float64(d), fmt.Sprintf("slept %v of %v", slept.Round(time.Second), d))
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
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
	must(jobs.Register(&ks, sleep))
	must(jobs.RegisterWorkflow(&ks)) // the workflows' own jobs (POST /v1/workflows)
	must(jobs.Register(&ks, func(_ context.Context, f Factorial) (uint64, error) { return Of(*f.N), nil }))
	return &ks
}

func must(err error) {
	if err != nil {
		panic(err) // a kind of crewd's own is wrong: a bug, caught by every test
	}
}
