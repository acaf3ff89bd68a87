package memjobs

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
)

// Store keeps job records in memory, bounded by count and by age. Only
// finished jobs' records are evicted: the oldest first when the count is
// reached, and any older than the TTL, a record's age counted from its
// job's latest submission (its creation, or its latest retry). Evictions are logged with their ids
// and counted by reason, so that a client's 404 can be explained.
type Store struct {
	max     int
	ttl     time.Duration
	now     func() time.Time
	log     *slog.Logger
	onEvict func(reason string, n int)

	mu    sync.Mutex
	byID  map[string]*entry
	order []*entry          // by latest submission (seq), oldest first
	seq   uint64            // the latest submission's
	keys  map[string]*entry // by idempotency key hash, while their records are kept
	// waiters are the waiting jobs of each parent (after.go).
	waiters map[string][]*entry

	keyMu sync.Mutex // one keyed submit at a time
}

type entry struct {
	id, kind  string
	created   time.Time
	submitted time.Time // its latest submission (its creation, or its latest retry): ages go by it
	seq       uint64    // the order of its latest submission: lists go by it
	spec      jobs.Spec // kept for Retry
	key, req  string    // the hash of its idempotency key, and of its request

	// Guarded by Store.mu.
	wait    *waiting            // while it waits for its parents (after.go)
	run     *run                // the latest run
	retries int                 // the times Retry ran it again
	errors  []jobs.AttemptError // the errors of its earlier runs, oldest first
}

// run is one submission of a job to the pool: a retry makes a new one, so
// that an earlier run still ending (a canceled run that ignores its
// context) writes only to its own.
type run struct {
	task *crew.Task // nil until submitted; guarded by Store.mu

	mu       sync.Mutex
	result   json.RawMessage
	ended    time.Time               // when it ended (end)
	canceled jobs.State              // the state a cancel found it in; "" if none
	why      string                  // a cancel's or a drop's reason, if not the usual
	dropped  error                   // the pool's refusal of a released job: not run
	watched  bool                    // its end is told to the jobs waiting for it (after.go)
	cancel   context.CancelCauseFunc // ends its run, once it runs
	progress *jobs.ProgressReport    // the latest progress written, while it runs
}

// record is e's record at now. s.mu must be held.
func (e *entry) record(now func() time.Time) (r jobs.Record) {
	r = jobs.Record{ID: e.id, Kind: e.kind, State: jobs.Queued, Created: e.created, Retries: e.retries, Submitter: e.spec.Submitter, After: e.spec.WaitsFor()}
	r.Errors = slices.Clip(e.errors) // an append copies
	// The spec, for a retry, in the record of an end without success, and
	// of a job not ended (a workflow's job reads its steps from it).
	defer func() {
		if r.State != jobs.Succeeded {
			spec := e.spec
			r.Spec = &spec
		}
	}()
	u := e.run
	u.mu.Lock()
	was, why, dropped, result, ended, progress := u.canceled, u.why, u.dropped, u.result, u.ended, u.progress
	u.mu.Unlock()
	if was != "" {
		r.State, r.Error, r.CanceledWhile = jobs.Canceled, cmp.Or(why, "canceled while "+string(was)), was
		return r
	}
	if dropped != nil {
		r.State, r.Error = jobs.NotRun, dropped.Error()
		return r
	}
	if e.wait != nil {
		r.State = jobs.Waiting
		return r
	}
	if u.task == nil {
		return r
	}
	r.State = stateOf(u.task.State())
	if r.State == jobs.Running && progress != nil {
		p := *progress
		r.Progress = &p
	}
	if r.State == jobs.Succeeded {
		r.Result = result
	}
	if err := u.task.Err(); err != nil {
		r.Error = err.Error()
		// A run's error: a job dropped unrun had no run.
		if r.State.Terminal() && r.State != jobs.NotRun {
			r.Errors = append(r.Errors, jobs.AttemptError{Attempt: 1, Error: r.Error, At: u.end(ended, now)})
			if n := len(r.Errors); n > jobs.MaxErrors {
				r.Errors = r.Errors[n-jobs.MaxErrors:]
			}
		}
	}
	return r
}

