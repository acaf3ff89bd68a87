package memjobs

import (
	"context"
	"fmt"
	"slices"

	"github.com/crew-go/crew/jobs"
)

// Dependencies in memory (jobs.Spec.After, whose rules jobs states): a
// job with parents is kept waiting, with no task, and the store notes it
// under each parent not yet ended (Store.waiters). A parent's end is seen
// by a goroutine waiting on its task's end (watch), one a parent with
// waiting jobs; a waiting parent canceled tells its own at once. The last
// parent's end starts the job on the pool; a pool that refuses it then
// (closed, or its queue full) ends it not run, saying so.

// waiting is a waiting job's state: its parents left, and its run
// prepared for its release.
type waiting struct {
	left int
	job  jobs.Prepared
}

// submitWaiting keeps job e, with parents, waiting; a parent unknown is
// refused, nothing kept.
func (r *Runner) submitWaiting(e *entry, job jobs.Prepared) (jobs.Record, error) {
	s := r.Store
	s.mu.Lock()
	for _, id := range job.After {
		if _, ok := s.byID[id]; !ok {
			s.mu.Unlock()
			return jobs.Record{}, jobs.UnknownParent(id)
		}
	}
	s.mu.Unlock()
	if err := s.add(e); err != nil {
		return jobs.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r.wait(e, job)
	return e.record(s.now), nil
}

// wait has job e wait for its parents, or settles it at once when they
// have ended. s.mu held.
func (r *Runner) wait(e *entry, job jobs.Prepared) {
	e.wait = &waiting{job: job}
	r.waitFor(e, job.After)
}

// waitFor has waiting job e wait for parents ids too: those not ended
// counted, an ended one's failure cancelling it (and its own waiting jobs);
// with none left, it is released. s.mu held.
func (r *Runner) waitFor(e *entry, ids []string) {
	s := r.Store
	for _, id := range ids {
		p, ok := s.byID[id]
		st := jobs.NotRun // evicted since it was checked: only ended jobs are
		if ok {
			st = p.record(s.now).State
		}
		if st.Terminal() {
			// Ended: not counted, and a failure cancels it now.
			if e.spec.CanceledBy(id, st) {
				if r.decide(e, id, st) {
					r.ended(e)
				}
				return
			}
			continue
		}
		e.wait.left++
		if !slices.Contains(s.waiters[id], e) { // noted before its cancel and Retry
			s.waiters[id] = append(s.waiters[id], e)
		}
		r.watch(p)
	}
	if e.wait != nil && e.wait.left == 0 {
		r.release(e)
	}
}

// watch has p's end told to its waiting jobs, once its run has a task.
// s.mu held.
func (r *Runner) watch(p *entry) {
	u := p.run
	if u.task == nil || u.watched {
		return
	}
	u.watched = true
	done := u.task.Done()
	go func() {
		<-done
		r.Store.mu.Lock()
		defer r.Store.mu.Unlock()
		r.ended(p)
	}()
}

// ended tells the jobs waiting for p that it ended, and theirs in turn
// when that cancels them. s.mu held.
func (r *Runner) ended(p *entry) {
	s := r.Store
	for todo := []*entry{p}; len(todo) > 0; todo = todo[1:] {
		p := todo[0]
		st := p.record(s.now).State
		if !st.Terminal() {
			r.watch(p) // retried before its end was told: its new run's
			continue
		}
		children := s.waiters[p.id]
		delete(s.waiters, p.id)
		for _, c := range children {
			if c.wait == nil {
				continue // decided, or canceled
			}
			c.wait.left--
			if r.decide(c, p.id, st) {
				todo = append(todo, c)
			}
		}
	}
}

// decide settles waiting job e on its parent's end in state st: canceled
// (true) when that fails it, released when it was the last. s.mu held.
func (r *Runner) decide(e *entry, parent string, st jobs.State) (canceled bool) {
	switch {
	case e.wait == nil:
		return false
	case e.spec.CanceledBy(parent, st):
		e.wait = nil
		u := e.run
		u.mu.Lock()
		u.canceled, u.why = jobs.Waiting, jobs.ParentEnded(parent, st)
		u.mu.Unlock()
		return true
	case e.wait.left == 0:
		r.release(e)
	}
	return false
}

// release starts waiting job e on the pool. s.mu held.
func (r *Runner) release(e *entry) {
	job := e.wait.job
	e.wait = nil
	if err := r.start(e, job); err != nil {
		u := e.run
		u.mu.Lock()
		u.dropped = fmt.Errorf("its parents ended, but the pool refused it: %w", err)
		u.mu.Unlock()
		r.ended(e) // its own waiting jobs: it never runs
	}
}

// AddAfter adds parents to waiting job id (jobs.ParentAdder, with its
// rules).
func (r *Runner) AddAfter(_ context.Context, id string, after ...string) (jobs.Record, error) {
	if !jobs.ValidID(id) {
		return jobs.Record{}, jobs.ErrNotFound
	}
	s := r.Store
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if !ok {
		return jobs.Record{}, jobs.ErrNotFound
	}
	rec := e.record(s.now)
	added, err := jobs.Added(rec, after)
	if err != nil || len(added) == 0 {
		return rec, err
	}
	for _, pid := range added {
		p, ok := s.byID[pid]
		switch {
		case !ok:
			return rec, jobs.UnknownParent(pid)
		case p.record(s.now).State == jobs.Waiting:
			return rec, jobs.AddedParentWaits(pid)
		}
	}
	e.spec.After = append(slices.Clip(e.spec.After), added...)
	e.wait.job.After = e.spec.WaitsFor()
	r.waitFor(e, added)
	return e.record(s.now), nil
}
