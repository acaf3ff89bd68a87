package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

type resize struct {
	URL   string        `json:"url"`
	Width int           `json:"width"`
	Wait  jobs.Duration `json:"wait,omitzero"`
	After time.Time     `json:"after,omitzero"`
}

func (resize) Kind() string { return "resize" }

func (r resize) Validate() error {
	if r.Width < 1 {
		return errors.New(`"width" must be 1 or more`)
	}
	return nil
}

type thumb struct {
	URL string `json:"url"`
}

func kinds(t *testing.T) *jobs.Kinds {
	t.Helper()
	var ks jobs.Kinds
	err := jobs.Register(&ks, func(_ context.Context, a resize) (thumb, error) {
		return thumb{URL: a.URL + "?w=" + strings.Repeat("x", a.Width)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return &ks
}

// TestPrepareNamesTheFieldAtFault: every refusal is an *InvalidError whose
// text names what is wrong, and a good spec runs its kind's function with
// its typed arguments.
func TestPrepareNamesTheFieldAtFault(t *testing.T) {
	ks := kinds(t)
	for _, c := range []struct {
		spec jobs.Spec
		want string
	}{
		{jobs.Spec{}, `"kind" is required: resize`},
		{jobs.Spec{Kind: "zip"}, `kind "zip": want resize`},
		{jobs.Spec{Kind: "resize", Args: json.RawMessage(`{"width":0}`)}, `"width" must be 1 or more`},
		{jobs.Spec{Kind: "resize", Args: json.RawMessage(`{"width":"wide"}`)}, `"width": want an integer, got a JSON string`},
		{jobs.Spec{Kind: "resize", Args: json.RawMessage(`{"width":2,"height":3}`)}, `unknown field "height"`},
		{jobs.Spec{Kind: "resize", Args: json.RawMessage(`{"width":2,"wait":"soon"}`)}, `"wait": want a duration such as "50ms"`},
		{jobs.Spec{Kind: "resize", Args: json.RawMessage(`{"width":2,"after":"soon"}`)}, `"after": parsing time "soon"`},
		{jobs.Spec{Kind: "resize", Args: json.RawMessage(`[1]`)}, `want a JSON object`},
		{jobs.Spec{Kind: "resize", Args: json.RawMessage(`{"width":2}`), Timeout: jobs.Duration(time.Hour)}, `timeout 1h0m0s: want more than 0 and at most 1m0s`},
		{jobs.Spec{Kind: "resize", Args: json.RawMessage(`{"width":2}`), MaxAttempts: -1}, `"max_attempts" -1: want 1 to 1000`},
		{jobs.Spec{Kind: "resize", Args: json.RawMessage(`{"width":2}`), MaxAttempts: 1001}, `"max_attempts" 1001: want 1 to 1000`},
	} {
		_, err := ks.Prepare(c.spec, time.Second, time.Minute)
		var invalid *jobs.InvalidError
		if !errors.As(err, &invalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an *InvalidError with %q", c.spec, err, c.want)
		}
	}
	spec, err := jobs.NewSpec(resize{URL: "u", Width: 2})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ks.Prepare(spec, time.Second, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background())
	if err != nil || string(out) != `{"url":"u?w=xx"}` {
		t.Fatalf("run: %s %v", out, err)
	}
	if got, err := jobs.ResultOf[thumb](jobs.Record{State: jobs.Succeeded, Result: out}); err != nil || got.URL != "u?w=xx" {
		t.Fatalf("ResultOf: %+v %v", got, err)
	}
}

// TestPrepareNormalises: the same job spelled otherwise (fields in another
// order, the default timeout given) travels as the same bytes.
func TestPrepareNormalises(t *testing.T) {
	ks := kinds(t)
	a, err := ks.Prepare(jobs.Spec{Kind: "resize", Args: json.RawMessage(`{"width":2,"url":"u"}`)}, time.Second, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ks.Prepare(jobs.Spec{Kind: "resize", Args: json.RawMessage(`{"url":"u", "width":2}`), Timeout: jobs.Duration(time.Second)}, time.Second, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if string(a.Body) != string(b.Body) {
		t.Fatalf("%s != %s", a.Body, b.Body)
	}
}

type badKind struct{}

func (badKind) Kind() string { return "no spaces" }

type ptrKind struct{ n int }

func (p *ptrKind) Kind() string { _ = p.n; return "ptr" }

// TestRegisterRefuses: a bad name, a kind twice, a nil function, a kind
// whose name cannot be read off its zero value, a bound of attempts
// negative or over MaxMaxAttempts.
func TestRegisterRefuses(t *testing.T) {
	ks := kinds(t)
	if err := jobs.Register(ks, func(context.Context, resize) (int, error) { return 0, nil }); err == nil {
		t.Error("a kind registered twice")
	}
	if err := jobs.Register(ks, func(context.Context, badKind) (int, error) { return 0, nil }); err == nil {
		t.Error("a kind named with a space")
	}
	if err := jobs.Register[resize, int](ks, nil); err == nil {
		t.Error("a nil function")
	}
	if err := jobs.Register(ks, func(context.Context, *ptrKind) (int, error) { return 0, nil }); err == nil {
		t.Error("a pointer kind whose Kind reads its receiver")
	}
	var fresh jobs.Kinds
	for _, n := range []int{-1, 0, jobs.MaxMaxAttempts + 1} {
		if err := jobs.Register(&fresh, func(context.Context, resize) (int, error) { return 0, nil }, jobs.WithMaxAttempts(n)); err == nil || !strings.Contains(err.Error(), "want 1 to 1000") {
			t.Errorf("WithMaxAttempts(%d): %v, want a refusal saying 1 to 1000", n, err)
		}
	}
}

// TestBackoffIsAsDocumented: the default backoff is 2^(attempt-1) s, 1 s
// after the first failure, capped at an hour from the 13th, less up to a
// half at random; its doc said 2^attempt s.
func TestBackoffIsAsDocumented(t *testing.T) {
	none := func(int64) int64 { return 0 }
	all := func(n int64) int64 { return n - 1 }
	half := func(n int64) int64 { return n / 2 }
	for _, c := range []struct {
		attempt int
		full    time.Duration // with no jitter: the longest wait
	}{
		{0, time.Second}, {1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {4, 8 * time.Second},
		{5, 16 * time.Second}, {6, 32 * time.Second}, {7, 64 * time.Second}, {8, 128 * time.Second},
		{9, 256 * time.Second}, {10, 512 * time.Second}, {11, 1024 * time.Second}, {12, 2048 * time.Second},
		{13, time.Hour}, {14, time.Hour}, {25, time.Hour}, {jobs.MaxMaxAttempts, time.Hour},
	} {
		lo, mid, hi := jobs.Backoff(c.attempt, none), jobs.Backoff(c.attempt, half), jobs.Backoff(c.attempt, all)
		if lo != c.full/2 || hi != c.full || mid <= lo || mid >= hi {
			t.Errorf("attempt %d: backoff %v, %v, %v at the least, middle and most jitter; want %v to %v",
				c.attempt, lo, mid, hi, c.full/2, c.full)
		}
	}
}

// TestResultOfSaysWhatIsMissing: the zero Record and a result the store
// did not keep are errors, not a zero value.
func TestResultOfSaysWhatIsMissing(t *testing.T) {
	if _, err := jobs.ResultOf[string](jobs.Record{}); err == nil || !strings.Contains(err.Error(), "zero Record") {
		t.Fatalf("ResultOf(Record{}): %v", err)
	}
	rec := jobs.Record{ID: "j", State: jobs.Succeeded, Error: "result of 9 bytes not kept"}
	if _, err := jobs.ResultOf[string](rec); !errors.Is(err, jobs.ErrResultNotKept) || !strings.Contains(err.Error(), "9 bytes") {
		t.Fatalf("ResultOf of a result not kept: %v", err)
	}
	rec.Error = ""
	if got, err := jobs.ResultOf[string](rec); err != nil || got != "" {
		t.Fatalf("ResultOf of a job with no result: %q %v", got, err)
	}
}

// TestNilKinds: registering into a nil *Kinds is an error, and a nil
// *Kinds has no names, rather than a panic.
func TestNilKinds(t *testing.T) {
	err := jobs.Register(nil, func(context.Context, resize) (string, error) { return "", nil })
	if err == nil || !strings.Contains(err.Error(), "nil *Kinds") {
		t.Fatalf("Register(nil, ...): %v", err)
	}
	var ks *jobs.Kinds
	if names := ks.Names(); len(names) != 0 {
		t.Fatalf("a nil *Kinds has names %v", names)
	}
}

// TestUnknownKindIsBoth: Prepare's error for a kind not registered, or an
// argument its kind lacks, is an *InvalidError (a 400 at submit) and
// ErrUnknownKind or ErrUnknownField (a retry at run); other refusals are
// neither.
func TestUnknownKindIsBoth(t *testing.T) {
	var ks jobs.Kinds
	_, err := ks.Prepare(jobs.Spec{Kind: "nope", Args: []byte(`{}`)}, time.Second, time.Minute)
	var invalid *jobs.InvalidError
	if !errors.As(err, &invalid) || !errors.Is(err, jobs.ErrUnknownKind) || !strings.Contains(err.Error(), `kind "nope"`) {
		t.Fatalf("Prepare of an unknown kind: %v", err)
	}
	if _, err := ks.Prepare(jobs.Spec{Args: []byte(`{}`)}, time.Second, time.Minute); errors.Is(err, jobs.ErrUnknownKind) {
		t.Fatalf("a spec with no kind is not of an unknown kind: %v", err)
	}
	if err := jobs.Register(&ks, func(context.Context, resize) (string, error) { return "", nil }); err != nil {
		t.Fatal(err)
	}
	_, err = ks.Prepare(jobs.Spec{Kind: "resize", Args: []byte(`{"url":"u","width":1,"height":2}`)}, time.Second, time.Minute)
	if !errors.As(err, &invalid) || !errors.Is(err, jobs.ErrUnknownField) || errors.Is(err, jobs.ErrUnknownKind) || err.Error() != `invalid job: resize job: unknown field "height"` {
		t.Fatalf("Prepare with an unknown field: %v", err)
	}
	if _, err := ks.Prepare(jobs.Spec{Kind: "resize", Args: []byte(`{"url":"u","width":0}`)}, time.Second, time.Minute); errors.Is(err, jobs.ErrUnknownField) || errors.Is(err, jobs.ErrUnknownKind) {
		t.Fatalf("arguments refused by Validate are not unknown: %v", err)
	}
}

// TestTimeouts: a store's timeouts with its defaults applied.
func TestTimeouts(t *testing.T) {
	for _, c := range []struct{ def, longest, wantDef, wantLongest time.Duration }{
		{0, 0, 30 * time.Second, 5 * time.Minute},
		{0, 10 * time.Second, 10 * time.Second, 10 * time.Second},
		{0, time.Hour, 30 * time.Second, time.Hour},
		{10 * time.Minute, 0, 10 * time.Minute, 10 * time.Minute},
		{time.Second, 0, time.Second, 5 * time.Minute},
		{time.Second, time.Minute, time.Second, time.Minute},
	} {
		if def, longest := jobs.Timeouts(c.def, c.longest); def != c.wantDef || longest != c.wantLongest {
			t.Errorf("Timeouts(%v, %v) = %v, %v; want %v, %v", c.def, c.longest, def, longest, c.wantDef, c.wantLongest)
		}
	}
}
