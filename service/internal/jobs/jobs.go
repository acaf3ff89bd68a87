package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Runner runs jobs and answers for their records.
type Runner interface {
	// Submit validates spec and accepts the job, or refuses it with an
	// error: an *InvalidError, crew.ErrQueueFull, crew.ErrClosed,
	// ErrRecordsFull, ErrUnavailable, or ctx's error.
	Submit(ctx context.Context, spec Spec) (Record, error)
	// Get returns the job's record: ErrNotFound for an unknown (or evicted,
	// or expired) id, ErrUnavailable when the records cannot be read now.
	Get(ctx context.Context, id string) (Record, error)
}

// KeyedRunner is a Runner that takes idempotency keys; both of crewd's do.
type KeyedRunner interface {
	Runner
	// SubmitOnce is Submit under a client's idempotency key: the first
	// request with the key submits the job; a later one with the same spec
	// gets the same job's record and replayed true, one with another spec
	// ErrKeyReused. An invalid key is an *InvalidError.
	SubmitOnce(ctx context.Context, spec Spec, key string) (rec Record, replayed bool, err error)
}

// Spec is what a client asks for: {"kind":"sleep","duration":"50ms"} or
// {"kind":"factorial","n":20}, with an optional "timeout".
type Spec struct {
	Kind     string   `json:"kind"`
	Duration Duration `json:"duration,omitzero"`
	N        *int     `json:"n,omitempty"`
	Timeout  Duration `json:"timeout,omitzero"`
}

// Record is a job as GET /v1/jobs/{id} shows it.
type Record struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind"`
	State   State     `json:"state"`
	Result  any       `json:"result,omitempty"`
	Error   string    `json:"error,omitempty"`
	Created time.Time `json:"created"`
	// Attempts counts the runs started, more than 1 when a run was
	// interrupted (a crash, a hard stop) and the job ran again; durable
	// jobs only.
	Attempts int `json:"attempts,omitempty"`
	// Finished is when the job's end was recorded; durable jobs only.
	Finished time.Time `json:"finished,omitzero"`
	// Trace is the W3C traceparent of the span of the job's latest run,
	// when crewd's tracing is on and that run was sampled: its trace id
	// finds the job's whole trace (request, publish, every run) in the
	// trace backend, and the next run's span links to it. Durable jobs only.
	Trace string `json:"trace,omitempty"`
}

// State is a job's state; the terminal ones are all but Queued and Running.
type State string

const (
	Queued    State = "queued"
	Running   State = "running"
	Succeeded State = "succeeded"
	Failed    State = "failed"
	TimedOut  State = "timed_out"
	Canceled  State = "canceled"
	NotRun    State = "not_run" // accepted, then dropped by shutdown
)

// Terminal reports whether s is final.
func (s State) Terminal() bool { return s != Queued && s != Running }

// InvalidError is a job spec the API answers 400 for.
type InvalidError struct{ Reason string }

func (e *InvalidError) Error() string { return "invalid job: " + e.Reason }

// ErrRecordsFull refuses a job that no record can be kept for, since a job
// without one could be lost unseen: in memory, every record kept is of an
// unfinished job, and none may be evicted; in JetStream, the bucket holds
// as many records as it may, and only their expiry makes room.
var ErrRecordsFull = errors.New("job records full: no room to record a new job")

// ErrNotFound is Get's answer for a job it has no record of.
var ErrNotFound = errors.New("no such job (unknown, or its record was evicted)")

// ErrUnavailable wraps a failure to reach the jobs' stream or records (the
// NATS server unreachable): nothing was accepted, try again later.
var ErrUnavailable = errors.New("job queue unavailable")

// MaxFactorial is the largest n whose factorial fits in a uint64.
const MaxFactorial = 20

// Factorial returns n! for 0 <= n <= MaxFactorial.
func Factorial(n int) uint64 {
	f := uint64(1)
	for i := 2; i <= n; i++ {
		f *= uint64(i)
	}
	return f
}

// Encode validates spec as Validate does and returns it as the message a
// job travels in, its timeout written in: whichever crewd runs the job
// applies the one this crewd accepted, and a retried keyed submit
// compares the same bytes.
func (s Spec) Encode(def, max time.Duration) ([]byte, error) {
	timeout, err := s.Validate(def, max)
	if err != nil {
		return nil, err
	}
	s.Timeout = Duration(timeout)
	return json.Marshal(s)
}

// Validate checks spec against the largest timeout allowed and returns the
// job's timeout (def when the spec gives none).
func (s Spec) Validate(def, max time.Duration) (time.Duration, error) {
	timeout := def
	if s.Timeout != 0 {
		timeout = time.Duration(s.Timeout)
	}
	if timeout <= 0 || timeout > max {
		return 0, &InvalidError{fmt.Sprintf("timeout %v: want more than 0 and at most %v", timeout, max)}
	}
	switch s.Kind {
	case "sleep":
		if s.N != nil {
			return 0, &InvalidError{`"n" is for factorial jobs`}
		}
		if s.Duration == 0 {
			return 0, &InvalidError{`"duration" is required for sleep jobs: a string such as "50ms"`}
		}
		if d := time.Duration(s.Duration); d <= 0 || d > max {
			return 0, &InvalidError{fmt.Sprintf("duration %v: want more than 0 and at most %v", d, max)}
		}
	case "factorial":
		if s.Duration != 0 {
			return 0, &InvalidError{`"duration" is for sleep jobs`}
		}
		if s.N == nil || *s.N < 0 || *s.N > MaxFactorial {
			return 0, &InvalidError{fmt.Sprintf(`"n" from 0 to %d is required (%d! overflows a uint64)`, MaxFactorial, MaxFactorial+1)}
		}
	case "":
		return 0, &InvalidError{`"kind" is required: sleep or factorial`}
	default:
		return 0, &InvalidError{fmt.Sprintf("kind %q: want sleep or factorial", s.Kind)}
	}
	return timeout, nil
}

// Run is the job's function: it honours ctx, which ends at the timeout or
// on a hard stop.
func (s Spec) Run(ctx context.Context) (any, error) {
	switch s.Kind {
	case "sleep":
		t := time.NewTimer(time.Duration(s.Duration))
		defer t.Stop()
		select {
		case <-t.C:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case "factorial":
		return Factorial(*s.N), nil
	}
	return nil, &InvalidError{"kind " + s.Kind}
}

// DurationError is a "duration" or a "timeout" that is not a duration.
type DurationError struct{ Got string }

func (e *DurationError) Error() string {
	return `"duration" and "timeout" want a string such as "50ms", "2s" or "1m", got ` + e.Got
}

// Duration is a time.Duration written as a string ("50ms") in JSON.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &DurationError{Got: fmt.Sprintf("%.40s", b)}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return &DurationError{Got: fmt.Sprintf("%.40q", s)}
	}
	*d = Duration(v)
	return nil
}

// IDLen is the length of a job id: 8 random bytes in lowercase hex.
const IDLen = 16

// NewID makes a job id: IDLen/2 random bytes in lowercase hex.
func NewID() string {
	var b [IDLen / 2]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ValidID reports whether id has the form of the ids crewd makes: IDLen
// lowercase hex digits. Anything else is no job, answered without asking
// a store: an id becomes part of a NATS subject and a key, and the server
// closes a connection whose control line passes 4 KB.
func ValidID(id string) bool {
	if len(id) != IDLen {
		return false
	}
	for i := range len(id) {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
