package jsjobs

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go/jetstream"
)

// What a periodic job's latest tick noted, for Periodics to show (its
// last and next tick, its latest ticks' jobs): one key of the records'
// bucket, tick.<name>, written after each tick's job is submitted. Cost:
// one replicated write a tick. A note that fails is logged; the tick's job
// stands. A tick handled twice (redelivered) names its job once.

// tickNote is the value of a periodic job's tick key.
type tickNote struct {
	Last   time.Time `json:"last"`
	Next   time.Time `json:"next,omitzero"`
	Recent []string  `json:"recent"`
}

// tickKey is the bucket key of periodic job name's note: never a job id.
func tickKey(name string) string { return "tick." + name }

// noteTick notes that periodic job name ticked now, submitting job id, its
// next tick due at next ("" unknown).
func (r *Runner) noteTick(ctx context.Context, name, id, next string) {
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	note, _ := r.tickNote(ctx, name)
	note.Last = time.Now()
	note.Next, _ = time.Parse(time.RFC3339Nano, next)
	note.Recent = append([]string{id}, slices.DeleteFunc(note.Recent, func(s string) bool { return s == id })...)
	note.Recent = note.Recent[:min(len(note.Recent), jobs.MaxRecentTicks)]
	data, err := json.Marshal(note)
	if err == nil {
		_, err = r.store.kv.Put(ctx, tickKey(name), data)
	}
	if err != nil {
		r.logWarn("a periodic job's tick not noted (its last and next tick, shown by Periodics): its job was submitted", "periodic", name, "job", id, "error", err)
	}
}

// tickNote reads periodic job name's note; a zero note when it has none.
func (r *Runner) tickNote(ctx context.Context, name string) (tickNote, error) {
	var note tickNote
	e, err := r.store.kv.Get(ctx, tickKey(name))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return note, nil
	case err != nil:
		return note, storeError(err)
	}
	err = json.Unmarshal(e.Value(), &note)
	return note, err
}
