package jsjobs

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go/jetstream"
)

// Runner runs jobs through a JetStream stream, with their records in a
// key-value bucket, so that a job accepted outlives the process that
// accepted it. Submit publishes the job's spec to <stream>.<id> and answers
// only once the stream has stored it: accepting a job rests on the stream
// alone. Any process sharing the stream's consumer runs it (through a
// natsjs.Source calling Handle), and any process sharing the bucket and the
// stream answers Get for it.
//
// Delivery is at-least-once: a job whose run was interrupted (the process
// killed, a hard stop) runs again, and Record.Attempts counts the runs
// started. A job whose record is already terminal is not run again.
//
// Records are kept by state. A job waiting in the stream has no record
// yet: Get answers it as queued from its message, however long it waits,
// and running once the consumer has delivered it. Delivered is not yet
// started: a Source holds a few messages beyond its pool's free slots (its
// window), and a message it hands back at a stop is delivered again later,
// so such a job reads running (in Get, List, Counts and the state its
// Cancel reports) while it waits for a worker. A Source made with
// natsjs.WithWindow(0) pulls only for free slots, and running then means
// started, at the price of a round trip before each job starts. Whatever
// it reads, a job canceled before it starts does not run, unless the
// runner holding it missed the cancel (cut off from NATS, or more than
// maxNoticed cancels since): its run is then cancelled as it begins, once
// its record is read. Its end is the first
// write of its record (three replicated writes a job: message, end, ack);
// a retry or a rerun writes it before it runs, and a live record never
// expires; an end is written with a per-message TTL, SucceededTTL or
// FailedTTL, after which the server removes it. The bucket is bounded in
// bytes (StoreBytes); when full, its oldest records go first, which are
// finished ones (a live record is rewritten at every change). Bookkeeping
// never refuses a job: only a stream full of jobs waiting does (ErrFull).
type Runner struct {
	js          jetstream.JetStream
	layout      layout   // where everything is (layout.go)
	store       jobStore // the jobs' stream and their records (find.go)
	reads       *hedger  // how the store's reads are hedged (hedge.go): its stream's and its bucket's, and a Partitioned's every partition's
	health      storeHealth
	instruments *instruments                                       // metrics, spans and outcome counts (instruments.go)
	running     runs                                               // the jobs running here, for Cancel (running.go)
	late        lateEnds                                           // ends written after their lease was lost (late.go)
	listing     listing                                            // the index List and Counts read (list.go)
	rates       rates                                              // the queues' rates as last read (rate.go)
	announcer   announcer                                          // what this process says it runs (announce.go)
	partition   int                                                // its partition of a Partitioned store, -1 for none (partition.go)
	deps        *deps                                              // the waiting jobs its tails read (deps.go); a Partitioned's partitions share one
	get         func(context.Context, string) (jobs.Record, error) // reads any job of its store: Get, or its Partitioned's
	closing     sync.Once                                          // Close
	closeErr    error                                              // the first Close's

	kinds                      *jobs.Kinds
	storeTimeout               time.Duration
	maxDelay                   time.Duration
	defaultTimeout, maxTimeout time.Duration
	maxAttempts                int
	backoff                    func(attempt int) time.Duration
	journal                    string // Config.Journal
	log                        *slog.Logger
}

var (
	_ jobs.KeyedRunner    = (*Runner)(nil)
	_ jobs.Queuer         = (*Runner)(nil)
	_ jobs.EndCounter     = (*Runner)(nil)
	_ jobs.ReplicaLister  = (*Runner)(nil)
	_ jobs.StoreInspector = (*Runner)(nil)
)

// Config names what New finds or creates, and the settings it creates
// them with. Kinds is required; every other field has a default, given
// with it.
type Config struct {
	Stream, Consumer, Bucket string // "jobs", "jobs", "jobs" (crewd names its consumer "crewd")

	Replicas int // of the stream and the bucket when created here; 0 is 1

	// SucceededTTL is how long a succeeded job's record is kept after its
	// end (0 is 1 hour); FailedTTL a failed or timed-out one's, and an
	// idempotency key's (0 is 1 day).
	SucceededTTL, FailedTTL time.Duration
	// StoreBytes bounds the records' bucket when it is created here; when
	// it is full the oldest records go first. 0 is 256 MiB.
	StoreBytes int64

	// MaxDelay bounds how far ahead a job may be scheduled (Spec.RunAt);
	// 0 is 30 days.
	MaxDelay time.Duration

	AckWait time.Duration // the consumer's: a delivery not acked or renewed in this time is redelivered; 0 is 30 s

	// MaxAttempts bounds the runs of a job, its retries and the runs
	// interrupted by a crash included, unless its spec or its kind says
	// otherwise; 0 is jobs.DefaultMaxAttempts (25).
	MaxAttempts int
	// Backoff is the wait before a job's next run after its attempt-th
	// run failed; nil is jobs.Backoff (2^(attempt-1) s, at most 1 h).
	Backoff func(attempt int) time.Duration

	// Kinds are the kinds of job accepted and run; a job of another kind,
	// or with an argument its kind lacks, is refused at Submit. Delivered
	// (submitted by a process that has them: a deploy that reached the
	// submitters first), each run of it here is a failed attempt, retried
	// with backoff until a runner that has them takes it or its attempts
	// are spent.
	Kinds *jobs.Kinds

	// DefaultTimeout is a job's timeout when its spec gives none;
	// MaxTimeout the longest a spec may give. Zero is jobs.Timeouts's
	// default (30 s and 5 minutes).
	DefaultTimeout, MaxTimeout time.Duration

	// Journal is a file in which this process's Source notes the jobs it
	// holds (natsjs.WithJournal), so that a process killed while running
	// jobs hands them back when it starts again on the same file, and they
	// run again at once rather than after AckWait. Give each process a
	// path of its own that outlives it: a file in the embedded server's
	// data directory, a pod's volume. "" is none.
	Journal string

	// Replica names this process among those running the jobs
	// (jobs.ReplicaLister): 1 to 100 letters, digits, '-' and '_'; ""
	// is ReplicaName(), the host's name.
	Replica string

	// StoreTimeout bounds each read or write of a record and each publish
	// of a request (Submit, Get), so that an answer comes within a
	// request's time even when the store does not; 0 is DefaultStoreTimeout.
	StoreTimeout time.Duration

	// Namespace begins the names of the Runner's metrics
	// (<namespace>_job_run_seconds and the like) and of its spans'
	// attributes (<namespace>.job.id and the like): a program's own name,
	// or DefaultNamespace ("crew") when empty. Letters, digits and
	// underscores, not beginning with a digit.
	Namespace string

	Log *slog.Logger // may be nil
}

