package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// replicas is where each crewd's API is published now; a restarted
// container may come back on another host port, so it is updated.
type replicas struct {
	mu    sync.Mutex
	names []string
	addr  map[string]string // crewd1 -> 127.0.0.1:49153
	down  map[string]bool   // killed, not yet restarted
}

func (r *replicas) set(name, addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addr[name] = addr
	delete(r.down, name)
}

func (r *replicas) setDown(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down[name] = true
}

// pick returns the replicas to try, in order, starting at the i-th: the
// live ones first, so that a killed replica costs no time while it is
// known to be down (it is still tried last: the test must not hide a
// replica that answers).
func (r *replicas) pick(i int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var live, dead []string
	for k := range r.names {
		n := r.names[(i+k)%len(r.names)]
		if r.down[n] {
			dead = append(dead, n)
		} else {
			live = append(live, n)
		}
	}
	return append(live, dead...)
}

func (r *replicas) url(name, path string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return "http://" + r.addr[name] + path
}

// accepted is a job crewd answered 202 for.
type accepted struct {
	ID  string
	Via string // the replica that accepted it
	At  time.Duration
}

// load submits jobs over the replicas at a steady rate and records each
// one accepted; a job refused everywhere is counted with its last reason.
type load struct {
	client *http.Client
	reps   *replicas
	start  time.Time

	submitted atomic.Int64 // jobs whose submission ended, accepted or not
	mu        sync.Mutex
	accepted  []accepted
	refused   map[string]int // reason -> jobs
	retried   int            // submissions that needed more than one replica
	writes    []write        // every post to a replica, for the faults' write stalls
}

// write is one post of a job to a replica: when, how long its answer
// took, and whether it was a 202.
type write struct {
	replica string
	at      time.Time
	took    time.Duration
	ok      bool
}

// writeStalls are, for replica n's posts begun between from and to, the
// slowest 202 and the posts not accepted.
func (l *load) writeStalls(n string, from, to time.Time) (slowest time.Duration, refused int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.writes {
		if w.replica != n || w.at.Before(from) || w.at.After(to) {
			continue
		}
		if w.ok {
			slowest = max(slowest, w.took)
		} else {
			refused++
		}
	}
	return slowest, refused
}

// sleepSpec is job i of the steady load: a sleep of 20-50 ms.
func sleepSpec(i int) []byte {
	return fmt.Appendf(nil, `{"kind":"sleep","duration":"%dms"}`, 20+i%31)
}

// slowSpec is a job of the burst before the kill: long enough that the
// replica killed is sure to be running some.
func slowSpec(int) []byte { return []byte(`{"kind":"sleep","duration":"3s"}`) }

// run submits n jobs at rate per second with conc submitters, and returns
// when every submission has ended or ctx is done.
func (l *load) run(ctx context.Context, n, rate, conc int) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := range next {
				l.submit(ctx, i, sleepSpec(i))
				l.submitted.Add(1)
			}
		})
	}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
feed:
	for i := range n {
		select {
		case <-ctx.Done():
			break feed
		case <-tick.C:
		}
		select {
		case <-ctx.Done():
			break feed
		case next <- i:
		}
	}
	close(next)
	wg.Wait()
}

// submit posts job i to one replica after another until one answers 202,
// two rounds at most; a 4xx is a bug in the test and stops at once. A job
// refused everywhere is counted under the distinct reasons of its last
// round.
func (l *load) submit(ctx context.Context, i int, spec []byte) {
	var whys []string // the last round's, one per replica
	tries := 0
	for round := range 2 {
		whys = whys[:0]
		if round > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(200+rand.IntN(300)) * time.Millisecond):
			}
		}
		for _, name := range l.reps.pick(i) {
			tries++
			id, why := l.post(ctx, name, spec)
			if id != "" {
				l.mu.Lock()
				l.accepted = append(l.accepted, accepted{ID: id, Via: name, At: time.Since(l.start)})
				if tries > 1 {
					l.retried++
				}
				l.mu.Unlock()
				return
			}
			if !slices.Contains(whys, why) {
				whys = append(whys, why)
			}
			if strings.HasPrefix(why, "4") {
				break
			}
		}
	}
	slices.Sort(whys)
	l.mu.Lock()
	l.refused[strings.Join(whys, " | ")]++
	l.mu.Unlock()
}

