package main

import (
	"slices"
	"sync"
	"time"
)

// tracker records, per job, when it was enqueued, how many runs started,
// how many ran to the end, and when the first run ended. Workers report
// runs from their own process (worker.go), so a run that ended before a
// SIGKILL is counted even if its system never recorded the end.
type tracker struct {
	mu       sync.Mutex
	enqueued []time.Time
	starts   []int
	ends     []int
	firstEnd []time.Time
	ended    int // jobs with at least one end
	allDone  chan struct{}
}

func newTracker(jobs int) *tracker {
	return &tracker{
		enqueued: make([]time.Time, jobs),
		starts:   make([]int, jobs),
		ends:     make([]int, jobs),
		firstEnd: make([]time.Time, jobs),
		allDone:  make(chan struct{}),
	}
}

// AllDone is closed when every job has ended at least once.
func (t *tracker) AllDone() <-chan struct{} { return t.allDone }

func (t *tracker) enqueue(n int, at time.Time) {
	t.mu.Lock()
	t.enqueued[n] = at
	t.mu.Unlock()
}

// start counts a run of job n that began.
func (t *tracker) start(n int) {
	t.mu.Lock()
	if n >= 0 && n < len(t.starts) {
		t.starts[n]++
	}
	t.mu.Unlock()
}

// setStarts records the runs started as a system's record counts them
// (crewd's attempts), for a system whose runs the benchmark cannot see.
func (t *tracker) setStarts(n, runs int) {
	t.mu.Lock()
	t.starts[n] = runs
	t.mu.Unlock()
}

// end counts a run of job n that ran to its end at at.
func (t *tracker) end(n int, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n < 0 || n >= len(t.ends) {
		return
	}
	t.ends[n]++
	if t.ends[n] == 1 {
		t.firstEnd[n] = at
		t.ended++
		if t.ended == len(t.ends) {
			close(t.allDone)
		}
	}
}

// summary is what a tracker measured.
type summary struct {
	Jobs        int
	Ended       int                 // jobs that ended at least once
	Twice       int                 // jobs that ran to the end more than once
	Rerun       int                 // jobs whose runs started more than once
	First       time.Time           // the first enqueue
	FirstEnd    time.Time           // the first end
	Last        time.Time           // the last first end
	P50, P99    time.Duration       // enqueue to first end
	RemainingAt func(time.Time) int // jobs not ended before a time
}

func (t *tracker) summary() summary {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := summary{Jobs: len(t.ends), Ended: t.ended}
	lat := make([]time.Duration, 0, len(t.ends))
	for n := range t.ends {
		if e := t.enqueued[n]; !e.IsZero() && (s.First.IsZero() || e.Before(s.First)) {
			s.First = e
		}
		if t.ends[n] > 1 {
			s.Twice++
		}
		if t.starts[n] > 1 {
			s.Rerun++
		}
		if t.ends[n] == 0 {
			continue
		}
		if t.firstEnd[n].After(s.Last) {
			s.Last = t.firstEnd[n]
		}
		if s.FirstEnd.IsZero() || t.firstEnd[n].Before(s.FirstEnd) {
			s.FirstEnd = t.firstEnd[n]
		}
		if !t.enqueued[n].IsZero() {
			lat = append(lat, t.firstEnd[n].Sub(t.enqueued[n]))
		}
	}
	slices.Sort(lat)
	s.P50, s.P99 = percentile(lat, 0.50), percentile(lat, 0.99)
	ends := slices.Clone(t.firstEnd)
	counts := slices.Clone(t.ends)
	s.RemainingAt = func(at time.Time) int {
		left := 0
		for n := range ends {
			if counts[n] == 0 || !ends[n].Before(at) {
				left++
			}
		}
		return left
	}
	return s
}

// percentile is the nearest-rank percentile of sorted values; 0 for none.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
