package jobs

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Args is what a job of one kind is given: a type that encodes as JSON (a
// struct, usually), whose Kind, with a value receiver, names the kind.
// Register adds the kind with the function that runs it, Declare without
// one (for a program that only submits); NewSpec makes a job of it.
type Args interface {
	Kind() string
}

// Validator is implemented by Args that check themselves. Validate is
// called when a job is submitted, so that bad arguments are refused then
// (an *InvalidError with the error's text), and again before it runs. Its
// error should name the field at fault.
type Validator interface {
	Validate() error
}

// Kinds is the set of job kinds a runner accepts and runs, each with the
// type of its arguments and the function that runs it, or none for a kind
// only declared (Declare: accepted, not run). The zero value is an empty
// set; add kinds with Register or Declare before the set is given to a
// runner, and not after.
type Kinds struct {
	byName map[string]kind
}

// kind is a registered or declared kind, its types erased: prepare decodes and checks
// a job's arguments and returns what runs it.
type kind struct {
	prepare     func(args json.RawMessage) (normal json.RawMessage, run func(context.Context) (json.RawMessage, error), err error)
	maxAttempts int  // 0: the spec's or the runner's
	boundSet    bool // WithMaxAttempts given: its n must be a bound
	declared    bool // by Declare: its run is ErrNotRunHere
}

// KindOption configures a kind at Register. Make one with WithMaxAttempts.
type KindOption interface{ apply(*kind) }

type kindOption func(*kind)

func (f kindOption) apply(k *kind) { f(k) }

// WithMaxAttempts bounds the runs of the kind's jobs, retries included,
// unless a job's spec says otherwise; n from 1 to MaxMaxAttempts.
func WithMaxAttempts(n int) KindOption {
	return kindOption(func(k *kind) { k.maxAttempts, k.boundSet = n, true })
}

// MaxKindLen bounds a kind's name, which becomes a metric label and part
// of log lines.
const MaxKindLen = 64

// Register adds the kind of A to ks: run runs each job of it with its
// arguments decoded (unknown fields refused), and its result, encoded as
// JSON, is the job's Record.Result (ResultOf decodes it). run should
// honour ctx, which ends at the job's timeout, on a hard stop or when the
// job is cancelled. Register refuses a name already in ks (registered, or
// declared with Declare: a registered kind is submitted too), an empty
// one, one longer than MaxKindLen or with characters other than letters,
// digits, '_', '-' and '.'.
func Register[A Args, R any](ks *Kinds, run func(ctx context.Context, args A) (R, error), opts ...KindOption) error {
	if ks == nil {
		return errors.New("jobs: Register: nil *Kinds (declare a jobs.Kinds and pass its address)")
	}
	if run == nil {
		return errors.New("jobs: Register: nil run function")
	}
	var k kind
	for _, o := range opts {
		o.apply(&k)
	}
	if k.boundSet && (k.maxAttempts < 1 || k.maxAttempts > MaxMaxAttempts) {
		return fmt.Errorf("jobs: Register: max attempts %d: want 1 to %d", k.maxAttempts, MaxMaxAttempts)
	}
	var zero A
	name, err := kindOf(zero)
	if err != nil {
		return fmt.Errorf("jobs: Register: %w", err)
	}
	if err := ks.vacant("Register", name); err != nil {
		return err
	}
	k.prepare = preparer(name, func(ctx context.Context, args A) (json.RawMessage, error) {
		v, err := run(ctx, args)
		if err != nil {
			return nil, err
		}
		out, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%s job: encode its result: %w", name, err)
		}
		if string(out) == "null" {
			return nil, nil
		}
		return out, nil
	})
	ks.add(name, k)
	return nil
}

// vacant refuses name if ks has it already, registered or declared, for
// the error of Register or Declare (op).
func (ks *Kinds) vacant(op, name string) error {
	k, dup := ks.byName[name]
	switch {
	case !dup:
		return nil
	case op == "Register" && k.declared:
		return fmt.Errorf("jobs: Register: kind %q declared already: register it instead (a registered kind is submitted too)", name)
	case op == "Declare" && !k.declared:
		return fmt.Errorf("jobs: Declare: kind %q registered already (a registered kind is submitted too)", name)
	case k.declared:
		return fmt.Errorf("jobs: Declare: kind %q declared twice", name)
	}
	return fmt.Errorf("jobs: Register: kind %q registered twice", name)
}

// add adds kind k under name.
func (ks *Kinds) add(name string, k kind) {
	if ks.byName == nil {
		ks.byName = make(map[string]kind)
	}
	ks.byName[name] = k
}