// burst submits n jobs of spec at once, spread over the replicas, and
// returns when each has been answered.
func (l *load) burst(ctx context.Context, n int, spec func(int) []byte) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { l.submit(ctx, i, spec(i)) })
	}
	wg.Wait()
}

// postTimeout is how long a submitter waits for one replica before it
// tries the next, as a client behind a load balancer would: a replica
// whose NATS server is cut off answers 503 only at its request timeout.
// A job accepted after the submitter gave up is not counted as accepted.
const postTimeout = 3 * time.Second

// post submits one job; it returns the id on a 202, else why not.
func (l *load) post(ctx context.Context, name string, body []byte) (id, why string) {
	ctx, cancel := context.WithTimeout(ctx, postTimeout)
	defer cancel()
	began := time.Now()
	defer func() {
		if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.Canceled) {
			return // the load stopped, not the replica
		}
		l.mu.Lock()
		l.writes = append(l.writes, write{replica: name, at: began, took: time.Since(began), ok: id != ""})
		l.mu.Unlock()
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.reps.url(name, "/v1/jobs"), bytes.NewReader(body))
	if err != nil {
		return "", err.Error()
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return "", "no answer: " + errorKind(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Sprintf("%d %s", resp.StatusCode, firstLine(b))
	}
	var r struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.ID == "" {
		return "", fmt.Sprintf("202 without an id: %s", firstLine(b))
	}
	return r.ID, ""
}

// errorKind folds transport errors into a few kinds, for the summary.
func errorKind(err error) string {
	s := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case strings.Contains(s, "connection refused"):
		return "connection refused"
	case strings.Contains(s, "connection reset"), strings.Contains(s, "EOF"):
		return "connection reset"
	}
	return s
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// record is what GET /v1/jobs/{id} answers, kept whole for the report.
type record map[string]any

func (r record) state() string { s, _ := r["state"].(string); return s }

// attempts is the job's attempt count when its record shows one (0 when
// it does not).
func (r record) attempts() int {
	n := 0
	for _, k := range []string{"attempts", "attempt", "deliveries"} {
		if v, ok := r[k].(float64); ok {
			n = max(n, int(v))
		}
	}
	return n
}

// get reads a job's record from the replicas, the i-th first; false when
// none answers 200.
func (l *load) get(ctx context.Context, i int, id string) (record, bool) {
	for _, name := range l.reps.pick(i) {
		rec, err := l.getFrom(ctx, name, id)
		if err == nil {
			return rec, true
		}
	}
	return nil, false
}

func (l *load) getFrom(ctx context.Context, name, id string) (record, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.reps.url(name, "/v1/jobs/"+id), nil)
	if err != nil {
		return nil, err
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%d %s", resp.StatusCode, firstLine(b))
	}
	var rec record
	return rec, json.NewDecoder(resp.Body).Decode(&rec)
}

// outcome is every accepted job's last record, after waiting.
type outcome struct {
	records map[string]record // id -> last record read (nil: none read)
	missing []string          // ids no replica knows
	pending []string          // ids not yet succeeded
}

// await polls every accepted job until all have succeeded or ctx ends;
// a job in a terminal state other than succeeded stays pending (and
// fails the test).
func (l *load) await(ctx context.Context, conc int) outcome {
	l.mu.Lock()
	todo := make([]string, len(l.accepted))
	for i, a := range l.accepted {
		todo[i] = a.ID
	}
	l.mu.Unlock()
	out := outcome{records: make(map[string]record, len(todo))}
	var mu sync.Mutex
	for {
		next := make(chan int)
		var still []string
		var wg sync.WaitGroup
		for range conc {
			wg.Go(func() {
				for i := range next {
					rec, ok := l.get(ctx, i, todo[i])
					mu.Lock()
					if ok {
						out.records[todo[i]] = rec
					}
					if !ok || rec.state() != "succeeded" {
						still = append(still, todo[i])
					}
					mu.Unlock()
				}
			})
		}
		for i := range todo {
			next <- i
		}
		close(next)
		wg.Wait()
		todo = still
		if len(todo) == 0 || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	sort.Strings(todo)
	for _, id := range todo {
		if out.records[id] == nil {
			out.missing = append(out.missing, id)
		}
	}
	out.pending = todo
	return out
}
