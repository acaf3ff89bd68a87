package jobs

import (
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
	Limit int `json:"limit,omitempty"`
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
	// SetQueue sets a queue's settings (its limit) for every process.
	SetQueue(ctx context.Context, q Queue) error
	// PauseQueue stops every process from starting the queue's jobs
	// until ResumeQueue, or until until if it is not zero; jobs running
	// go on, jobs submitted are accepted and wait.
	PauseQueue(ctx context.Context, name string, until time.Time) error
	// ResumeQueue undoes PauseQueue.
	ResumeQueue(ctx context.Context, name string) error
}