// preparer is a kind's prepare: it decodes a job's arguments as an A
// (unknown fields refused), validates them, and returns them normalised
// with the function that runs the job with them.
func preparer[A Args](name string, run func(context.Context, A) (json.RawMessage, error)) func(json.RawMessage) (json.RawMessage, func(context.Context) (json.RawMessage, error), error) {
	return func(raw json.RawMessage) (json.RawMessage, func(context.Context) (json.RawMessage, error), error) {
		var args A
		if err := decodeArgs(raw, &args); errors.As(err, new(unknownField)) {
			return nil, nil, unknownError{&InvalidError{fmt.Sprintf("%s job: %v", name, err)}, ErrUnknownField}
		} else if err != nil {
			return nil, nil, &InvalidError{fmt.Sprintf("%s job: %v", name, err)}
		}
		if v, ok := any(args).(Validator); ok {
			if err := v.Validate(); err != nil {
				return nil, nil, &InvalidError{fmt.Sprintf("%s job: %v", name, err)}
			}
		}
		normal, err := json.Marshal(args)
		if err != nil {
			return nil, nil, fmt.Errorf("%s job: encode its arguments: %w", name, err)
		}
		return normal, func(ctx context.Context) (json.RawMessage, error) { return run(ctx, args) }, nil
	}
}

// kindOf reads the kind's name off A's zero value and checks it.
func kindOf(a Args) (name string, err error) {
	defer func() {
		if recover() != nil {
			err = fmt.Errorf("%T.Kind panicked on a zero value: give it a value receiver", a)
		}
	}()
	name = a.Kind()
	if name == "" || len(name) > MaxKindLen || strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
	}) >= 0 {
		return "", fmt.Errorf("kind %.80q: want 1 to %d letters, digits, '_', '-' or '.'", name, MaxKindLen)
	}
	return name, nil
}

