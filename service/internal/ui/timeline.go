package ui

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/crew-go/crew/jobs"
)

// A job's timeline, read from its record alone (no store read more, no
// write): its submit, its wait for its time, each failed run's end with
// the backoff that followed, its end, and how often it was retried by
// hand (the record does not say when).

// event is one line of a job's timeline.
type event struct {
	At     time.Time
	What   string
	Note   string // an error, a wait
	Failed bool   // Note is a run's error
}

// timeline is rec's events, oldest first.
func timeline(rec jobs.Record) []event {
	var out []event
	submit := "submitted"
	if rec.Submitter != "" {
		submit += " by " + rec.Submitter
	}
	if rec.Queue != "" || rec.Spec != nil && rec.Spec.Priority != 0 {
		submit += fmt.Sprintf(" to queue %s, priority %d", cmpOr(rec.Queue, jobs.DefaultQueue), priorityOf(rec))
	}
	out = append(out, event{At: rec.Created, What: submit})
	if !rec.RunAt.IsZero() {
		out = append(out, event{At: rec.RunAt, What: "due", Note: "scheduled for " + rec.RunAt.Sub(rec.Created).Round(time.Second).String() + " after its submit"})
	}
	for i, e := range rec.Errors {
		ev := event{At: e.At, What: fmt.Sprintf("attempt %d failed", e.Attempt), Note: e.Error, Failed: true}
		if i+1 < len(rec.Errors) {
			ev.Note += fmt.Sprintf(" (the next ran %v later)", rec.Errors[i+1].At.Sub(e.At).Round(time.Millisecond))
		}
		out = append(out, ev)
	}
	if rec.State == jobs.Retrying && !rec.NextRun.IsZero() {
		out = append(out, event{At: rec.NextRun, What: "runs again", Note: fmt.Sprintf("attempt %d, after a backoff", rec.Attempts+1)})
	}
	if !rec.Finished.IsZero() {
		end := string(rec.State)
		if rec.CanceledWhile != "" {
			end += " while " + string(rec.CanceledWhile)
		}
		note := fmt.Sprintf("%v after its submit", rec.Finished.Sub(rec.Created).Round(time.Millisecond))
		if rec.Attempts > 0 {
			note += fmt.Sprintf(", %d attempt(s)", rec.Attempts)
		}
		out = append(out, event{At: rec.Finished, What: end, Note: note})
	}
	slices.SortStableFunc(out, func(a, b event) int { return a.At.Compare(b.At) })
	if rec.Retries > 0 {
		// The record keeps how many, not when: said last, undated.
		out = append(out, event{What: fmt.Sprintf("retried by hand %d time(s)", rec.Retries), Note: "each with fresh attempts; the errors above are of every run"})
	}
	return out
}

func priorityOf(rec jobs.Record) int {
	if rec.Spec != nil && rec.Spec.Priority != 0 {
		return rec.Spec.Priority
	}
	return jobs.DefaultPriority
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// traceparent is a W3C traceparent: version, trace id, span id, flags.
var traceparent = regexp.MustCompile(`^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$`)

// traceLink is the trace UI's address of a job's trace: the template's
// {trace_id} replaced by the trace id of its traceparent; "" without a
// template or a trace.
func traceLink(template, tp string) string {
	m := traceparent.FindStringSubmatch(tp)
	if template == "" || m == nil {
		return ""
	}
	return strings.ReplaceAll(template, "{trace_id}", m[1])
}
