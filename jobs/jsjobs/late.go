package jsjobs

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/crew-go/crew/jobs"
)

// Late ends. A run's end is written while its message's lease holds (keep);
// a store out for longer than that (the runner cut off with it, say) would
// otherwise lose the end, and the job's next delivery would run it again
// with one more attempt counted, an outage spending an attempt. So an end
// still unwritten when the lease is lost is kept here, in memory, and
// written once the store answers: by a keeper that tries again every
// second or two, or by the job's next delivery to this runner, which then
// acks without running the job. The rules of keep hold for it: written
// only over the revision read, giving way to an end, a cancel or a Retry
// recorded meanwhile, written over a run started meanwhile elsewhere
// (which then gives way in its turn). Lost with the process, or past maxLateEnds: then
// the job runs again, at-least-once, as an interrupted run does.

// maxLateEnds bounds the ends kept in memory, each a record of at most
// the server's largest message (1 MiB by default, most a few hundred
// bytes).
const maxLateEnds = 1024

// lateRetry is the longest wait between the keeper's tries.
const lateRetry = 2 * time.Second

type lateEnds struct {
	// write writes a kept end once (Runner.writeLate): ErrUnavailable
	// while the store is out. Set before the first keep.
	write   func(ctx context.Context, e lateEnd) error
	timeout time.Duration // of one write
	log     *slog.Logger

	mu      sync.Mutex
	pending map[string]lateEnd
	keeping bool          // the keeper runs
	closed  bool          // Close: no more keeping
	stop    chan struct{} // closed by Close
	done    chan struct{} // closed when a keeper started before Close exits
}

type lateEnd struct {
	rec jobs.Record
	rev uint64
}

// keepLate keeps rec, the end of a run at revision rev, to write later.
func (l *lateEnds) keep(rec jobs.Record, rev uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || len(l.pending) >= maxLateEnds {
		l.warn("a job's end could not be written before its lease was lost; it will run again", "job", rec.ID, "state", string(rec.State))
		return
	}
	if l.pending == nil {
		l.pending = map[string]lateEnd{}
		l.stop = make(chan struct{})
	}
	l.pending[rec.ID] = lateEnd{rec, rev}
	l.warn("a job's end could not be written before its lease was lost; kept to write when the store answers", "job", rec.ID, "state", string(rec.State))
	if !l.keeping {
		l.keeping = true
		l.done = make(chan struct{})
		go l.keepAll(l.stop, l.done)
	}
}

// takeLate removes and returns the end kept for job id, if any.
func (l *lateEnds) take(id string) (lateEnd, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.pending[id]
	delete(l.pending, id)
	return e, ok
}

// takeLateFor removes and returns the end kept for job id if delivery d
// may settle on it: unless d is the message of a Retry after that end's
// run. A Retry retries an ended record, so the end, of a run before the
// job ended, can only give way, and d must run the job as the Retry asks
// rather than be acked on it; the end is left to the keeper. A Retry's
// message of unknown retries may be of either: it too runs the job
// (at-least-once), and the keeper writes the end or gives way.
func (l *lateEnds) takeFor(id string, retryOf uint64, retries int) (lateEnd, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.pending[id]
	if !ok || retryOf != 0 && (retries == 0 || retries != e.rec.Retries) {
		return lateEnd{}, false
	}
	delete(l.pending, id)
	return e, true
}

// keepLateEnds writes the kept ends until none is left or Close.
func (l *lateEnds) keepAll(stop, done chan struct{}) {
	defer close(done)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, lateRetry) {
		select {
		case <-stop:
			return
		case <-time.After(wait):
		}
		l.mu.Lock()
		ids := make([]string, 0, len(l.pending))
		for id := range l.pending {
			ids = append(ids, id)
		}
		l.mu.Unlock()
		for _, id := range ids {
			select {
			case <-stop:
				return
			default:
			}
			e, ok := l.take(id)
			if !ok {
				continue // taken by its delivery meanwhile
			}
			ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
			err := l.write(ctx, e)
			cancel()
			if errors.Is(err, jobs.ErrUnavailable) {
				l.mu.Lock()
				if _, again := l.pending[id]; !again && !l.closed {
					l.pending[id] = e
				}
				l.mu.Unlock()
				break // the store is out still: wait
			}
		}
		l.mu.Lock()
		if len(l.pending) == 0 || l.closed {
			l.keeping = false
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
	}
}

// closeLate stops the keeper and drops the ends still kept.
func (l *lateEnds) close() {
	l.mu.Lock()
	l.closed = true
	n := len(l.pending)
	l.pending = nil
	if l.stop != nil {
		close(l.stop)
	}
	done := l.done
	l.mu.Unlock()
	if n > 0 {
		l.warn("runner closed with job ends not yet written: those jobs will run again", "jobs", n)
	}
	if done != nil {
		<-done
	}
}

func (l *lateEnds) warn(msg string, args ...any) {
	if l.log != nil {
		l.log.Warn(msg, args...)
	}
}