// decodeArgs decodes a job's arguments into args, refusing fields args
// does not have; missing or null arguments leave args zero.
func decodeArgs(raw json.RawMessage, args any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	err := dec.Decode(args)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		if dec.More() {
			return errors.New("its arguments are followed by more JSON")
		}
		return nil
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return fmt.Errorf("%q: want %s, got %s", typeErr.Field, typeName(typeErr.Type), jsonValue(typeErr.Value))
	case errors.As(err, &typeErr):
		return fmt.Errorf("its arguments: want a JSON object, got %s", jsonValue(typeErr.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return unknownField(strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	if field := failingField(raw, args); field != "" {
		// A value its type's own decoder refused (a time.Time's, say),
		// which encoding/json does not place.
		return fmt.Errorf("%q: %w", field, err)
	}
	return fmt.Errorf("its arguments: %w", err)
}

// failingField finds the field of the struct args points to whose value
// in raw fails to decode alone; "" if none does.
func failingField(raw json.RawMessage, args any) string {
	t := reflect.TypeOf(args).Elem()
	var fields map[string]json.RawMessage
	if t.Kind() != reflect.Struct || json.Unmarshal(raw, &fields) != nil {
		return ""
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		v, ok := fields[name]
		if !f.IsExported() || !ok {
			continue
		}
		if json.Unmarshal(v, reflect.New(f.Type).Interface()) != nil {
			return name
		}
	}
	return ""
}

// jsonValue says what a decoder found: its type ("a JSON string") as
// encoding/json reports it, or the value itself as Duration reports it.
func jsonValue(v string) string {
	if strings.ContainsAny(v, "\"0123456789") {
		return v
	}
	return "a JSON " + v
}

// typeName says what a JSON value of type t looks like, for an error.
func typeName(t reflect.Type) string {
	switch {
	case t == durationType:
		return `a duration such as "50ms", "2s" or "1m"`
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		return "an integer"
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uintptr:
		return "an integer of 0 or more"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return "an array"
	case t.Kind() == reflect.Map || t.Kind() == reflect.Struct:
		return "an object"
	}
	return t.String()
}

// Names returns the kinds' names, declared ones included, sorted (none for
// a nil *Kinds).
func (ks *Kinds) Names() []string {
	if ks == nil {
		return nil
	}
	names := make([]string, 0, len(ks.byName))
	for n := range ks.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// DefaultTimeout and DefaultMaxTimeout are a store's timeouts of a job
// where its settings give none.
const (
	DefaultTimeout    = 30 * time.Second
	DefaultMaxTimeout = 5 * time.Minute
)

// Timeouts applies a store's defaults to its settings: def 0 is
// DefaultTimeout, or longest if that is less; longest 0 is
// DefaultMaxTimeout, or def if that is more.
func Timeouts(def, longest time.Duration) (time.Duration, time.Duration) {
	if def == 0 {
		def = DefaultTimeout
		if longest > 0 {
			def = min(def, longest)
		}
	}
	if longest == 0 {
		longest = max(DefaultMaxTimeout, def)
	}
	return def, longest
}

// Prepared is a job checked against its kind: its timeout, its
// arguments normalised, and the function that runs it once.
type Prepared struct {
	Queue       string // the spec's, DefaultQueue when it names none
	Priority    int    // the spec's, DefaultPriority when it names none
	Timeout     time.Duration
	MaxAttempts int       // the spec's, else the kind's; 0: the runner's default
	RunAt       time.Time // the spec's (or its Delay from now), when it is a second or more ahead
	Body        []byte    // the Spec as it travels: kind, normalised arguments, timeout, RunAt
	Submitter   string    // the spec's, which travels beside Body
	After       []string  // the jobs it waits for (Spec.WaitsFor: its parents and its gate)
	Run         func(ctx context.Context) (json.RawMessage, error)
	given       []byte   // the spec as it was given, where Body is not (its time resolved)
	delay       Duration // the spec's Delay, when RunAt was resolved from it
}

// Within refuses a RunAt more than max ahead with an *InvalidError naming
// the field the spec gave: "delay" when RunAt was resolved from one, else
// "run_at". A job due now is always within.
func (p Prepared) Within(max time.Duration) error {
	switch {
	case p.RunAt.IsZero() || time.Until(p.RunAt) <= max:
		return nil
	case p.delay > 0:
		return &InvalidError{fmt.Sprintf(`"delay" %v: want at most %v`, time.Duration(p.delay), max)}
	}
	return &InvalidError{fmt.Sprintf(`"run_at" %s: want at most %v ahead`, p.RunAt.Format(time.RFC3339), max)}
}

// Request is the fingerprint of the spec as it was given, its RunAt or
// Delay as written: what a keyed submit compares, so that a request
// repeated later, its time nearer or passed, is the same request.
func (p Prepared) Request() string {
	if p.given != nil {
		return Fingerprint(p.given)
	}
	return Fingerprint(p.Body)
}

// Prepare checks spec against its kind and against the largest timeout
// allowed (def when the spec gives none). A refusal is an *InvalidError
// naming the field at fault. Body and Request are the same for two specs
// that differ only in the order of their fields or a default spelled out,
// so that a retried keyed submit compares equal.
func (ks *Kinds) Prepare(spec Spec, def, max time.Duration) (Prepared, error) {
	timeout := def
	if spec.Timeout != 0 {
		timeout = time.Duration(spec.Timeout)
	}
	if timeout <= 0 || timeout > max {
		return Prepared{}, &InvalidError{fmt.Sprintf("timeout %v: want more than 0 and at most %v", timeout, max)}
	}
	if spec.Kind == "" {
		return Prepared{}, &InvalidError{fmt.Sprintf(`"kind" is required: %s`, strings.Join(ks.Names(), " or "))}
	}
	if spec.MaxAttempts < 0 || spec.MaxAttempts > MaxMaxAttempts {
		return Prepared{}, &InvalidError{fmt.Sprintf(`"max_attempts" %d: want 1 to %d (0: the kind's)`, spec.MaxAttempts, MaxMaxAttempts)}
	}
	k, ok := ks.byName[spec.Kind]
	if !ok {
		return Prepared{}, unknownError{&InvalidError{fmt.Sprintf("kind %.80q: want %s", spec.Kind, strings.Join(ks.Names(), " or "))}, ErrUnknownKind}
	}
	normal, run, err := k.prepare(spec.Args)
	if err != nil {
		return Prepared{}, err
	}
	if spec.Queue == DefaultQueue {
		spec.Queue = "" // as it travels: the same body as a spec that names none
	} else if spec.Queue != "" {
		if err := CheckQueue(spec.Queue); err != nil {
			return Prepared{}, err
		}
	}
	if err := CheckPriority(spec.Priority); err != nil {
		return Prepared{}, err
	}
	priority := cmp.Or(spec.Priority, DefaultPriority)
	if spec.Priority == DefaultPriority {
		spec.Priority = 0 // as it travels, as the default queue's name
	}
	switch {
	case spec.Delay < 0:
		return Prepared{}, &InvalidError{fmt.Sprintf(`"delay" %v: want 0 or more`, time.Duration(spec.Delay))}
	case spec.Delay > 0 && !spec.RunAt.IsZero():
		return Prepared{}, &InvalidError{`"run_at" and "delay": give one or the other`}
	}
	if err := checkAfter(spec); err != nil {
		return Prepared{}, err
	}
	spec.Args, spec.Timeout = normal, Duration(timeout)
	given, err := json.Marshal(spec)
	if err != nil {
		return Prepared{}, err
	}
	job := Prepared{Queue: cmp.Or(spec.Queue, DefaultQueue), Priority: priority, Timeout: timeout, MaxAttempts: spec.MaxAttempts, Submitter: spec.Submitter, After: spec.WaitsFor(), Run: run}
	if job.MaxAttempts == 0 {
		job.MaxAttempts = k.maxAttempts
	}
	runAt := spec.RunAt
	if spec.Delay > 0 {
		runAt = time.Now().Add(time.Duration(spec.Delay))
	}
	switch {
	case runAt.IsZero():
	case time.Since(runAt) > time.Second:
		return Prepared{given: given}, pastError{&InvalidError{fmt.Sprintf(`"run_at" %s is in the past`, runAt.Format(time.RFC3339))}}
	case time.Until(runAt) < time.Second:
		runAt = time.Time{} // due now
	}
	job.RunAt = runAt
	if spec.Delay == 0 && runAt.Equal(spec.RunAt) {
		job.Body = given // no time to resolve: the spec travels as given
		return job, nil
	}
	job.given, job.delay = given, spec.Delay
	spec.RunAt, spec.Delay = runAt, 0
	if job.Body, err = json.Marshal(spec); err != nil {
		return Prepared{}, err
	}
	return job, nil
}

// ErrRunAtPast is wrapped, beside an *InvalidError, by Prepare's refusal
// of a RunAt in the past; the Prepared it returns then has the request's
// fingerprint (Request), so that a keyed submit repeated after its job's
// time can still answer that job.
var ErrRunAtPast = errors.New("run_at in the past")

type pastError struct{ *InvalidError }

func (e pastError) Unwrap() []error { return []error{e.InvalidError, ErrRunAtPast} }

// NewSpec makes a job of args' kind with args, for a runner's Submit.
func NewSpec(args Args) (Spec, error) {
	if args == nil {
		return Spec{}, errors.New("jobs: NewSpec: nil arguments")
	}
	name, err := kindOf(args)
	if err != nil {
		return Spec{}, fmt.Errorf("jobs: NewSpec: %w", err)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return Spec{}, fmt.Errorf("jobs: %s job: encode its arguments: %w", name, err)
	}
	return Spec{Kind: name, Args: raw}, nil
}

// ErrUnknownKind is in the error of Prepare for a kind not registered,
// and ErrUnknownField for arguments with a field their kind does not
// have; each is an *InvalidError too. A store refuses such a job at
// Submit; one delivered to a worker that lacks the kind or the field (a
// deploy that reached the submitters first) is a failed attempt there,
// retried (jsjobs).
var (
	ErrUnknownKind  = errors.New("kind of job not registered")
	ErrUnknownField = errors.New("field of a job's arguments unknown to its kind")
)

// unknownError is an *InvalidError that is also ErrUnknownKind or
// ErrUnknownField (is).
type unknownError struct {
	*InvalidError
	is error
}

func (e unknownError) Unwrap() error        { return e.InvalidError }
func (e unknownError) Is(target error) bool { return target == e.is }

// unknownField is decodeArgs's error for a field args does not have.
type unknownField string

func (f unknownField) Error() string { return "unknown field " + string(f) }

// ErrResultNotKept is ResultOf's answer for a job that succeeded with a
// result its store could not keep (over the store's size limit): the
// record's Error says why.
var ErrResultNotKept = errors.New("job's result not kept")

// ResultOf decodes a succeeded job's result as its kind's result type R.
// A result its store did not keep is ErrResultNotKept.
func ResultOf[R any](rec Record) (R, error) {
	var r R
	if rec.State == "" {
		return r, errors.New("jobs: ResultOf of a record with no state (the zero Record)")
	}
	if rec.State != Succeeded {
		return r, fmt.Errorf("jobs: job %s is %s, not succeeded", rec.ID, rec.State)
	}
	if len(rec.Result) == 0 {
		if rec.Error != "" {
			return r, fmt.Errorf("%w: job %s: %s", ErrResultNotKept, rec.ID, rec.Error)
		}
		return r, nil
	}
	err := json.Unmarshal(rec.Result, &r)
	return r, err
}
