package load

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Report is what a run measured.
type Report struct {
	Requests            int
	Elapsed             time.Duration
	P50, P99, P999, Max time.Duration
	// Late is, with a rate, how many requests were sent more than a
	// millisecond after they were due: the clients could not keep up.
	Late   int
	Status map[int]int    // answers by status code
	Errors map[string]int // requests without an answer, by error
	Jobs   *JobsReport    // with Wait
}

// JobsReport is what -wait measured of the jobs accepted.
type JobsReport struct {
	Accepted  int
	Accept    time.Duration // from the first post to the last 202
	Completed int           // ended succeeded
	Ended     int           // ended in any state
	Complete  time.Duration // from the first post to the last job's "finished"
	Work      time.Duration // the accepted jobs' sleeps, summed
	Workers   int
}

// Ideal is the time Workers workers take to run Work: the floor of
// Complete.
func (j JobsReport) Ideal() time.Duration {
	if j.Workers == 0 {
		return 0
	}
	return j.Work / time.Duration(j.Workers)
}

func (j JobsReport) String() string {
	rate := func(n int, d time.Duration) float64 {
		if d <= 0 {
			return 0
		}
		return float64(n) / d.Seconds()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "jobs       accepted %d in %v: %.0f/s; ended %d (%d succeeded) in %v: %.0f/s\n",
		j.Accepted, j.Accept.Round(time.Millisecond), rate(j.Accepted, j.Accept),
		j.Ended, j.Completed, j.Complete.Round(time.Millisecond), rate(j.Ended, j.Complete))
	if ideal := j.Ideal(); ideal > 0 && j.Accepted > 0 {
		fmt.Fprintf(&b, "ideal      %v at %d workers (mean sleep %v): %.0f/s; measured %.0f%% of it\n",
			ideal.Round(time.Millisecond), j.Workers, (j.Work / time.Duration(j.Accepted)).Round(100*time.Microsecond),
			rate(j.Accepted, ideal), 100*ideal.Seconds()/j.Complete.Seconds())
	}
	return b.String()
}

// Throughput is answered requests per second.
func (r Report) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "requests   %d in %v: %.1f/s\n", r.Requests, r.Elapsed.Round(time.Millisecond), r.Throughput())
	fmt.Fprintf(&b, "latency    p50 %v  p99 %v  p99.9 %v  max %v\n", r.P50, r.P99, r.P999, r.Max)
	if r.Late > 0 {
		fmt.Fprintf(&b, "late       %d requests sent over 1ms after they were due\n", r.Late)
	}
	codes := make([]int, 0, len(r.Status))
	for c := range r.Status {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	b.WriteString("status    ")
	for _, c := range codes {
		fmt.Fprintf(&b, " %d: %d", c, r.Status[c])
	}
	b.WriteString("\n")
	for e, n := range r.Errors {
		fmt.Fprintf(&b, "error      %s: %d\n", e, n)
	}
	if r.Jobs != nil {
		b.WriteString(r.Jobs.String())
	}
	return b.String()
}

// report is what the run measured once its clients are done.
func (r *run) report() Report {
	rep := Report{Elapsed: time.Since(r.start), Status: r.status, Errors: r.errs, Late: int(r.late.Load())}
	lat := r.lat
	slices.Sort(lat)
	rep.Requests = len(lat)
	if n := len(lat); n > 0 {
		rep.P50, rep.P99, rep.P999, rep.Max = lat[n/2], lat[min(n-1, n*99/100)], lat[min(n-1, n*999/1000)], lat[n-1]
	}
	return rep
}
