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
// without a good answer while another NATS server is killed or cut off.
const maxStall = 5 * time.Second

// maxWrite is the longest such a replica should take to accept a job, and
// none should refuse one: a submit whose partition has no leader goes to
// another within 500 ms (jsjobs.Partitioned). Measured and logged; not yet
// failed on (cluster_test.go, fault).
const maxWrite = time.Second

type stalls struct {
	mu  sync.Mutex
	oks map[string][]time.Time // replica -> times it answered 200
}

// watch polls each replica until ctx ends.
func (s *stalls) watch(ctx context.Context, l *load, names []string, id string) *sync.WaitGroup {
	s.oks = map[string][]time.Time{}
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() {
			t := time.NewTicker(pollEvery)
			defer t.Stop()
			for {
				rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := l.getFrom(rctx, n, id)
				cancel()
				if err == nil {
					s.mu.Lock()
					s.oks[n] = append(s.oks[n], time.Now())
					s.mu.Unlock()
				}
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
// between from and to (the window's edges count as answers).
func (s *stalls) longest(n string, from, to time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	last, worst := from, time.Duration(0)
	for _, at := range s.oks[n] {
		if at.Before(from) || at.After(to) {
			continue
		}
		worst = max(worst, at.Sub(last))
		last = at
	}
	return max(worst, to.Sub(last))
}

// report measures every replica over a fault's window and returns the
// longest stall of those not excluded (down, or attached to the faulty
// server), with a line for the log.
func (s *stalls) report(names []string, excluded []string, from, to time.Time) (time.Duration, string) {
	var worst time.Duration
	line := ""
	for _, n := range names {
		d := s.longest(n, from, to)
		tag := ""
		if contains(excluded, n) {
			tag = " (excluded)"
		} else {
			worst = max(worst, d)
		}
		line += fmt.Sprintf(" %s %.1fs%s", n, d.Seconds(), tag)
	}
	return worst, line
}
