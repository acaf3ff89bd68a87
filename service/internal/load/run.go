package load

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crew-go/crew/service/internal/auth"
)

// Run sends the load and returns the report. ctx ends it early.
func Run(ctx context.Context, o Options, progress io.Writer) (Report, error) {
	if err := o.Validate(); err != nil {
		return Report{}, err
	}
	r := newRun(o)
	defer r.client.CloseIdleConnections()
	if o.Wait {
		r.before, r.counted = readCounts(ctx, r.client, r.url) // before the first post: the wait's baseline
	}
	parent := ctx // -wait's: the jobs end after the sending does
	if o.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Duration)
		defer cancel()
	}
	r.send(ctx, progress)
	rep := r.report()
	if o.Wait {
		jobs, err := r.awaitJobs(parent)
		if err != nil {
			return rep, err
		}
		rep.Jobs = jobs
	}
	return rep, nil
}

// A run is the state of one Run: its clients take request numbers in turn
// and count the answers.
type run struct {
	o        Options
	posts    []string // the APIs the posts go to in turn (Options.URL)
	url      string   // the first: the counts and the wait's
	requests requests
	client   *http.Client
	interval time.Duration // between requests' due times, with a rate; 0 without
	start    time.Time     // when the clients began
	before   jobCounts     // crewd's counts before the first post (-wait)
	counted  bool          // whether crewd answered them

	next atomic.Int64 // the next request's number
	done atomic.Int64 // requests answered or failed
	late atomic.Int64

	mu     sync.Mutex
	lat    []time.Duration
	status map[int]int
	errs   map[string]int
	ids    []string      // the jobs accepted (-wait)
	work   time.Duration // their sleeps
	lastOK time.Time     // the last 202
}

func newRun(o Options) *run {
	r := &run{
		o:        o,
		posts:    o.urls(),
		url:      o.urls()[0],
		requests: newRequests(o),
		client:   &http.Client{Timeout: 30 * time.Second, Transport: &auth.Transport{Base: &http.Transport{MaxIdleConnsPerHost: o.Concurrency}, Token: o.Token}},
		status:   map[int]int{},
		errs:     map[string]int{},
	}
	if o.Rate > 0 {
		r.interval = time.Duration(float64(time.Second) / o.Rate)
	}
	return r
}

// send runs o.Concurrency clients, with progress shown, until the requests
// are sent or ctx ends.
func (r *run) send(ctx context.Context, progress io.Writer) {
	r.start = time.Now()
	var wg sync.WaitGroup
	for range r.o.Concurrency {
		wg.Go(func() { r.sendEach(ctx) })
	}
	stop := r.showProgress(progress)
	wg.Wait()
	stop()
}

// sendEach is one client: it sends the next request until there is none.
func (r *run) sendEach(ctx context.Context) {
	for {
		i := r.next.Add(1) - 1
		if r.o.Requests > 0 && i >= int64(r.o.Requests) || ctx.Err() != nil {
			return
		}
		if !r.sendOne(ctx, i) {
			return
		}
	}
}

// sendOne sends request i when it is due and counts its answer; false when
// the end of the run cut it off.
func (r *run) sendOne(ctx context.Context, i int64) bool {
	t0, ok := r.waitDue(ctx, i) // when the latency counts from
	if !ok {
		return false
	}
	req := r.requests.nth(i)
	if r.interval == 0 {
		t0 = time.Now()
	}
	code, answer, err := post(ctx, r.client, r.posts[i%int64(len(r.posts))]+req.path, req.body)
	d := time.Since(t0)
	if ctx.Err() != nil && err != nil {
		return false // cut off by the end of the run, not an error of the server
	}
	r.count(code, answer, err, d, req.sleep)
	r.done.Add(1)
	return true
}

// waitDue waits, with a rate, until request i is due, and returns its due
// time; a request sent over a millisecond late is counted. It returns
// false if ctx ends first.
func (r *run) waitDue(ctx context.Context, i int64) (time.Time, bool) {
	if r.interval == 0 {
		return time.Time{}, true
	}
	due := r.start.Add(time.Duration(i) * r.interval)
	if wait := time.Until(due); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return time.Time{}, false
		}
	} else if -wait > time.Millisecond {
		r.late.Add(1)
	}
	return due, true
}

// count adds an answer (or its error) to the run's, and with -wait an
// accepted job's id and sleep.
func (r *run) count(code int, answer []byte, err error, d, sleep time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.errs[err.Error()]++
	} else {
		r.status[code]++
		r.lat = append(r.lat, d)
	}
	if r.o.Wait && code == http.StatusAccepted {
		var rec struct{ ID string }
		if json.Unmarshal(answer, &rec) == nil && rec.ID != "" {
			r.ids = append(r.ids, rec.ID)
			r.work += sleep
			r.lastOK = time.Now()
		}
	}
}
