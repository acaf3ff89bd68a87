package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"
	"unicode/utf8"
)

// Runner runs jobs and answers for their records.
type Runner interface {
	// Submit validates spec and accepts the job, or refuses it with an
	// error: an *InvalidError, crew.ErrQueueFull, crew.ErrClosed,
	// ErrFull, ErrUnavailable, ErrNotRunHere (a store that runs its jobs
	// in the submitting process, for a kind only declared), or ctx's
	// error.
	Submit(ctx context.Context, spec Spec) (Record, error)
	// Get returns the job's record: ErrNotFound for an unknown (or evicted,
	// or expired) id, ErrUnavailable when the records cannot be read now.
	Get(ctx context.Context, id string) (Record, error)
}

// Canceler is a Runner that cancels jobs; both stores are.
type Canceler interface {
	Runner
	// Cancel cancels a job not yet ended: a scheduled or queued one never
	// runs, a running one has its context cancelled wherever it runs, and
	// its record says canceled, with the state it was in. Cancelling a
	// canceled job answers the same again; an ended one is an *EndedError
	// naming its state; an unknown one ErrNotFound.
	Cancel(ctx context.Context, id string) (rec Record, was State, err error)
}

// EndedError refuses to cancel a job that has ended.
type EndedError struct{ State State }

func (e *EndedError) Error() string { return "job already ended: " + string(e.State) }

// KeyedRunner is a Runner that takes idempotency keys; both of crewd's do.
type KeyedRunner interface {
	Runner
	// SubmitOnce is Submit under a client's idempotency key: the first
	// request with the key submits the job; a later one with the same spec
	// gets the same job's record and replayed true, one with another spec
	// ErrKeyReused. An invalid key is an *InvalidError. A ctx already
	// ended refuses the request; once begun, it goes on to its answer (at
	// most KeyedTimeout) whatever ctx does, so that a client that gave up
	// and asks again under the key finds the job this request made.
	SubmitOnce(ctx context.Context, spec Spec, key string) (rec Record, replayed bool, err error)
}

// Spec is a job as it is submitted and as it travels in its message:
// its kind, its arguments as the kind's JSON, and an optional timeout.
// NewSpec makes one from a kind's typed arguments; crewd's API makes one
// from a request's body.
type Spec struct {
	Kind    string          `json:"kind"`
	Args    json.RawMessage `json:"args,omitempty"`
	Timeout Duration        `json:"timeout,omitzero"`
	// MaxAttempts bounds the runs of this job, its retries included; 0
	// leaves it to the kind (WithMaxAttempts) or the runner's default.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// RunAt, if set, is when the job is due: until then it is scheduled,
	// not waiting (no backlog, no autoscaling on it). A time less than a
	// second ahead is now.
	RunAt time.Time `json:"run_at,omitzero"`
	// Delay, instead of RunAt, makes the job due that long after it is
	// submitted. A keyed submit repeated later compares its Delay, not the
	// time it came to.
	Delay Duration `json:"delay,omitzero"`
	// Queue is the queue the job waits in, run by the processes that
	// serve it; "" is DefaultQueue.
	Queue string `json:"queue,omitempty"`
	// Priority orders the jobs waiting in one queue: 1 starts first, then
	// 2, 3 and 4, each about in submit order; 0 is DefaultPriority. Only the
	// JetStream store keeps it (memjobs runs its jobs in submit order).
	Priority int `json:"priority,omitempty"`
	// After names the jobs this one waits for (at most MaxAfter, each
	// known to the store when it is submitted): it is waiting, its own
	// state, not backlog, until every one of them has ended, then queued.
	// A parent that ends without success (failed, timed out, canceled, not
	// run) cancels it, unless EvenOnFailure; its run reads its parents'
	// results with ParentResult. Not with RunAt or Delay.
	After []string `json:"after,omitempty"`
	// EvenOnFailure runs a job with After once its parents have ended,
	// whatever their ends.
	EvenOnFailure bool `json:"even_on_failure,omitempty"`
	// Gate is a job this one waits for that is none of its parents: it
	// must succeed (its end without success cancels this job whatever
	// EvenOnFailure says), and this job's run does not see it (Info.After,
	// ParentEnds). A workflow's steps wait for its gate, opened by the
	// submit's commit (SubmitWorkflow). Not with RunAt or Delay.
	Gate string `json:"gate,omitempty"`
	// Submitter names who submitted the job, as the submitting program
	// knows them (crewd: the name of the API token that did); "" for no
	// one named. It travels beside the job, not in it: it is no part of
	// the job's arguments, of a keyed submit's fingerprint or of the JSON
	// a client sends, and a store keeps it in the job's record.
	Submitter string `json:"-"`
}