// defaults fills in what cfg leaves zero.
func (cfg *Config) defaults() {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&cfg.Stream, "jobs")
	def(&cfg.Consumer, "jobs")
	def(&cfg.Bucket, "jobs")
	def(&cfg.Namespace, DefaultNamespace)
	cfg.DefaultTimeout, cfg.MaxTimeout = jobs.Timeouts(cfg.DefaultTimeout, cfg.MaxTimeout)
	for _, d := range []struct {
		p *time.Duration
		v time.Duration
	}{{&cfg.MaxDelay, 30 * 24 * time.Hour}, {&cfg.SucceededTTL, time.Hour}, {&cfg.FailedTTL, 24 * time.Hour}, {&cfg.AckWait, 30 * time.Second},
		{&cfg.StoreTimeout, DefaultStoreTimeout}} {
		if *d.p == 0 {
			*d.p = d.v
		}
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = jobs.DefaultMaxAttempts
	}
	if cfg.Backoff == nil {
		cfg.Backoff = func(attempt int) time.Duration { return jobs.Backoff(attempt, rand.Int64N) }
	}
	if cfg.StoreBytes == 0 {
		cfg.StoreBytes = 256 << 20
	}
}

// bad names each of cfg's settings out of range, after defaults.
func (cfg *Config) bad() []string {
	var bad []string
	check := func(ok bool, format string, a ...any) {
		if !ok {
			bad = append(bad, fmt.Sprintf(format, a...))
		}
	}
	check(cfg.StoreBytes >= 1, "StoreBytes %d, want at least 1", cfg.StoreBytes)
	check(cfg.SucceededTTL >= time.Second, "SucceededTTL %v, want at least 1s", cfg.SucceededTTL)
	check(cfg.FailedTTL >= time.Second, "FailedTTL %v, want at least 1s", cfg.FailedTTL)
	check(cfg.AckWait > 0, "AckWait %v, want more than 0", cfg.AckWait)
	check(cfg.MaxAttempts >= 1 && cfg.MaxAttempts <= jobs.MaxMaxAttempts, "MaxAttempts %d, want 1..%d", cfg.MaxAttempts, jobs.MaxMaxAttempts)
	check(cfg.DefaultTimeout > 0, "DefaultTimeout %v, want more than 0", cfg.DefaultTimeout)
	check(cfg.MaxTimeout >= cfg.DefaultTimeout, "MaxTimeout %v, want at least DefaultTimeout %v", cfg.MaxTimeout, cfg.DefaultTimeout)
	check(cfg.MaxDelay > 0, "MaxDelay %v, want more than 0", cfg.MaxDelay)
	check(cfg.Replicas >= 1 && cfg.Replicas <= MaxReplicas, "Replicas %d, want 1..%d", cfg.Replicas, MaxReplicas)
	check(cfg.Replica == "" || validReplica(cfg.Replica), "Replica %.40q, want 1 to 100 letters, digits, '-' and '_'", cfg.Replica)
	check(validNamespace(cfg.Namespace), "Namespace %.40q, want letters, digits and underscores, not beginning with a digit", cfg.Namespace)
	check(cfg.StoreTimeout >= 0, "StoreTimeout %v, want 0 (the default) or more", cfg.StoreTimeout)
	return bad
}

// DefaultStoreTimeout is Config.StoreTimeout's default: an
// answer slower than this is an outage (a leader lost, a server cut off).
const DefaultStoreTimeout = 2 * time.Second

// Consumer is the consumer a natsjs.Source pulls the jobs from.
func (r *Runner) Consumer() jetstream.Consumer { return r.store.cons }

func (r *Runner) logWarn(msg string, args ...any) {
	if r.log != nil {
		r.log.Warn(msg, args...)
	}
}

// MaxReplicas is the most replicas a JetStream stream may have.
const MaxReplicas = 5
