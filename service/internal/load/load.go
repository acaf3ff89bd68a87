package load

import (
	"context"
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
	Rate        float64       // requests per second in all; 0: as fast as the clients go
	Progress    time.Duration // how often to print progress; 0: never
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
	}
	return nil
}

// Report is what a run measured.
type Report struct {
	Requests      int
	Elapsed       time.Duration
	P50, P99, Max time.Duration
	Status        map[int]int    // answers by status code
	Errors        map[string]int // requests without an answer, by error
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
	fmt.Fprintf(&b, "latency    p50 %v  p99 %v  max %v\n", r.P50, r.P99, r.Max)
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
	return b.String()
}

// Run sends the load and returns the report. ctx ends it early.
func Run(ctx context.Context, o Options, progress io.Writer) (Report, error) {
	if err := o.Validate(); err != nil {
		return Report{}, err
	}
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
				if interval > 0 {
					if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
						t := time.NewTimer(wait)
						select {
						case <-t.C:
						case <-ctx.Done():
							t.Stop()
							return
						}
					}
				}
				path, body := "/v1/factorial", factorial
				if o.Mode == "jobs" || o.Mode == "mixed" && i%2 == 1 {
					path, body = "/v1/jobs", job
				}
				t0 := time.Now()
				code, err := send(ctx, client, o.URL+path, body)
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
	r := Report{Elapsed: time.Since(start), Status: status, Errors: errs}
	slices.Sort(lat)
	r.Requests = len(lat)
	if n := len(lat); n > 0 {
		r.P50, r.P99, r.Max = lat[n/2], lat[min(n-1, n*99/100)], lat[n-1]
	}
	return r, nil
}

func send(ctx context.Context, c *http.Client, url, body string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			return 0, errors.New(strings.TrimPrefix(err.Error(), "Post \""+url+"\": "))
		}
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}
