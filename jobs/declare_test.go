package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

// TestDeclaredKindIsCheckedAsRegistered: a kind declared by its argument
// type alone is prepared exactly as the same kind registered (the same
// body, the same refusals: unknown fields, Validate, timeout, attempts),
// and its Run runs nothing, ErrNotRunHere.
func TestDeclaredKindIsCheckedAsRegistered(t *testing.T) {
	registered := kinds(t)
	var declared jobs.Kinds
	if err := jobs.Declare[resize](&declared); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour).Truncate(time.Second)
	for _, spec := range []jobs.Spec{
		{Kind: "resize", Args: json.RawMessage(`{"url":"u", "width":2}`)},
		{Kind: "resize", Args: json.RawMessage(`{"width":2}`), Timeout: jobs.Duration(5 * time.Second), MaxAttempts: 3, RunAt: later},
		{},
		{Kind: "zip"},
		{Kind: "resize", Args: json.RawMessage(`{"width":0}`)},
		{Kind: "resize", Args: json.RawMessage(`{"width":"wide"}`)},
		{Kind: "resize", Args: json.RawMessage(`{"width":2,"height":3}`)},
		{Kind: "resize", Args: json.RawMessage(`{"width":2,"after":"soon"}`)},
		{Kind: "resize", Args: json.RawMessage(`{"width":2}`), Timeout: jobs.Duration(time.Hour)},
		{Kind: "resize", Args: json.RawMessage(`{"width":2}`), MaxAttempts: 1001},
		{Kind: "resize", Args: json.RawMessage(`{"width":2}`), RunAt: time.Now().Add(-time.Hour)},
	} {
		want, wantErr := registered.Prepare(spec, time.Second, time.Minute)
		got, err := declared.Prepare(spec, time.Second, time.Minute)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || string(got.Body) != string(want.Body) || got.Timeout != want.Timeout ||
			got.MaxAttempts != want.MaxAttempts || !got.RunAt.Equal(want.RunAt) || got.Request() != want.Request() {
			t.Errorf("%+v declared: %s %v %d %v, %v; registered: %s %v %d %v, %v", spec, got.Body, got.Timeout, got.MaxAttempts, got.RunAt, err,
				want.Body, want.Timeout, want.MaxAttempts, want.RunAt, wantErr)
		}
		for _, is := range []error{jobs.ErrUnknownKind, jobs.ErrUnknownField, jobs.ErrRunAtPast} {
			if errors.Is(err, is) != errors.Is(wantErr, is) {
				t.Errorf("%+v: declared %v, registered %v: not both %v", spec, err, wantErr, is)
			}
		}
		if err != nil {
			continue
		}
		if got.Run == nil {
			t.Fatalf("%+v: a declared kind's Prepared has a nil Run", spec)
		}
		if out, err := got.Run(context.Background()); !errors.Is(err, jobs.ErrNotRunHere) || out != nil || !strings.Contains(err.Error(), "resize job") {
			t.Errorf("%+v: a declared kind's run: %s, %v; want ErrNotRunHere naming the kind", spec, out, err)
		}
	}
	if names := declared.Names(); !slices.Equal(names, []string{"resize"}) {
		t.Errorf("Names of a declared kind: %v", names)
	}
	if declared.Runs("resize") || !registered.Runs("resize") || registered.Runs("zip") || (*jobs.Kinds)(nil).Runs("resize") {
		t.Error("Runs is true only for a registered kind")
	}
}

// TestDeclareRefuses: a kind is in a set once, declared or registered,
// whichever came first; a nil *Kinds and a bad name are refused as
// Register refuses them.
func TestDeclareRefuses(t *testing.T) {
	runResize := func(context.Context, resize) (int, error) { return 0, nil }
	var ks jobs.Kinds
	if err := jobs.Declare[resize](&ks); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		err  error
		want string
	}{
		{"declared twice", jobs.Declare[resize](&ks), `Declare: kind "resize" declared twice`},
		{"registered once declared", jobs.Register(&ks, runResize), `Register: kind "resize" declared already`},
		{"declared once registered", jobs.Declare[resize](kinds(t)), `Declare: kind "resize" registered already`},
		{"registered twice", jobs.Register(kinds(t), runResize), `Register: kind "resize" registered twice`},
		{"a bad name", jobs.Declare[badKind](&ks), `kind "no spaces"`},
		{"a pointer kind", jobs.Declare[*ptrKind](&ks), "value receiver"},
		{"a nil *Kinds", jobs.Declare[resize](nil), "nil *Kinds"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.what, c.err, c.want)
		}
	}
	if ks.Runs("resize") {
		t.Error("a declared kind refused a Register runs")
	}
}
