package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options say what to send and for how long.
type Options struct {
	URL         string        // crewd's API, such as http://localhost:8080
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
}

// Validate reports the first bad option.
func (o Options) Validate() error {
	switch {
	case !strings.HasPrefix(o.URL, "http://") && !strings.HasPrefix(o.URL, "https://"):
		return fmt.Errorf("-url %q: want http://host:port", o.URL)
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

// sleepOf is the i-th job's sleep, spread evenly over [lo, hi] by the
// golden ratio, the same from run to run.
func sleepOf(i int64, lo, hi time.Duration) time.Duration {
	const phi = 0.6180339887498949
	f := float64(i) * phi
	f -= float64(int64(f))
	return lo + time.Duration(f*float64(hi-lo)).Round(time.Millisecond)
}

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

// Run sends the load and returns the report. ctx ends it early.
func Run(ctx context.Context, o Options, progress io.Writer) (Report, error) {
	if err := o.Validate(); err != nil {
		return Report{}, err
	}
	parent := ctx // -wait's: the jobs end after the sending does
	if o.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Duration)
		defer cancel()
	}
	factorial := `{"numbers":[` + strings.TrimSuffix(strings.Repeat("20,", o.Numbers), ",") + `]}`
	job := o.Job
	if job == "" {
		job = `{"kind":"sleep","duration":"10ms"}`
	}
	lo, hi, _ := sleepRange(o.Sleep)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: o.Concurrency}}
	defer client.CloseIdleConnections()

	var (
		next    atomic.Int64 // the next request's number
		done    atomic.Int64
		mu      sync.Mutex
		lat     []time.Duration
		status  = map[int]int{}
		errs    = map[string]int{}
		start   = time.Now()
		wg      sync.WaitGroup
		stopped = make(chan struct{})
		ids     []string      // the jobs accepted (-wait)
		work    time.Duration // their sleeps
		lastOK  time.Time     // the last 202
		late    atomic.Int64
	)
	var interval time.Duration
	if o.Rate > 0 {
		interval = time.Duration(float64(time.Second) / o.Rate)
	}
	for range o.Concurrency {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if o.Requests > 0 && i >= int64(o.Requests) || ctx.Err() != nil {
					return
				}
				var t0 time.Time // when the latency counts from
				if interval > 0 {
					due := start.Add(time.Duration(i) * interval)
					if wait := time.Until(due); wait > 0 {
						t := time.NewTimer(wait)
						select {
						case <-t.C:
						case <-ctx.Done():
							t.Stop()
							return
						}
					} else if -wait > time.Millisecond {
						late.Add(1)
					}
					t0 = due
				}
				path, body := "/v1/factorial", factorial
				var sleep time.Duration
				if o.Mode == "jobs" || o.Mode == "mixed" && i%2 == 1 {
					path, body = "/v1/jobs", job
					if lo > 0 {
						sleep = sleepOf(i, lo, hi)
						body = `{"kind":"sleep","duration":"` + sleep.String() + `"}`
					}
				}
				if interval == 0 {
					t0 = time.Now()
				}
				code, answer, err := send(ctx, client, o.URL+path, body)
				d := time.Since(t0)
				if ctx.Err() != nil && err != nil {
					return // cut off by the end of the run, not an error of the server
				}
				mu.Lock()
				if err != nil {
					errs[err.Error()]++
				} else {
					status[code]++
					lat = append(lat, d)
				}
				if o.Wait && code == http.StatusAccepted {
					var rec struct{ ID string }
					if json.Unmarshal(answer, &rec) == nil && rec.ID != "" {
						ids = append(ids, rec.ID)
						work += sleep
						lastOK = time.Now()
					}
				}
				mu.Unlock()
				done.Add(1)
			}
		})
	}
	if o.Progress > 0 && progress != nil {
		go func() {
			tick := time.NewTicker(o.Progress)
			defer tick.Stop()
			last := int64(0)
			for {
				select {
				case <-stopped:
					return
				case <-tick.C:
					n := done.Load()
					fmt.Fprintf(progress, "%6.1fs  %d requests  %.0f/s\n", time.Since(start).Seconds(), n, float64(n-last)/o.Progress.Seconds())
					last = n
				}
			}
		}()
	}
	wg.Wait()
	close(stopped)
	r := Report{Elapsed: time.Since(start), Status: status, Errors: errs, Late: int(late.Load())}
	slices.Sort(lat)
	r.Requests = len(lat)
	if n := len(lat); n > 0 {
		r.P50, r.P99, r.P999, r.Max = lat[n/2], lat[min(n-1, n*99/100)], lat[min(n-1, n*999/1000)], lat[n-1]
	}
	if o.Wait {
		j := &JobsReport{Accepted: len(ids), Work: work, Workers: o.Workers}
		if len(ids) > 0 {
			j.Accept = lastOK.Sub(start)
		}
		last, ended, succeeded, err := awaitJobs(parent, client, o.URL, ids, o.Concurrency)
		if err != nil {
			return r, err
		}
		j.Ended, j.Completed = ended, succeeded
		if !last.IsZero() {
			j.Complete = last.Sub(start)
		}
		r.Jobs = j
	}
	return r, nil
}

// awaitJobs asks for every job's record until each has ended, with
// clients clients, and returns the latest "finished" and the counts.
func awaitJobs(ctx context.Context, c *http.Client, url string, ids []string, clients int) (last time.Time, ended, succeeded int, err error) {
	var (
		mu   sync.Mutex
		next atomic.Int64
		wg   sync.WaitGroup
		errs []error
	)
	for range clients {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(ids)) {
					return
				}
				for {
					var rec struct {
						State    string
						Finished time.Time
					}
					code, body, gerr := get(ctx, c, url+"/v1/jobs/"+ids[i])
					if gerr == nil && code == http.StatusOK {
						gerr = json.Unmarshal(body, &rec)
					} else if gerr == nil {
						gerr = fmt.Errorf("GET /v1/jobs/%s: %d %.200s", ids[i], code, body)
					}
					if gerr != nil {
						mu.Lock()
						errs = append(errs, gerr)
						mu.Unlock()
						return
					}
					if rec.State != "queued" && rec.State != "running" {
						mu.Lock()
						ended++
						if rec.State == "succeeded" {
							succeeded++
						}
						if rec.Finished.After(last) {
							last = rec.Finished
						}
						mu.Unlock()
						break
					}
					select {
					case <-ctx.Done():
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("waiting for the jobs: %w", err))
	}
	return last, ended, succeeded, errors.Join(errs...)
}

func send(ctx context.Context, c *http.Client, url, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return do(c, req, "Post")
}

func get(ctx context.Context, c *http.Client, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	return do(c, req, "Get")
}

// do sends req and reads the answer, at most 64 KB of it.
func do(c *http.Client, req *http.Request, verb string) (int, []byte, error) {
	resp, err := c.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			return 0, nil, errors.New(strings.TrimPrefix(err.Error(), verb+" \""+req.URL.String()+"\": "))
		}
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, b, err
}
