package jobs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// ProgressReport is how far a running job says it is: a fraction done,
// from 0 to 1, a note of what it does (at most MaxProgressNote bytes), and
// when it said so. A store keeps the latest a run reported, in its
// Record.Progress, while the job runs.
type ProgressReport struct {
	Fraction float64   `json:"fraction"`
	Note     string    `json:"note,omitempty"`
	At       time.Time `json:"at"`
}

// MaxProgressNote is how many bytes of a progress note a store keeps: a
// longer one is cut, as an error is (MaxErrorLen).
const MaxProgressNote = 200

// ProgressEvery is how often at most a store writes a run's progress: a
// report made less than ProgressEvery after the last write waits for
// that second's end, the later reports replacing it, so a run costs at
// most one write of its progress a second, whatever the number of its
// reports, and the latest report is the one written.
const ProgressEvery = time.Second

// ErrNoProgress is Progress's answer outside a job's run (a context no
// store gave a run), in the run of a store that keeps no progress, and
// after the run has ended.
var ErrNoProgress = errors.New("no progress kept here: not in a job's run, or the run has ended")

// ErrProgressRange is Progress's answer for a fraction that is not a
// number from 0 to 1.
var ErrProgressRange = errors.New("progress out of range: want a fraction from 0 to 1")

// Progress reports how far the job whose run ctx is has gone: fraction
// done, from 0 to 1, and a note (cut to MaxProgressNote bytes). It
// returns at once: the store writes the report in the background, at
// most once every ProgressEvery (a later report replacing one not yet
// written), until the run ends; a write that fails is not tried again
// (the next report is). Clients read it in the job's Record.Progress while
// the job runs. A fraction out of range (NaN, below 0, above 1) is
// ErrProgressRange; a ctx of no run, of a store without progress or of a
// run that has ended is ErrNoProgress.
func Progress(ctx context.Context, fraction float64, note string) error {
	if math.IsNaN(fraction) || fraction < 0 || fraction > 1 {
		return fmt.Errorf("%w: %v", ErrProgressRange, fraction)
	}
	if ctx == nil {
		return ErrNoProgress
	}
	w, _ := ctx.Value(progressKey{}).(*ProgressWriter)
	if w == nil {
		return ErrNoProgress
	}
	return w.report(ProgressReport{Fraction: fraction, Note: clip(note, MaxProgressNote), At: time.Now()})
}

type progressKey struct{}

// WithProgress returns ctx carrying w, for a store to give a run: the
// run's reports (Progress) go to w.
func WithProgress(ctx context.Context, w *ProgressWriter) context.Context {
	return context.WithValue(ctx, progressKey{}, w)
}

// ProgressWriter takes a run's progress reports and writes them through
// its store's write function: the first at once, each later one at least
// ProgressEvery after the write before it, the latest report replacing
// one still waiting (the trailing write at the second's end keeps the
// last report made). One write at a time, on a goroutine of its own that
// lasts as long as the write. Stop ends it at the run's end: nothing is
// written after Stop returns.
type ProgressWriter struct {
	write func(ProgressReport)

	mu      sync.Mutex
	idle    sync.Cond       // signalled when a write ends
	pending *ProgressReport // the latest report not yet written
	timer   *time.Timer     // the next write, while one is due
	last    time.Time       // when the latest write began
	writing bool
	wrote   bool
	stopped bool
}

// NewProgressWriter returns a ProgressWriter for one run, which writes a
// report with write (a store bounds its wait).
func NewProgressWriter(write func(ProgressReport)) *ProgressWriter {
	w := &ProgressWriter{write: write}
	w.idle.L = &w.mu
	return w
}

// report keeps p as the latest report, and sets its write's time if none
// is set.
func (w *ProgressWriter) report(p ProgressReport) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return ErrNoProgress
	}
	w.pending = &p
	if w.timer == nil && !w.writing {
		w.timer = time.AfterFunc(w.waitLocked(), w.flush)
	}
	return nil
}

// waitLocked is how long the next write must wait: until ProgressEvery
// after the latest began.
func (w *ProgressWriter) waitLocked() time.Duration {
	if w.last.IsZero() {
		return 0
	}
	return max(0, ProgressEvery-time.Since(w.last))
}

// flush writes the report waiting, if the writer is not stopped, then
// sets the next write's time if another report came meanwhile.
func (w *ProgressWriter) flush() {
	w.mu.Lock()
	w.timer = nil
	if w.stopped || w.pending == nil {
		w.mu.Unlock()
		return
	}
	p := *w.pending
	w.pending, w.writing, w.last = nil, true, time.Now()
	w.mu.Unlock()

	w.write(p)

	w.mu.Lock()
	defer w.mu.Unlock()
	w.writing, w.wrote = false, true
	w.idle.Broadcast()
	if w.pending != nil && !w.stopped {
		w.timer = time.AfterFunc(w.waitLocked(), w.flush)
	}
}

// Stop ends the writer at its run's end: a report not yet written is
// dropped, a write under way is waited for, and later reports are
// ErrNoProgress. It reports whether any report was written, for the store
// to remove what it wrote.
func (w *ProgressWriter) Stop() (wrote bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.pending = nil
	if w.timer != nil {
		w.timer.Stop() // a flush it began already finds the writer stopped
		w.timer = nil
	}
	for w.writing {
		w.idle.Wait()
	}
	return w.wrote
}
