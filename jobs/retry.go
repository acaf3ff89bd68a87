package jobs

import (
	"errors"
	"fmt"
	"time"
)

// A kind's run function ends a job in one of three ways besides success:
// an error, which is retried after a backoff while attempts remain; a
// Permanent error, which ends the job at once; or Snooze, which runs the
// job again after a while without counting the run as an attempt.

// Permanent marks err as a failure no retry can mend (bad input, a
// refusal): the job fails at once, whatever attempts remain.
// Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// Snooze asks for the job to run again after d, the run not counted as an
// attempt: for a job that finds it is too early (a resource not ready, a
// rate limit). d must be more than 0.
func Snooze(d time.Duration) error { return &snoozeError{d} }

type snoozeError struct{ d time.Duration }

func (e *snoozeError) Error() string { return fmt.Sprintf("snoozed for %v", e.d) }

// SnoozedFor reports the wait a run asked for with Snooze.
func SnoozedFor(err error) (time.Duration, bool) {
	var s *snoozeError
	if errors.As(err, &s) && s.d > 0 {
		return s.d, true
	}
	return 0, false
}

// DefaultMaxAttempts is the runs a job may take, its retries included,
// unless its spec, its kind or its runner say otherwise: 25, as River and
// asynq count.
const DefaultMaxAttempts = 25

// MaxMaxAttempts bounds the attempts a spec may ask for.
const MaxMaxAttempts = 1000

// Backoff is the wait before a job's next run after its attempt-th run
// failed: 2^(attempt-1) seconds capped at an hour, less up to a half at
// random (so that jobs that failed together do not all come back
// together): 1 s after the first failure, 2 s after the second, 4 s after
// the third, ..., 34 min after the 12th and an hour from the 13th on, each
// less up to a half. An attempt below 1 waits as the first. random(n) is
// a number from 0 to n-1 (rand.Int64N).
func Backoff(attempt int, random func(n int64) int64) time.Duration {
	d := time.Second
	for i := 1; i < attempt && d < time.Hour; i++ {
		d *= 2
	}
	d = min(d, time.Hour)
	half := int64(d / 2)
	return time.Duration(int64(d) - half + random(half+1))
}
