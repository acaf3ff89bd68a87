package jobs

import (
	"cmp"
	"context"
	"fmt"
	"time"
)

// DefaultQueue is the queue of a job whose spec names none.
const DefaultQueue = "default"

// MaxQueueName bounds a queue's name, which becomes a subject token, a
// consumer's name and a metric label.
const MaxQueueName = 64

// CheckQueue refuses a queue's name that is not 1 to MaxQueueName
// letters, digits, '-' or '_', with an *InvalidError naming "queue".
func CheckQueue(name string) error {
	ok := name != "" && len(name) <= MaxQueueName
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	if !ok {
		return &InvalidError{fmt.Sprintf(`"queue" %.80q: want 1 to %d letters, digits, '-' or '_'`, name, MaxQueueName)}
	}
	return nil
}

// Queue is a named queue's settings, which hold for every process that
// serves it: a store keeps them (jsjobs.Runner.SetQueue).
type Queue struct {
	Name string `json:"name"`
	// Limit bounds the queue's jobs running at once across every process,
	// enforced by the store; 0 is none (each process's own bound only).
	// The JetStream store bounds each priority's jobs by it: a queue whose
	// jobs come in one priority, as most do, runs at most Limit of them.
	Limit int `json:"limit,omitempty"`
	// Rate bounds how many of the queue's jobs start in any Per across
	// every process, enforced through the store (jsjobs: one write a
	// start); 0 is none. Starts are spaced evenly, Per/Rate apart: a rate
	// of 50 a second starts one every 20 ms, never a burst of 50.
	Rate int `json:"rate,omitempty"`
	// Per is the period of Rate; 0 is a second.
	Per Duration `json:"per,omitzero"`
}

// MaxQueueRate bounds a queue's Rate; MaxRatePer its Per.
const (
	MaxQueueRate = 1_000_000
	MaxRatePer   = 24 * time.Hour
)

// RateString is the queue's rate as "<rate>/<per>" ("50/1s"), "" for
// none.
func (q Queue) RateString() string {
	if q.Rate <= 0 {
		return ""
	}
	return fmt.Sprintf("%d/%v", q.Rate, cmp.Or(time.Duration(q.Per), time.Second))
}

// Interval is the time between two starts of the queue's jobs under its
// Rate: Per/Rate, 0 when it has none.
func (q Queue) Interval() time.Duration {
	if q.Rate <= 0 {
		return 0
	}
	return cmp.Or(time.Duration(q.Per), time.Second) / time.Duration(q.Rate)
}

// MaxQueueLimit bounds a queue's Limit.
const MaxQueueLimit = 1_000_000

// Validate refuses a queue whose name or limit is out of range, naming
// the field.
func (q Queue) Validate() error {
	if err := CheckQueue(q.Name); err != nil {
		return err
	}
	if q.Limit < 0 || q.Limit > MaxQueueLimit {
		return &InvalidError{fmt.Sprintf(`"limit" %d: want 1 to %d, or 0 for none`, q.Limit, MaxQueueLimit)}
	}
	switch per := time.Duration(q.Per); {
	case q.Rate < 0 || q.Rate > MaxQueueRate:
		return &InvalidError{fmt.Sprintf(`"rate" %d: want 1 to %d jobs a "per", or 0 for none`, q.Rate, MaxQueueRate)}
	case per != 0 && q.Rate == 0:
		return &InvalidError{fmt.Sprintf(`"per" %v without a "rate"`, per)}
	case per < 0 || per > MaxRatePer || per != 0 && per < time.Millisecond:
		return &InvalidError{fmt.Sprintf(`"per" %v: want 1ms to %v, or 0 for a second`, per, MaxRatePer)}
	case q.Rate > 0 && q.Interval() <= 0:
		return &InvalidError{fmt.Sprintf(`"rate" %d a "per" %v: more than one start a nanosecond`, q.Rate, per)}
	}
	return nil
}

// QueueInfo is a queue as a store reads it now, across every process.
type QueueInfo struct {
	Queue
	Waiting int  `json:"waiting"` // jobs waiting to be delivered (its backlog)
	Taken   int  `json:"taken"`   // jobs delivered and not yet settled: running, or held for a free worker
	Paused  bool `json:"paused"`
	// OldestWaiting is when the queue's oldest waiting job became due
	// (its submit, or its time for a job due later), zero when none
	// waits: how long the backlog has held work, which its length alone
	// does not say.
	OldestWaiting time.Time `json:"oldest_waiting,omitzero"`
}

// Queuer is a Runner with named queues whose settings and pauses hold
// for every process: the JetStream store is one (memjobs runs every
// queue's jobs on its one pool, and has none).
type Queuer interface {
	// Queues reads every queue as the store holds it now, the default
	// first.
	Queues(ctx context.Context) ([]QueueInfo, error)
	// SetQueue sets a queue's settings (its limit and rate) for every
	// process.
	SetQueue(ctx context.Context, q Queue) error
	// PauseQueue stops every process from starting the queue's jobs
	// until ResumeQueue, or until until if it is not zero; jobs running
	// go on, jobs submitted are accepted and wait.
	PauseQueue(ctx context.Context, name string, until time.Time) error
	// ResumeQueue undoes PauseQueue.
	ResumeQueue(ctx context.Context, name string) error
}
