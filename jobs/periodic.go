package jobs

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Periodic is a job submitted at every tick of a schedule: each tick
// submits Spec as a job of its own, with an id of its own, run, retried,
// listed and canceled like any other.
type Periodic struct {
	// Name names the schedule: 1 to 64 letters, digits, '-' or '_'.
	// Setting a name again replaces its schedule.
	Name string `json:"name"`
	// Every is when it ticks: "@every 1h" (a second or more), a cron
	// expression with seconds ("0 30 2 * * *": at 02:30:00 every day),
	// or one of @hourly, @daily (@midnight), @weekly, @monthly, @yearly
	// (@annually).
	Every string `json:"every"`
	// TimeZone is the IANA zone a cron expression is read in (UTC if
	// empty); @every takes none.
	TimeZone string `json:"time_zone,omitempty"`
	// Spec is the job each tick submits; it may not have a RunAt or a
	// Delay.
	Spec Spec `json:"spec"`

	// Read back only (SetPeriodic ignores them), from what its latest
	// tick noted: when that tick was handled (Last), when the next is due
	// (Next), and the jobs of its latest ticks, newest first, at most
	// MaxRecentTicks (Recent). Zero until it first ticked.
	Last   time.Time `json:"last,omitzero"`
	Next   time.Time `json:"next,omitzero"`
	Recent []string  `json:"recent,omitempty"`
}

// MaxRecentTicks bounds the jobs a Periodic names as its latest ticks'.
const MaxRecentTicks = 5

// Scheduler is a Runner that keeps periodic jobs: jsjobs is, on the NATS
// server's own message schedules (one tick across every replica, no
// leader to elect); memjobs is not.
type Scheduler interface {
	Runner
	// SetPeriodic sets p, replacing the schedule of its name. A schedule
	// set again as it is stays as it is (changed false), its ticks where
	// they were: every replica may set its periodic jobs at its start. A
	// p that Validate or the job's kind refuses is an *InvalidError
	// naming the field.
	SetPeriodic(ctx context.Context, p Periodic) (changed bool, err error)
	// DeletePeriodic removes the schedule of that name: it ticks no more
	// (jobs its ticks submitted go on). ErrNotFound if there is none.
	DeletePeriodic(ctx context.Context, name string) error
	// Periodics returns the schedules set, by name.
	Periodics(ctx context.Context) ([]Periodic, error)
}

// MaxPeriodicName bounds a Periodic's Name.
const MaxPeriodicName = 64

// Validate checks p's name, its schedule's form and its zone, and that
// its spec is due now; the kind checks the spec, and the store the
// schedule's expression.
func (p Periodic) Validate() error {
	if err := CheckPeriodicName(p.Name); err != nil {
		return err
	}
	every := strings.TrimSpace(p.Every)
	if every == "" {
		return &InvalidError{`"every" is required: "@every 1h", a cron expression with seconds ("0 30 2 * * *") or @hourly, @daily, @weekly, @monthly, @yearly`}
	}
	if d, ok := strings.CutPrefix(every, "@every "); ok {
		if iv, err := time.ParseDuration(strings.TrimSpace(d)); err != nil || iv < time.Second {
			return &InvalidError{fmt.Sprintf(`"every" %.80q: want "@every" and a duration of a second or more`, p.Every)}
		}
		if p.TimeZone != "" {
			return &InvalidError{`"time_zone": "@every" takes none (a cron expression does)`}
		}
	}
	if p.TimeZone != "" {
		if _, err := time.LoadLocation(p.TimeZone); err != nil {
			return &InvalidError{fmt.Sprintf(`"time_zone" %.80q: want an IANA time zone such as "Europe/Berlin"`, p.TimeZone)}
		}
	}
	if !p.Spec.RunAt.IsZero() || p.Spec.Delay != 0 {
		return &InvalidError{`"run_at" and "delay": a periodic job's ticks say when it runs`}
	}
	return nil
}

// CheckPeriodicName refuses a name a Periodic may not have, with an
// *InvalidError naming "name".
func CheckPeriodicName(name string) error {
	ok := name != "" && len(name) <= MaxPeriodicName
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	if !ok {
		return &InvalidError{fmt.Sprintf(`"name" %.80q: want 1 to %d letters, digits, '-' or '_'`, name, MaxPeriodicName)}
	}
	return nil
}
