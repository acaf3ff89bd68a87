package jsjobs

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go"
)

// runs are the jobs running here, by id, with what cancels each: one job
// may have two runs here at once (its message redelivered after a lost
// lease while the first run ends, or a Retry's message beside it), and a
// cancel reaches both.
//
// They also keep the ids of the last maxNoticed cancels heard, running
// here or not: a job delivered here but not started (held for a free slot
// of the pool) was counted running by its cancel, which kept its message,
// and when it starts it must not run. Its first delivery, which would run
// it while its record is read, reads the record first instead (handle).
// A cancel missed (this runner cut off, or more than maxNoticed cancels
// since) leaves it to that read, which cancels the run as it starts.
type runs struct {
	mu      sync.Mutex
	byID    map[string][]*run
	noticed map[string]struct{}
	order   []string // noticed, a ring: next is the oldest once it is full
	next    int
	sub     *nats.Subscription
}

// maxNoticed bounds the cancels remembered (about 64 bytes each).
const maxNoticed = 4096

// run is one run registered in runs: what it runs, since when, and what
// cancels it.
type run struct {
	job    jobs.RunningJob
	cancel context.CancelCauseFunc
}

// listen subscribes to the cancels of the jobs of l.
func (rs *runs) listen(nc *nats.Conn, l layout) error {
	sub, err := nc.Subscribe(l.cancels(), func(m *nats.Msg) {
		rs.cancel(m.Subject[strings.LastIndexByte(m.Subject, '.')+1:])
	})
	rs.sub = sub
	return err
}

// cancel ends the context of every run of job id here, and notes that
// the job was canceled.
func (rs *runs) cancel(id string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.byID[id] {
		r.cancel(errJobCanceled)
	}
	if _, ok := rs.noticed[id]; ok {
		return
	}
	if rs.noticed == nil {
		rs.noticed = make(map[string]struct{})
	}
	rs.noticed[id] = struct{}{}
	if len(rs.order) < maxNoticed {
		rs.order = append(rs.order, id)
		return
	}
	delete(rs.noticed, rs.order[rs.next])
	rs.order[rs.next] = id
	rs.next = (rs.next + 1) % maxNoticed
}

// start registers a run of job, cancelled by a cancel of the job, until
// the func it returns is called; canceled reports whether a cancel of the
// job was heard here already.
func (rs *runs) start(ctx context.Context, job jobs.RunningJob) (_ context.Context, done func(), canceled bool) {
	ctx, cancel := context.WithCancelCause(ctx)
	r := &run{job: job, cancel: cancel}
	id := job.ID
	rs.mu.Lock()
	if rs.byID == nil {
		rs.byID = make(map[string][]*run)
	}
	rs.byID[id] = append(rs.byID[id], r)
	_, canceled = rs.noticed[id]
	rs.mu.Unlock()
	return ctx, func() {
		rs.mu.Lock()
		others := slices.DeleteFunc(rs.byID[id], func(o *run) bool { return o == r })
		if len(others) == 0 {
			delete(rs.byID, id)
		} else {
			rs.byID[id] = others
		}
		rs.mu.Unlock()
		cancel(nil)
	}, canceled
}

// snapshot counts the runs here and names the longest running of them,
// at most max.
func (rs *runs) snapshot(max int) (n int, longest []jobs.RunningJob) {
	rs.mu.Lock()
	for _, runs := range rs.byID {
		for _, r := range runs {
			n++
			longest = append(longest, r.job)
		}
	}
	rs.mu.Unlock()
	slices.SortFunc(longest, func(a, b jobs.RunningJob) int {
		return cmp.Or(a.Since.Compare(b.Since), strings.Compare(a.ID, b.ID))
	})
	return n, longest[:min(len(longest), max)]
}
