package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// accepted is a job crewd answered 202 for, through the Service.
type accepted struct {
	ID string
	At time.Time
}

// load submits jobs to one address (the crewd Service) at a steady rate, as
// a client of the cluster does, and records each one accepted.
type load struct {
	client *http.Client
	url    string // http://<the Service's cluster IP>:<port>

	submitted atomic.Int64
	mu        sync.Mutex
	accepted  []accepted
	refused   map[string]int // reason -> jobs refused on every try
	retried   int            // jobs accepted on a second or third try
}

// sleepSpec is job i of the steady load: a sleep of 20-50 ms.
func sleepSpec(i int) []byte {
	return fmt.Appendf(nil, `{"kind":"sleep","duration":"%dms"}`, 20+i%31)
}

// run submits jobs at rate per second with conc submitters until ctx ends.
func (l *load) run(ctx context.Context, rate, conc int) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := range next {
				l.submit(ctx, i)
				l.submitted.Add(1)
			}
		})
	}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			close(next)
			wg.Wait()
			return
		case <-tick.C:
		}
		select {
		case <-ctx.Done():
		case next <- i:
		}
	}
}

// postTimeout is how long a submitter waits for an answer before it tries
// again, as a client would.
const postTimeout = 3 * time.Second

// submit posts job i up to three times (the Service picks a pod each
// time); a job refused every time is counted with its last reason.
func (l *load) submit(ctx context.Context, i int) {
	var why string
	for try := range 3 {
		if try > 0 {
			sleep(ctx, time.Duration(200+rand.IntN(300))*time.Millisecond)
			if ctx.Err() != nil {
				return
			}
		}
		var id string
		id, why = l.post(ctx, sleepSpec(i))
		if id != "" {
			l.mu.Lock()
			l.accepted = append(l.accepted, accepted{ID: id, At: time.Now()})
			if try > 0 {
				l.retried++
			}
			l.mu.Unlock()
			return
		}
		if strings.HasPrefix(why, "4") {
			break
		}
	}
	if ctx.Err() != nil {
		return
	}
	l.mu.Lock()
	l.refused[why]++
	l.mu.Unlock()
}

// post submits one job; the id on a 202, else why not.
func (l *load) post(ctx context.Context, body []byte) (id, why string) {
	ctx, cancel := context.WithTimeout(ctx, postTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url+"/v1/jobs", bytes.NewReader(body))
	if err != nil {
		return "", err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
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
		return "", "202 without an id: " + firstLine(b)
	}
	return r.ID, ""
}

// gap is the longest time between two jobs accepted within [from, to]
// (the edges count): how long a client of the Service could not submit.
func (l *load) gap(from, to time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	last, worst := from, time.Duration(0)
	for _, a := range l.accepted {
		if a.At.Before(from) || a.At.After(to) {
			continue
		}
		worst = max(worst, a.At.Sub(last))
		last = a.At
	}
	return max(worst, to.Sub(last))
}

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

// state reads a job's state from url (a replica or the Service).
func state(ctx context.Context, client *http.Client, url, id string) (string, error) {
	var rec struct {
		State string `json:"state"`
	}
	err := getJSON(ctx, client, url+"/v1/jobs/"+id, &rec)
	return rec.State, err
}

// await polls every accepted job through the Service until all have
// succeeded or ctx ends; it returns those that have not, with their last
// state ("" when none was read).
func (l *load) await(ctx context.Context, conc int) map[string]string {
	l.mu.Lock()
	todo := make([]string, len(l.accepted))
	for i, a := range l.accepted {
		todo[i] = a.ID
	}
	l.mu.Unlock()
	last := map[string]string{}
	for len(todo) > 0 {
		var mu sync.Mutex
		var still []string
		next := make(chan string)
		var wg sync.WaitGroup
		for range conc {
			wg.Go(func() {
				for id := range next {
					s, _ := state(ctx, l.client, l.url, id)
					mu.Lock()
					last[id] = s
					if s != "succeeded" {
						still = append(still, id)
					}
					mu.Unlock()
				}
			})
		}
		for _, id := range todo {
			next <- id
		}
		close(next)
		wg.Wait()
		todo = still
		if ctx.Err() != nil {
			break
		}
		if len(todo) > 0 {
			sleep(ctx, time.Second)
		}
	}
	out := map[string]string{}
	for _, id := range todo {
		out[id] = last[id]
	}
	return out
}

// A stall is what a client of one crewd replica sees during a fault: the
// longest time without a good answer. stalls polls each replica (by pod
// IP, not through the Service) with a read of one known job every
// pollEvery.
const pollEvery = 100 * time.Millisecond

// maxStall is the longest a replica the fault did not touch may go
// without a good answer.
const maxStall = 5 * time.Second

type stalls struct {
	mu     sync.Mutex
	oks    map[string][]time.Time // pod -> when it answered 200
	posted map[string][]post      // pod -> the jobs posted to it
}

// post is one job posted to a pod: when, how long its answer took, and
// whether it was a 202.
type post struct {
	at   time.Time
	took time.Duration
	ok   bool
}

// writeEvery is how often watch posts a job to each replica.
const writeEvery = 250 * time.Millisecond

// watch polls every replica (pod name -> IP) until ctx ends: a read of
// job id every pollEvery, and a job of 1 ms posted every writeEvery.
func watch(ctx context.Context, client *http.Client, replicas map[string]string, id string) (*stalls, *sync.WaitGroup) {
	s := &stalls{oks: map[string][]time.Time{}, posted: map[string][]post{}}
	var wg sync.WaitGroup
	for name, ip := range replicas {
		wg.Go(func() {
			t := time.NewTicker(pollEvery)
			defer t.Stop()
			for {
				rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := state(rctx, client, "http://"+ip+":8080", id)
				cancel()
				if err == nil {
					s.mu.Lock()
					s.oks[name] = append(s.oks[name], time.Now())
					s.mu.Unlock()
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		})
		wg.Go(func() {
			l := &load{client: client, url: "http://" + ip + ":8080"}
			t := time.NewTicker(writeEvery)
			defer t.Stop()
			for {
				began := time.Now()
				id, _ := l.post(ctx, []byte(`{"kind":"sleep","duration":"1ms"}`))
				if ctx.Err() != nil {
					return
				}
				s.mu.Lock()
				s.posted[name] = append(s.posted[name], post{began, time.Since(began), id != ""})
				s.mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		})
	}
	return s, &wg
}

// writes are the slowest job pod accepted of those posted to it in
// [from, to], and how many it did not accept.
func (s *stalls) writes(pod string, from, to time.Time) (slowest time.Duration, refused int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.posted[pod] {
		if p.at.Before(from) || p.at.After(to) {
			continue
		}
		if p.ok {
			slowest = max(slowest, p.took)
		} else {
			refused++
		}
	}
	return slowest, refused
}

// longest is the longest time pod went without a good answer in
// [from, to] (the edges count as answers).
func (s *stalls) longest(pod string, from, to time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	last, worst := from, time.Duration(0)
	for _, at := range s.oks[pod] {
		if at.Before(from) || at.After(to) {
			continue
		}
		worst = max(worst, at.Sub(last))
		last = at
	}
	return max(worst, to.Sub(last))
}

// summary is the refusals, most frequent first.
func summary(m map[string]int) string {
	type kv struct {
		k string
		v int
	}
	var s []kv
	for k, v := range m {
		s = append(s, kv{k, v})
	}
	sort.Slice(s, func(i, j int) bool { return s[i].v > s[j].v })
	var parts []string
	for _, e := range s {
		parts = append(parts, fmt.Sprintf("%d× %s", e.v, e.k))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}
