package jsjobs

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// storeHealth is what a Runner knows of its store's availability.
// An outage met by a job, or two probes in a row that fail, mark the store
// down, logged once at WARN ("job store unavailable"); a probe or a read
// that succeeds marks it up again, logged once at INFO. While it is down,
// Submit answers ErrUnavailable at once instead of waiting out the store's
// timeout (Get still asks: any replica of the bucket answers a read, while
// its stream elects a leader too), and /readyz fails, so that the Service
// sends requests to replicas that can reach the store.
type storeHealth struct {
	down atomic.Bool // the fast path of ok
	log  *slog.Logger

	mu        sync.Mutex
	err       error // why it is down
	since     time.Time
	failed    int // probes failed in a row
	handbacks atomic.Uint64
}

// probeFailures is how many probes in a row must fail to mark the store
// down: one slow answer is not an outage.
const probeFailures = 2

// Err is nil while the store is up, else why it is down.
func (h *storeHealth) Err() error {
	if !h.down.Load() {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// outage marks the store down because an operation failed with err.
func (h *storeHealth) outage(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.markDown(err)
}

func (h *storeHealth) markDown(err error) {
	h.err = err
	if h.down.Swap(true) {
		return
	}
	h.since = time.Now()
	if h.log != nil {
		h.log.Warn("job store unavailable: jobs run again a moment later without costing an attempt, submits and reads answer 503, /readyz fails",
			"error", err)
	}
}

// ok marks the store up: an operation or a probe succeeded.
func (h *storeHealth) ok() {
	if !h.down.Load() {
		h.mu.Lock()
		h.failed = 0
		h.mu.Unlock()
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failed = 0
	if !h.down.Swap(false) {
		return
	}
	h.err = nil
	if h.log != nil {
		h.log.Info("job store available again", "after", time.Since(h.since).Round(time.Millisecond),
			"jobs_handed_back", h.handbacks.Load())
	}
}

// probed records a probe's outcome.
func (h *storeHealth) probed(err error) {
	if err == nil {
		h.ok()
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failed++; h.failed >= probeFailures {
		h.markDown(err)
	}
}
