package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
)

// TestTimelineFromTheRecord: a job submitted to a queue at priority 1, due
// later, failed twice, retried by hand and ended reads each in order, its
// backoffs and its whole time; a trace becomes a link only with a
// template and a well-formed traceparent.
func TestTimelineFromTheRecord(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	rec := jobs.Record{
		ID: "0123456789abcdef", Kind: "mail", Queue: "email", State: jobs.Failed, Submitter: "ops",
		Created: t0, RunAt: t0.Add(time.Minute), Attempts: 2, Retries: 1, Finished: t0.Add(2 * time.Minute),
		Spec: &jobs.Spec{Kind: "mail", Priority: 1},
		Errors: []jobs.AttemptError{
			{Attempt: 1, Error: "smtp: 451", At: t0.Add(61 * time.Second)},
			{Attempt: 2, Error: "smtp: 554", At: t0.Add(2 * time.Minute)},
		},
	}
	var got []string
	for _, e := range timeline(rec) {
		got = append(got, e.What+" | "+e.Note)
	}
	want := []string{
		"submitted by ops to queue email, priority 1 | ",
		"due | scheduled for 1m0s after its submit",
		"attempt 1 failed | smtp: 451 (the next ran 59s later)",
		"attempt 2 failed | smtp: 554",
		"failed | 2m0s after its submit, 2 attempt(s)",
		"retried by hand 1 time(s) | each with fresh attempts; the errors above are of every run",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("timeline:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, c := range []struct{ tmpl, tp, want string }{
		{"https://jaeger.example/trace/{trace_id}", tp, "https://jaeger.example/trace/4bf92f3577b34da6a3ce929d0e0e4736"},
		{"", tp, ""},
		{"https://jaeger.example/trace/{trace_id}", "not a traceparent", ""},
		{"https://jaeger.example/trace/{trace_id}", "", ""},
	} {
		if got := traceLink(c.tmpl, c.tp); got != c.want {
			t.Errorf("traceLink(%q, %q) = %q, want %q", c.tmpl, c.tp, got, c.want)
		}
	}
}
