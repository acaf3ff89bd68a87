package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// A program that only submits jobs of a kind (a web front, a cron) need
// not link the code that runs them: it declares the kind by its argument
// type, and the workers that run its jobs register it.

// Declare adds the kind of A to ks without a function to run it, for a
// program that submits the kind's jobs and leaves their runs to workers
// that Register it. Its jobs are checked at Prepare, so at Submit,
// exactly as a registered kind's are (unknown fields refused, A's
// Validate called, the spec's timeout and max_attempts bounded), so that
// a bad job is refused where it is submitted. A declared kind's
// Prepared.Run runs nothing and returns an error that is ErrNotRunHere.
//
// Declare takes no KindOption: a kind's bound of attempts
// (WithMaxAttempts) is the runner's that registers it, read where each
// job runs; a job's own bound travels in its Spec. Declare refuses a
// kind already in ks, declared or registered (a registered kind is
// submitted too), and the names Register refuses.
func Declare[A Args](ks *Kinds) error {
	if ks == nil {
		return errors.New("jobs: Declare: nil *Kinds (declare a jobs.Kinds and pass its address)")
	}
	var zero A
	name, err := kindOf(zero)
	if err != nil {
		return fmt.Errorf("jobs: Declare: %w", err)
	}
	if err := ks.vacant("Declare", name); err != nil {
		return err
	}
	notRun := fmt.Errorf("%s job: %w (jobs.Declare here: the workers that run it register it)", name, ErrNotRunHere)
	ks.add(name, kind{declared: true, prepare: preparer(name, func(context.Context, A) (json.RawMessage, error) {
		return nil, notRun
	})})
	return nil
}

// ErrNotRunHere is in the error of a declared kind's Prepared.Run (and
// in memjobs' refusal of such a job at Submit): the kind is declared,
// not registered, so this process cannot run its jobs. A JetStream
// worker that is delivered one counts a failed attempt, retried with
// backoff, as for a kind it lacks, until a worker that registered the
// kind runs it or its attempts are spent; memjobs, which runs a job in
// the process that submits it, refuses one at Submit instead.
var ErrNotRunHere = errors.New("kind of job declared, not registered: not run here")

// Runs reports whether ks runs the kind's jobs: false for a kind only
// declared (Declare) or not in ks at all, so that a store that runs its
// jobs where they are submitted (memjobs) can refuse the others.
func (ks *Kinds) Runs(name string) bool {
	if ks == nil {
		return false
	}
	k, ok := ks.byName[name]
	return ok && !k.declared
}
