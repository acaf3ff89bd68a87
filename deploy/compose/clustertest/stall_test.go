package clustertest

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// A stall is what a client of one crewd replica sees when the store has a
// fault: the longest time without a good answer. stalls polls every
// replica with a read of one known job every pollEvery and keeps when each
// answered 200; longest then measures any window of the test.

const pollEvery = 100 * time.Millisecond

// maxStall is the longest a replica attached to a healthy server may go
// without a good answer while another NATS server is killed or cut off:
// a read any replica answers is sent again while unanswered (jsjobs'
// hedged reads), so a replica cut off holds none.
const maxStall = time.Second

// maxWrite is the longest such a replica may take to accept a job, and
// none may refuse one: a submit whose partition has no leader goes to
// another within 500 ms (jsjobs.Partitioned).
const maxWrite = time.Second

type stalls struct {
	mu   sync.Mutex
	oks  map[string][]time.Time // replica -> times it answered 200
	errs map[string][]failed    // replica -> reads that failed
}

// failed is a read that got no good answer: when it began, how long it
// took, and why.
type failed struct {
	at   time.Time
	took time.Duration
	err  string
}

// watch polls each replica until ctx ends.
func (s *stalls) watch(ctx context.Context, l *load, names []string, id string) *sync.WaitGroup {
	s.oks = map[string][]time.Time{}
	s.errs = map[string][]failed{}
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() {
			t := time.NewTicker(pollEvery)
			defer t.Stop()
			for {
				rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				began := time.Now()
				_, err := l.getFrom(rctx, n, id)
				cancel()
				s.mu.Lock()
				if err == nil {
					s.oks[n] = append(s.oks[n], time.Now())
				} else if ctx.Err() == nil {
					s.errs[n] = append(s.errs[n], failed{began, time.Since(began), err.Error()})
				}
				s.mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		})
	}
	return &wg
}

// longest is the longest time replica n went without a good answer
// between from and to (the window's edges count as answers), and when
// that began.
func (s *stalls) longest(n string, from, to time.Time) (time.Duration, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	last, worst, began := from, time.Duration(0), from
	for _, at := range s.oks[n] {
		if at.Before(from) || at.After(to) {
			continue
		}
		if d := at.Sub(last); d > worst {
			worst, began = d, last
		}
		last = at
	}
	if d := to.Sub(last); d > worst {
		worst, began = d, last
	}
	return worst, began
}

// why are the reads of replica n that failed in [from, from+d]: what a
// stall was made of.
func (s *stalls) why(n string, from time.Time, d time.Duration) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := ""
	for _, f := range s.errs[n] {
		if f.at.Before(from) || f.at.After(from.Add(d)) {
			continue
		}
		out += fmt.Sprintf(" [+%.2fs took %.2fs: %s]", f.at.Sub(from).Seconds(), f.took.Seconds(), f.err)
	}
	return out
}

// report measures every replica over a fault's window and returns the
// longest stall of those not excluded (down, or attached to the faulty
// server), with a line for the log.
func (s *stalls) report(names []string, excluded []string, from, to time.Time) (time.Duration, string) {
	var worst time.Duration
	line := ""
	for _, n := range names {
		d, began := s.longest(n, from, to)
		tag := ""
		if contains(excluded, n) {
			tag = " (excluded)"
		} else {
			worst = max(worst, d)
			if d > 500*time.Millisecond {
				tag = fmt.Sprintf(" (from +%.1fs into the fault:%s)", began.Sub(from).Seconds(), s.why(n, began, d))
			}
		}
		line += fmt.Sprintf(" %s %.1fs%s", n, d.Seconds(), tag)
	}
	return worst, line
}
