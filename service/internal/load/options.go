package load

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Options say what to send and for how long.
type Options struct {
	// URL is crewd's API, such as http://localhost:8080, or several
	// replicas' APIs, comma-separated: the posts go to each in turn, as a
	// Service spreads them, and the counts and the wait ask the first.
	URL         string
	Mode        string        // factorial, jobs or mixed
	Numbers     int           // numbers per factorial request
	Job         string        // the body of a job request
	Duration    time.Duration // how long to send; 0 with Requests
	Requests    int           // how many requests; 0 with Duration
	Concurrency int           // clients sending at once
	// Rate is requests per second in all; 0: as fast as the clients go.
	// With a rate the load is open: request i is due at i/Rate from the
	// start, and its latency counts from then, so a client that sends late
	// (all clients busy) adds its delay instead of hiding it.
	Rate     float64
	Progress time.Duration // how often to print progress; 0: never
	// Sleep, when set ("5ms-20ms", or one duration), makes each job a sleep
	// job of a duration spread evenly over the range, in place of Job.
	Sleep string
	// Wait, in jobs mode, waits for every accepted job to end and reports
	// the rate at which they completed (from their records' "finished").
	Wait bool
	// Workers is crewd's pool bound, for the ideal completion rate (Wait).
	Workers int
	// Token is the API token every request sends ("" for none): its scopes
	// must cover the mode (jobs:submit, and jobs:read to wait or count).
	Token string
}

// urls are URL's APIs.
func (o Options) urls() []string { return strings.Split(o.URL, ",") }

// Validate reports the first bad option.
func (o Options) Validate() error {
	switch {
	case slices.ContainsFunc(o.urls(), func(u string) bool { return !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") }):
		return fmt.Errorf("-url %q: want http://host:port, or several, comma-separated", o.URL)
	case o.Mode != "factorial" && o.Mode != "jobs" && o.Mode != "mixed":
		return fmt.Errorf("-mode %q: want factorial, jobs or mixed", o.Mode)
	case o.Numbers < 1 || o.Numbers > 1<<20:
		return fmt.Errorf("-numbers %d: want 1 to %d", o.Numbers, 1<<20)
	case (o.Duration > 0) == (o.Requests > 0):
		return errors.New("give one of -duration and -requests")
	case o.Duration < 0 || o.Requests < 0:
		return errors.New("-duration and -requests must not be negative")
	case o.Concurrency < 1:
		return fmt.Errorf("-concurrency %d: want at least 1", o.Concurrency)
	case o.Rate < 0:
		return fmt.Errorf("-rate %v: want 0 or more", o.Rate)
	case o.Wait && o.Mode != "jobs":
		return fmt.Errorf("-wait is for -mode jobs, not %s", o.Mode)
	case o.Workers < 0:
		return fmt.Errorf("-workers %d: want 0 or more", o.Workers)
	}
	if _, _, err := sleepRange(o.Sleep); err != nil {
		return err
	}
	return nil
}

// sleepRange parses -sleep: "" (none), "10ms", or "5ms-20ms".
func sleepRange(s string) (lo, hi time.Duration, err error) {
	if s == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		b = a
	}
	lo, err1 := time.ParseDuration(a)
	hi, err2 := time.ParseDuration(b)
	if err1 != nil || err2 != nil || lo <= 0 || hi < lo {
		return 0, 0, fmt.Errorf("-sleep %q: want a duration or a range such as 5ms-20ms", s)
	}
	return lo, hi, nil
}