// Record is a job as a client reads it.
type Record struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	Queue string `json:"queue,omitempty"` // "" is DefaultQueue
	State State  `json:"state"`
	// Submitter is the Spec's: who submitted the job, when the submitter
	// named them.
	Submitter string `json:"submitter,omitempty"`
	// Result is the kind's result as JSON, once the job succeeded;
	// ResultOf decodes it.
	Result  json.RawMessage `json:"result,omitempty"`
	Error   string          `json:"error,omitempty"`
	Created time.Time       `json:"created"`
	// RunAt is when a scheduled job is due.
	RunAt time.Time `json:"run_at,omitzero"`
	// After are the jobs a job waits for, its parents (Spec.After).
	After []string `json:"after,omitempty"`
	// CanceledWhile is the state a canceled job was in when its cancel was
	// recorded.
	CanceledWhile State `json:"canceled_while,omitempty"`
	// Attempts counts the runs started: more than 1 when a run failed or
	// timed out and the job was retried, or a run was interrupted (a
	// crash, a hard stop) and the job ran again; durable jobs only. A
	// durable job's first run writes its record only at its end, so a job
	// delivered and not yet ended the first time reads running with 0
	// attempts (it may be held for a free worker, which the store cannot
	// tell apart); a first run killed with its process is counted when the
	// process starts again on its journal (jsjobs.Config.Journal), and
	// left uncounted when it never does (Deliveries then says more).
	Attempts int `json:"attempts,omitempty"`
	// Deliveries is how often the stream has delivered the job's message,
	// as its consumer counts them, up to the latest run recorded; durable
	// jobs only.
	Deliveries int `json:"deliveries,omitempty"`
	// NextRun is when a retrying job runs again.
	NextRun time.Time `json:"next_run,omitzero"`
	// Progress is the latest progress its run reported (Progress), while
	// the job runs: nil before the first report is written, once the run
	// has ended, and for a store that keeps no progress.
	Progress *ProgressReport `json:"progress,omitempty"`
	// Errors are the errors of the latest failed runs, oldest first, at
	// most MaxErrors of them.
	Errors []AttemptError `json:"errors,omitempty"`
	// Finished is when the job's end was recorded; durable jobs only.
	Finished time.Time `json:"finished,omitzero"`
	// Retries counts the times Retry ran the job again after it ended.
	Retries int `json:"retries,omitempty"`
	// Spec is the job as it was submitted, kept in the record of a job
	// that ended without success, so that Retry can run it again.
	Spec *Spec `json:"spec,omitempty"`
	// Trace is the W3C traceparent of the span of the job's latest run,
	// when tracing is on and that run was sampled: its trace id finds the
	// job's whole trace (request, publish, every run) in the trace
	// backend, and the next run's span links to it. Durable jobs only.
	Trace string `json:"trace,omitempty"`
}

// State is a job's state. A job submitted with a RunAt is scheduled until
// it is due, one with After waiting until its parents have ended; a job
// is queued until a run starts, running
// while one does, retrying between a failed run and the next (at
// Record.NextRun), and ends in one of the terminal states. A store may
// read a job running from the moment a worker process takes it, before
// its run starts there (jsjobs.Runner says when).
type State string

const (
	Scheduled State = "scheduled" // due at Record.RunAt, not yet waiting to run
	Waiting   State = "waiting"   // for its parents (Spec.After) to end
	Queued    State = "queued"
	Running   State = "running"
	Retrying  State = "retrying" // a run failed or timed out; the next is due at NextRun
	Succeeded State = "succeeded"
	Failed    State = "failed"
	TimedOut  State = "timed_out"
	Canceled  State = "canceled"
	NotRun    State = "not_run" // accepted, then dropped by shutdown
)

// Terminal reports whether s is final.
func (s State) Terminal() bool {
	return s != Scheduled && s != Waiting && s != Queued && s != Running && s != Retrying
}

// AttemptError is how one run failed.
type AttemptError struct {
	Attempt int       `json:"attempt"`
	Error   string    `json:"error"`
	At      time.Time `json:"at"`
}

// MaxErrors is how many of its runs' errors a record keeps, and
// MaxErrorLen how many bytes of each AddError keeps: a record stays small
// whatever a kind's errors say.
const (
	MaxErrors   = 10
	MaxErrorLen = 1024
)

// clip cuts s to at most n bytes, at a character's start, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = " …"
	i := n - len(mark)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + mark
}

// AddError records the error of the record's current attempt (at most
// MaxErrorLen bytes of it), dropping the oldest past MaxErrors, and makes
// it the record's Error.
func (r *Record) AddError(msg string, at time.Time) {
	msg = clip(msg, MaxErrorLen)
	r.Error = msg
	r.Errors = append(r.Errors, AttemptError{Attempt: r.Attempts, Error: msg, At: at})
	if n := len(r.Errors); n > MaxErrors {
		r.Errors = append(r.Errors[:0:0], r.Errors[n-MaxErrors:]...)
	}
}

// InvalidError is a job that cannot be accepted as it was given: an
// unknown kind, arguments its kind refuses, a timeout out of bounds.
// Reason names the field at fault; crewd answers it with 400.
type InvalidError struct{ Reason string }

func (e *InvalidError) Error() string { return "invalid job: " + e.Reason }

// ErrFull refuses a job because the jobs already accepted and not yet
// ended fill the store (the stream's limits, or in memory the records
// kept); finished jobs never do. Try again later.
var ErrFull = errors.New("job store full: the jobs waiting or running fill it; try again later")

// ErrNotFound is Get's answer for a job it has no record of.
var ErrNotFound = errors.New("no such job (unknown, or its record was evicted)")

// ErrUnavailable wraps a failure to reach the jobs' stream or records (the
// NATS server unreachable): nothing was accepted, try again later.
var ErrUnavailable = errors.New("job queue unavailable")

// Duration is a time.Duration written as a string ("50ms") in JSON, for
// a kind's arguments and a job's timeout. A value that is not a duration
// fails to decode with a *json.UnmarshalTypeError naming its field.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &json.UnmarshalTypeError{Value: fmt.Sprintf("%.40s", b), Type: durationType}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return &json.UnmarshalTypeError{Value: fmt.Sprintf("%.40q", s), Type: durationType}
	}
	*d = Duration(v)
	return nil
}

var durationType = reflect.TypeFor[Duration]()

// IDLen is the length of a job id: 8 random bytes in lowercase hex.
const IDLen = 16

// NewID makes a job id: IDLen/2 random bytes in lowercase hex.
func NewID() string {
	var b [IDLen / 2]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ValidID reports whether id has the form of the ids NewID makes: IDLen
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