// end is when u ended: when its function returned, or, for a run that
// ended first (by its timeout) or never started (canceled while queued),
// when its end was first seen.
func (u *run) end(ended time.Time, now func() time.Time) time.Time {
	if !ended.IsZero() {
		return ended
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ended.IsZero() {
		u.ended = now()
	}
	return u.ended
}

func (e *entry) finished() bool { return e.run.task != nil && e.run.task.State().Terminal() }

// NewStore returns a store of at most max records, finished ones kept ttl.
// onEvict, if not nil, is told of every eviction (for a metric).
func NewStore(max int, ttl time.Duration, log *slog.Logger, onEvict func(reason string, n int)) *Store {
	return &Store{max: max, ttl: ttl, now: time.Now, log: log, onEvict: onEvict, byID: make(map[string]*entry), waiters: make(map[string][]*entry)}
}

// add keeps e, created now, evicting what it must first; ErrFull when no
// room can be made.
func (s *Store) add(e *entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	e.created, e.submitted = now, now
	// s.order is oldest submitted first: the records past their TTL are
	// its head, and a submit reads no further, so that its cost does not
	// grow with the store.
	old := 0
	for old < len(s.order) && now.Sub(s.order[old].submitted) > s.ttl {
		old++
	}
	s.evictLocked("age", old, old)
	if len(s.order) >= s.max {
		s.evictLocked("count", len(s.order), len(s.order)-s.max+1)
	}
	if len(s.order) >= s.max {
		return jobs.ErrFull
	}
	s.byID[e.id] = e
	s.appendLocked(e)
	return nil
}

// appendLocked files e last in s.order, as submitted now. s.mu must be
// held.
func (s *Store) appendLocked(e *entry) {
	s.seq++
	e.seq = s.seq
	s.order = append(s.order, e)
}

// evictLocked drops, oldest first, up to most finished records among the
// first upto of s.order, reading no further than it must.
func (s *Store) evictLocked(reason string, upto, most int) {
	var ids []string
	kept, i := 0, 0
	for ; i < upto && len(ids) < most; i++ {
		e := s.order[i]
		if !e.finished() {
			s.order[kept] = e
			kept++
			continue
		}
		delete(s.byID, e.id)
		s.dropKey(e)
		ids = append(ids, e.id)
	}
	if len(ids) == 0 {
		return
	}
	kept += copy(s.order[kept:], s.order[i:])
	clear(s.order[kept:])
	s.order = s.order[:kept]
	if s.onEvict != nil {
		s.onEvict(reason, len(ids))
	}
	if s.log != nil {
		shown := ids[:min(len(ids), 10)]
		s.log.Info("job records evicted", "reason", reason, "count", len(ids), "ids", shown)
	}
}

// removeLocked forgets a record whose job was refused after all. s.mu
// must be held.
func (s *Store) removeLocked(id string) {
	if e, ok := s.byID[id]; ok {
		s.dropKey(e)
	}
	delete(s.byID, id)
	s.order = slices.DeleteFunc(s.order, func(e *entry) bool { return e.id == id })
}

// dropKey forgets e's idempotency key. s.mu must be held.
func (s *Store) dropKey(e *entry) {
	if e.key != "" && s.keys[e.key] == e {
		delete(s.keys, e.key)
	}
}

// keyed returns the job posted under an idempotency key's hash, and the
// hash of its request.
func (s *Store) keyed(key string) (id, req string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.keys[key]
	if !ok {
		return "", "", false
	}
	return e.id, e.req, true
}

// setKey files job id under an idempotency key's hash.
func (s *Store) setKey(id, key, req string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if !ok {
		return // evicted already
	}
	if s.keys == nil {
		s.keys = make(map[string]*entry)
	}
	e.key, e.req = key, req
	s.keys[key] = e
}

// stateOf maps a task's state to the job's.
func stateOf(s crew.State) jobs.State {
	switch s {
	case crew.Queued:
		return jobs.Queued
	case crew.Running:
		return jobs.Running
	case crew.Succeeded:
		return jobs.Succeeded
	case crew.TimedOut:
		return jobs.TimedOut
	case crew.Canceled:
		return jobs.Canceled
	case crew.Dropped:
		return jobs.NotRun
	}
	return jobs.Failed // failed, panicked
}
