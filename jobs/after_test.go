package jobs_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

// TestGateRules: a spec's Gate is a job id, not among its parents, not with
// a time to run; a job waits for it beside its parents (WaitsFor, and what
// Prepare hands a store), and its end without success cancels the job even
// on failure, as a parent's does only without EvenOnFailure.
func TestGateRules(t *testing.T) {
	ks := kinds(t)
	spec, err := jobs.NewSpec(resize{URL: "u", Width: 2})
	if err != nil {
		t.Fatal(err)
	}
	parent, gate := jobs.NewID(), jobs.NewID()
	for _, c := range []struct {
		edit func(*jobs.Spec)
		want string
	}{
		{func(s *jobs.Spec) { s.Gate = "nope" }, `"gate" "nope": not a job id`},
		{func(s *jobs.Spec) { s.Gate, s.After = parent, []string{parent} }, `among "after" too`},
		{func(s *jobs.Spec) { s.Gate, s.Delay = gate, jobs.Duration(time.Second) }, `"gate" with "run_at" or "delay"`},
	} {
		s := spec
		c.edit(&s)
		_, err := ks.Prepare(s, time.Second, time.Minute)
		var invalid *jobs.InvalidError
		if !errors.As(err, &invalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an *InvalidError with %q", s, err, c.want)
		}
	}
	s := spec
	s.After, s.Gate, s.EvenOnFailure = []string{parent}, gate, true
	p, err := ks.Prepare(s, time.Second, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.After) != 2 || p.After[0] != parent || p.After[1] != gate || len(s.After) != 1 {
		t.Errorf("a job after %s gated by %s waits for %v (its spec's after %v), want both, its parents' untouched", parent, gate, p.After, s.After)
	}
	for _, c := range []struct {
		even     bool
		parent   string
		st       jobs.State
		canceled bool
	}{
		{false, parent, jobs.Failed, true},
		{false, parent, jobs.Succeeded, false},
		{true, parent, jobs.Failed, false},
		{true, gate, jobs.Failed, true},
		{true, gate, jobs.Canceled, true},
		{true, gate, jobs.Succeeded, false},
	} {
		s.EvenOnFailure = c.even
		if got := s.CanceledBy(c.parent, c.st); got != c.canceled {
			t.Errorf("even on failure %v, %s (gate: %v) ended %s: canceled %v, want %v", c.even, c.parent, c.parent == gate, c.st, got, c.canceled)
		}
	}
}
