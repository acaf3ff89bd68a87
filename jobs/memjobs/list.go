package memjobs

import (
	"cmp"
	"context"
	"slices"
	"strconv"

	"github.com/crew-go/crew/jobs"
)

// List implements jobs.Lister, in memory: newest first by the time of the
// job's latest submission (its creation, or its latest retry); a job's
// later changes of state do not move it. A cursor is the position of the
// last job of its page in the order of submissions, so that a job evicted
// meanwhile costs the next page nothing; a job retried while a client
// pages moves to the front, where the pages already read were.
func (r *Runner) List(_ context.Context, q jobs.Query) (jobs.Page, error) {
	if err := q.Validate(); err != nil {
		return jobs.Page{}, err
	}
	after, err := parseCursor(q.After)
	if err != nil {
		return jobs.Page{}, err
	}
	return r.Store.list(q, after), nil
}

// Counts implements jobs.Lister: Store.Counts.
func (r *Runner) Counts(context.Context) (jobs.Counts, error) {
	return r.Store.Counts(), nil
}

// Counts returns how many records are in each state.
func (s *Store) Counts() jobs.Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := make(jobs.Counts)
	for _, e := range s.order {
		n[e.record(s.now).State]++
	}
	return n
}

// list is the page q asks for, of the entries submitted before the
// submission after (all of them when after is 0).
func (s *Store) list(q jobs.Query, after uint64) jobs.Page {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := len(s.order)
	if after > 0 {
		i, _ = slices.BinarySearchFunc(s.order, after, func(e *entry, seq uint64) int { return cmp.Compare(e.seq, seq) })
	}
	page := jobs.Page{Jobs: []jobs.Record{}}
	var last *entry
	for i--; i >= 0; i-- {
		e := s.order[i]
		if q.Kind != "" && e.kind != q.Kind || q.Queue != "" && cmp.Or(e.spec.Queue, jobs.DefaultQueue) != q.Queue {
			continue
		}
		rec := e.record(s.now)
		if q.State != "" && rec.State != q.State {
			continue
		}
		if len(page.Jobs) == q.Limit {
			page.Next = cursor(last)
			break
		}
		page.Jobs = append(page.Jobs, rec)
		last = e
	}
	return page
}

// cursor is the position of e in the order of submissions: the page after
// it starts past it.
func cursor(e *entry) string { return strconv.FormatUint(e.seq, 10) }

// parseCursor reads a cursor as a position, 0 for none.
func parseCursor(after string) (uint64, error) {
	if after == "" {
		return 0, nil
	}
	seq, err := strconv.ParseUint(after, 10, 64)
	if err != nil || seq == 0 || strconv.FormatUint(seq, 10) != after {
		return 0, jobs.BadCursor(after)
	}
	return seq, nil
}
