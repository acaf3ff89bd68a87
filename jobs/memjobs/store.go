package memjobs

import (
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
// reached, and any older than the TTL. Evictions are logged with their ids
// and counted by reason, so that a client's 404 can be explained.
type Store struct {
	max     int
	ttl     time.Duration
	now     func() time.Time
	log     *slog.Logger
	onEvict func(reason string, n int)

	mu    sync.Mutex
	byID  map[string]*entry
	order []*entry          // by creation, oldest first
	keys  map[string]*entry // by idempotency key hash, while their records are kept

	keyMu sync.Mutex // one keyed submit at a time
}

type entry struct {
	id, kind string
	created  time.Time
	key, req string     // the hash of its idempotency key, and of its request
	task     *crew.Task // nil until submitted

	mu       sync.Mutex
	result   json.RawMessage
	canceled jobs.State              // the state a cancel found it in; "" if none
	cancel   context.CancelCauseFunc // ends its run, once it runs
}

func (e *entry) record() jobs.Record {
	r := jobs.Record{ID: e.id, Kind: e.kind, State: jobs.Queued, Created: e.created}
	e.mu.Lock()
	was := e.canceled
	e.mu.Unlock()
	if was != "" {
		r.State, r.Error, r.CanceledWhile = jobs.Canceled, "canceled while "+string(was), was
		return r
	}
	if e.task == nil {
		return r
	}
	r.State = stateOf(e.task.State())
	if r.State == jobs.Succeeded {
		e.mu.Lock()
		r.Result = e.result
		e.mu.Unlock()
	}
	if err := e.task.Err(); err != nil {
		r.Error = err.Error()
	}
	return r
}

func (e *entry) finished() bool { return e.task != nil && e.task.State().Terminal() }

// NewStore returns a store of at most max records, finished ones kept ttl.
// onEvict, if not nil, is told of every eviction (for a metric).
func NewStore(max int, ttl time.Duration, log *slog.Logger, onEvict func(reason string, n int)) *Store {
	return &Store{max: max, ttl: ttl, now: time.Now, log: log, onEvict: onEvict, byID: make(map[string]*entry)}
}

// add keeps e, evicting what it must first; ErrFull when no room
// can be made.
func (s *Store) add(e *entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.evictLocked("age", func(e *entry) bool { return now.Sub(e.created) > s.ttl })
	if len(s.order) >= s.max {
		n := len(s.order) - s.max + 1
		s.evictLocked("count", func(*entry) bool {
			n--
			return n >= 0
		})
	}
	if len(s.order) >= s.max {
		return jobs.ErrFull
	}
	s.byID[e.id] = e
	s.order = append(s.order, e)
	return nil
}

// evictLocked drops, oldest first, the finished records that pick chooses.
func (s *Store) evictLocked(reason string, pick func(*entry) bool) {
	var ids []string
	s.order = slices.DeleteFunc(s.order, func(e *entry) bool {
		if !e.finished() || !pick(e) {
			return false
		}
		delete(s.byID, e.id)
		s.dropKey(e)
		ids = append(ids, e.id)
		return true
	})
	if len(ids) == 0 {
		return
	}
	if s.onEvict != nil {
		s.onEvict(reason, len(ids))
	}
	if s.log != nil {
		shown := ids[:min(len(ids), 10)]
		s.log.Info("job records evicted", "reason", reason, "count", len(ids), "ids", shown)
	}
}

// remove forgets a record whose job was refused after all.
func (s *Store) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
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

func (s *Store) get(id string) (*entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	return e, ok
}

// Counts returns how many records are in each state.
func (s *Store) Counts() map[jobs.State]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := make(map[jobs.State]int)
	for _, e := range s.order {
		n[e.record().State]++
	}
	return n
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
