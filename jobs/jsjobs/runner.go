package jsjobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go"
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
	js     jetstream.JetStream
	jobs   jetstream.Stream // the jobs' stream
	kv     jetstream.KeyValue
	cons   jetstream.Consumer
	layout layout // where everything is (layout.go)

	storeTimeout time.Duration
	health       storeHealth
	atLeader     lastMsg // reads a record from the bucket's leader (leaderLast)
	schedules    bool    // the stream allows message schedules
	maxDelay     time.Duration

	succeededTTL, failedTTL time.Duration
	journal                 string // Config.Journal

	running  runs        // the jobs running here, for Cancel
	late     lateEnds    // ends written after their lease was lost (late.go)
	listing  sync.Once   // starts listed at the first List or Counts
	listed   *tails      // the index List and Counts read; nil until then
	closing  sync.Once   // Close
	closed   atomic.Bool // Close has begun: List and Counts refuse
	closeErr error       // the first Close's

	deliveredMu  sync.Mutex // guards the consumer's delivered sequence, for Get
	deliveredSeq uint64
	deliveredAt  time.Time

	kinds                      *jobs.Kinds
	defaultTimeout, maxTimeout time.Duration
	maxAttempts                int
	backoff                    func(attempt int) time.Duration
	log                        *slog.Logger
	instruments                *instruments // metrics, spans and outcome counts (instruments.go)
}

var _ jobs.KeyedRunner = (*Runner)(nil)

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
	check(validNamespace(cfg.Namespace), "Namespace %.40q, want letters, digits and underscores, not beginning with a digit", cfg.Namespace)
	check(cfg.StoreTimeout >= 0, "StoreTimeout %v, want 0 (the default) or more", cfg.StoreTimeout)
	return bad
}

// DefaultStoreTimeout is Config.StoreTimeout's default: an
// answer slower than this is an outage (a leader lost, a server cut off).
const DefaultStoreTimeout = 2 * time.Second

// New finds the stream, the consumer and the bucket, or
// creates those missing with cfg's settings. Existing ones are used as they
// are, whatever cfg says, so that an operator may create them beforehand;
// the settings in force are logged, with a warning for a stream or bucket
// with fewer replicas than cfg.Replicas (raising them is left to the
// operator: it moves the whole store between servers). While the
// JetStream cluster is forming (no answer, or "temporarily unavailable")
// the setup is tried again with backoff until ctx ends.
func New(ctx context.Context, js jetstream.JetStream, cfg Config) (*Runner, error) {
	cfg.defaults()
	if cfg.Kinds == nil || len(cfg.Kinds.Names()) == 0 {
		return nil, errors.New("jetstream runner: no kinds of job registered (Config.Kinds)")
	}
	if bad := cfg.bad(); len(bad) > 0 {
		return nil, fmt.Errorf("jetstream runner: bad settings: %s", strings.Join(bad, "; "))
	}
	r := &Runner{
		js: js, layout: layout{stream: cfg.Stream, bucket: cfg.Bucket}, storeTimeout: cfg.StoreTimeout,
		health: storeHealth{log: cfg.Log}, kinds: cfg.Kinds, maxDelay: cfg.MaxDelay,
		succeededTTL: cfg.SucceededTTL, failedTTL: cfg.FailedTTL, journal: cfg.Journal,
		defaultTimeout: cfg.DefaultTimeout, maxTimeout: cfg.MaxTimeout, maxAttempts: cfg.MaxAttempts, backoff: cfg.Backoff, log: cfg.Log,
		instruments: newInstruments(cfg.Namespace),
	}
	r.atLeader = r.leaderLast(r.layout.records())
	if err := retrySetup(ctx, cfg.Log, func(ctx context.Context) error { return r.setup(ctx, cfg) }); err != nil {
		return nil, err
	}
	if err := r.running.listen(js.Conn(), r.layout); err != nil {
		return nil, fmt.Errorf("jetstream runner: listen for cancels: %w", err)
	}
	if r.log != nil {
		ctx, cancel := context.WithTimeout(ctx, setupAttempt)
		defer cancel()
		ci := r.cons.CachedInfo()
		args := []any{"stream", cfg.Stream, "consumer", cfg.Consumer, "bucket", cfg.Bucket,
			"ack_wait", ci.Config.AckWait.String(), "max_attempts", cfg.MaxAttempts}
		for _, name := range []string{cfg.Stream, r.layout.records()} {
			s, err := js.Stream(ctx, name)
			if err != nil {
				continue
			}
			sc := s.CachedInfo().Config
			if name == cfg.Stream {
				args = append(args, "replicas", sc.Replicas)
			} else {
				args = append(args, "succeeded_ttl", cfg.SucceededTTL.String(), "failed_ttl", cfg.FailedTTL.String(),
					"store_bytes", sc.MaxBytes, "bucket_replicas", sc.Replicas)
			}
			if sc.Replicas < cfg.Replicas {
				r.log.Warn("a JetStream stream found has fewer replicas than asked; crewd leaves it as it is (raise it with nats stream edit --replicas)",
					"stream", name, "replicas", sc.Replicas, "want", cfg.Replicas)
			}
		}
		r.log.Info("jobs go through JetStream", args...)
	}
	return r, nil
}

// MaxReplicas is the most replicas a JetStream stream may have.
const MaxReplicas = 5

// setup is one attempt at finding or creating the stream, the consumer
// and the bucket.
func (r *Runner) setup(ctx context.Context, cfg Config) error {
	js := r.js
	stream, err := findOrCreate(ctx, func() (jetstream.Stream, error) {
		return js.CreateStream(ctx, jetstream.StreamConfig{
			Name:        cfg.Stream,
			Description: "jobs, one message per job accepted, removed once acked",
			Subjects:    []string{r.layout.jobs(), r.layout.dues()},
			Retention:   jetstream.WorkQueuePolicy,
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
			// Get reads a job still waiting from its message, on any
			// replica.
			AllowDirect: true,
			// A job due later waits as a schedule the server fires.
			AllowMsgSchedules: true,
		})
	}, func() (jetstream.Stream, error) { return js.Stream(ctx, cfg.Stream) }, jetstream.ErrStreamNameAlreadyInUse)
	if err != nil {
		return fmt.Errorf("stream %q: %w", cfg.Stream, err)
	}
	r.jobs = stream
	r.schedules = r.allowSchedules(ctx, stream, cfg.Stream)
	r.cons, err = findOrCreate(ctx, func() (jetstream.Consumer, error) {
		return stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:       cfg.Consumer,
			Description:   "the job runners",
			FilterSubject: r.layout.jobs(),
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       cfg.AckWait,
			// Deliveries are not bounded here: a message the server stops
			// delivering would sit in the stream for ever. Handle bounds
			// the runs instead, counted in the record.
			MaxDeliver: -1,
		})
	}, func() (jetstream.Consumer, error) { return stream.Consumer(ctx, cfg.Consumer) }, jetstream.ErrConsumerExists)
	if err != nil {
		return fmt.Errorf("consumer %q: %w", cfg.Consumer, err)
	}
	r.kv, err = findOrCreate(ctx, func() (jetstream.KeyValue, error) {
		return js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      cfg.Bucket,
			Description: "job records, by job id; finished ones expire by their own TTL",
			MaxBytes:    cfg.StoreBytes,
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
		})
	}, func() (jetstream.KeyValue, error) { return js.KeyValue(ctx, cfg.Bucket) }, jetstream.ErrBucketExists)
	if err != nil {
		return fmt.Errorf("bucket %q: %w", cfg.Bucket, err)
	}
	return r.keepByState(ctx)
}

// allowSchedules makes a stream found without message schedules (made by
// an earlier version) allow them and take the schedules' subjects, if it
// can (a stream that discards new messages cannot); it reports whether the
// stream allows them.
func (r *Runner) allowSchedules(ctx context.Context, stream jetstream.Stream, name string) bool {
	sc := stream.CachedInfo().Config
	at := name + "-at.>"
	if sc.AllowMsgSchedules && slices.Contains(sc.Subjects, at) {
		return true
	}
	if !slices.Contains(sc.Subjects, at) {
		sc.Subjects = append(sc.Subjects, at)
	}
	sc.AllowMsgSchedules = true
	if _, err := r.js.UpdateStream(ctx, sc); err != nil {
		if r.log != nil {
			r.log.Warn("the jobs' stream cannot take message schedules: jobs due later are refused", "stream", name, "error", err)
		}
		return false
	}
	return true
}

// keepByState makes the bucket's stream keep records by state: finished
// ones carry their own TTL (AllowMsgTTL, which an existing bucket made
// without it gets now: it can be turned on, never off), and when the
// bucket is full its oldest records go (DiscardOld) rather than a new one
// be refused. A live record carries no TTL and never expires.
func (r *Runner) keepByState(ctx context.Context) error {
	s, err := r.js.Stream(ctx, r.layout.records())
	if err != nil {
		return fmt.Errorf("bucket %q: %w", r.layout.bucket, err)
	}
	sc := s.CachedInfo().Config
	if sc.AllowMsgTTL && sc.Discard == jetstream.DiscardOld {
		return nil
	}
	if r.log != nil {
		r.log.Info("job records: finished ones now expire by their own TTL, the oldest go first when the bucket is full",
			"bucket", r.layout.bucket, "allow_msg_ttl", sc.AllowMsgTTL, "discard", sc.Discard.String())
	}
	sc.AllowMsgTTL, sc.Discard = true, jetstream.DiscardOld
	if _, err := r.js.UpdateStream(ctx, sc); err != nil {
		return fmt.Errorf("bucket %q: keep records by state: %w", r.layout.bucket, err)
	}
	return nil
}

// findOrCreate creates a thing, or finds it when create says it exists
// already (with other settings, or made by another crewd meanwhile).
func findOrCreate[T any](ctx context.Context, create, find func() (T, error), exists error) (T, error) {
	t, err := create()
	if errors.Is(err, exists) {
		return find()
	}
	return t, err
}

// Consumer is the consumer a natsjs.Source pulls the jobs from.
func (r *Runner) Consumer() jetstream.Consumer { return r.cons }

// Submit implements Runner: the job is published, and accepted once the
// stream has stored it; its record follows from the message (Get reads a
// waiting job from it, and the first run writes the record). The message
// id is the job's, so that a publish retried by the client library is
// stored once.
func (r *Runner) Submit(ctx context.Context, spec jobs.Spec) (jobs.Record, error) {
	job, err := r.kinds.Prepare(spec, r.defaultTimeout, r.maxTimeout)
	if err != nil {
		return jobs.Record{}, err
	}
	if err := r.connected(); err != nil {
		return jobs.Record{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	if err := r.acceptable(job); err != nil {
		return jobs.Record{}, err
	}
	rec := accepted(jobs.NewID(), spec.Kind, time.Now(), job)
	if _, err := r.publish(ctx, rec.ID, job, 0, 0); err != nil {
		return jobs.Record{}, storeError(err)
	}
	return rec, nil
}

// accepted is the record of a job just accepted: queued, or scheduled.
func accepted(id, kind string, created time.Time, job jobs.Prepared) jobs.Record {
	rec := jobs.Record{ID: id, Kind: kind, State: jobs.Queued, Created: created}
	if !job.RunAt.IsZero() {
		rec.State, rec.RunAt = jobs.Scheduled, job.RunAt
	}
	return rec
}

// acceptable refuses a job the store cannot take: too big, or not
// schedulable.
func (r *Runner) acceptable(job jobs.Prepared) error {
	if err := r.sized(job); err != nil {
		return err
	}
	return r.schedulable(job)
}

// schedulable refuses a job due later than MaxDelay, or later at all on a
// stream that does not allow message schedules.
func (r *Runner) schedulable(job jobs.Prepared) error {
	if job.RunAt.IsZero() {
		return nil
	}
	if err := job.Within(r.maxDelay); err != nil {
		return err
	}
	if !r.schedules {
		return fmt.Errorf("%w: the jobs' stream does not allow message schedules (it was made without them, with discard new)", jobs.ErrUnavailable)
	}
	return nil
}

// Get implements Runner, from the bucket: any crewd answers for any job.
func (r *Runner) Get(ctx context.Context, id string) (jobs.Record, error) {
	if !jobs.ValidID(id) {
		// Never a key: not one crewd made.
		return jobs.Record{}, jobs.ErrNotFound
	}
	// Not refused while the store is known to be out: the records'
	// bucket answers reads from any of its replicas (direct get), so a read
	// goes on while its stream elects a leader, as writes cannot.
	if nc := r.js.Conn(); !nc.IsConnected() {
		return jobs.Record{}, fmt.Errorf("%w: NATS connection %v", jobs.ErrUnavailable, nc.Status())
	}
	rec, _, _, err := r.find(ctx, id)
	return rec, err
}

// find reads job id where it is, and returns its record with the record's
// revision, or, for a job without a record yet, what its waiting message
// says with that message's stream sequence (the other number 0).
//
// A job moves forward through three places, and each move stores the next
// place before it removes the last: its schedule (a job due later; the
// server stores the message it fires, then purges the schedule), its
// message, and its record (Handle returns, and the message is acked away,
// only once the record's write is stored). Read in that order, the places
// cannot miss a job that moves meanwhile. The record is read first all the
// same, as most jobs asked for have ended; but then a job may move between
// two reads and be in none of the places when each is read: its end
// stored and its message acked between the reads of its record and its
// message, or its schedule fired between the reads of its message and its
// schedule. Found nowhere is therefore not an answer until the places are
// read again in the order the job moves: its message, then its record.
// Only a job found nowhere pays these two reads.
func (r *Runner) find(ctx context.Context, id string) (rec jobs.Record, rev, seq uint64, err error) {
	rec, rev, err = r.load(ctx, id)
	if !errors.Is(err, jobs.ErrNotFound) {
		return rec, rev, 0, err
	}
	rec, seq, err = r.waiting(ctx, id)
	if !errors.Is(err, jobs.ErrNotFound) {
		return rec, 0, seq, err
	}
	// Not scheduled (any more): in the stream, or past it.
	rec, seq, err = r.message(ctx, id, r.jobs.GetLastMsgForSubject)
	if !errors.Is(err, jobs.ErrNotFound) {
		return rec, 0, seq, err
	}
	// Past the stream: its record was stored before its message went.
	rec, rev, err = r.load(ctx, id)
	if !errors.Is(err, jobs.ErrNotFound) {
		return rec, rev, 0, err
	}
	// Found nowhere by the reads any replica answers (direct gets): a
	// replica behind its leader may not hold yet what another process has
	// just stored (a job accepted a moment ago). Before not found, the
	// leaders are asked, in the same order.
	return r.findAtLeaders(ctx, id)
}

// findAtLeaders is find through the leaders' reads alone: for a reader
// that must not act on a replica's stale copy.
func (r *Runner) findAtLeaders(ctx context.Context, id string) (jobs.Record, uint64, uint64, error) {
	return r.findAt(ctx, id, r.leaderRecord)
}

// findAfter is findAtLeaders for a writer whose write over revision
// refused was refused: what the record changed to (leaderRecordAfter).
func (r *Runner) findAfter(refused uint64) func(ctx context.Context, id string) (jobs.Record, uint64, uint64, error) {
	return func(ctx context.Context, id string) (jobs.Record, uint64, uint64, error) {
		return r.findAt(ctx, id, func(ctx context.Context, id string) (jobs.Record, uint64, error) {
			return r.leaderRecordAfter(ctx, id, refused)
		})
	}
}

// findAt is find with the record read by record, and the stream read from
// its leader.
func (r *Runner) findAt(ctx context.Context, id string, record func(context.Context, string) (jobs.Record, uint64, error)) (rec jobs.Record, rev, seq uint64, err error) {
	if rec, rev, err = record(ctx, id); !errors.Is(err, jobs.ErrNotFound) {
		return rec, rev, 0, err
	}
	leader := r.leaderLast(r.layout.stream)
	if rec, seq, err = r.scheduled(ctx, id, leader); !errors.Is(err, jobs.ErrNotFound) {
		return rec, 0, seq, err
	}
	if rec, seq, err = r.message(ctx, id, leader); !errors.Is(err, jobs.ErrNotFound) {
		return rec, 0, seq, err
	}
	rec, rev, err = record(ctx, id)
	return rec, rev, 0, err
}

// leaderRecord reads job id's record from the bucket's leader.
func (r *Runner) leaderRecord(ctx context.Context, id string) (jobs.Record, uint64, error) {
	m, err := r.atLeader(ctx, r.layout.record(id))
	if errors.Is(err, jetstream.ErrMsgNotFound) || err == nil && m.Header.Get("KV-Operation") != "" {
		return jobs.Record{}, 0, jobs.ErrNotFound
	}
	if err != nil {
		return jobs.Record{}, 0, storeError(err)
	}
	rec, err := decodeRecord(id, m.Data)
	return rec, m.Sequence, err
}

// leaderRecordAfter reads job id's record from the bucket's leader after
// a write over revision refused (0: none) was refused. The leader refuses
// a write over the last revision too while another write of the record is
// on its way through the group, and reads the record as it was until that
// write is stored: so while it still reads revision refused, it is read
// again a moment later, up to the store's timeout, then returned as it is
// (the write on its way may have failed).
func (r *Runner) leaderRecordAfter(ctx context.Context, id string, refused uint64) (jobs.Record, uint64, error) {
	deadline := time.Now().Add(r.storeTimeout)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		rec, rev, err := r.leaderRecord(ctx, id)
		stale := err == nil && rev == refused || errors.Is(err, jobs.ErrNotFound) && refused == 0
		if !stale || time.Now().Add(wait).After(deadline) {
			return rec, rev, err
		}
		select {
		case <-ctx.Done():
			return rec, rev, err
		case <-time.After(wait):
		}
	}
}

// waiting reads a job that has no record yet from its message, or from its
// schedule when it has no message (yet), and returns that message's stream
// sequence.
func (r *Runner) waiting(ctx context.Context, id string) (jobs.Record, uint64, error) {
	rec, seq, err := r.message(ctx, id, r.jobs.GetLastMsgForSubject)
	if errors.Is(err, jobs.ErrNotFound) {
		return r.scheduled(ctx, id, r.jobs.GetLastMsgForSubject)
	}
	return rec, seq, err
}

// message reads a job that has no record yet from its message in the
// stream, and returns that message's stream sequence: a job waiting there
// is queued, one delivered running (its first run writes its record at
// its end).
func (r *Runner) message(ctx context.Context, id string, last lastMsg) (jobs.Record, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	m, err := last(ctx, r.layout.job(id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return jobs.Record{}, 0, jobs.ErrNotFound
	}
	if err != nil {
		return jobs.Record{}, 0, storeError(err)
	}
	var spec jobs.Spec
	_ = json.Unmarshal(m.Data, &spec) // a bad spec is still a job, failed at its run
	rec := jobs.Record{ID: id, Kind: spec.Kind, State: jobs.Queued, Created: created(m.Header, m.Time), Spec: &spec}
	if r.delivered(ctx) >= m.Sequence {
		// Delivered and not acked, and no record yet: taken by a runner,
		// in its first run (which writes nothing before its end) or held
		// for a free worker, which the store cannot tell apart. No run is
		// recorded as started: Attempts stays 0 until the record is
		// written.
		rec.State, rec.Deliveries = jobs.Running, 1
	}
	return rec, m.Sequence, nil
}

// scheduled reads a job due later from its schedule's message.
func (r *Runner) scheduled(ctx context.Context, id string, last lastMsg) (jobs.Record, uint64, error) {
	if !r.schedules {
		return jobs.Record{}, 0, jobs.ErrNotFound
	}
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	m, err := last(ctx, r.layout.due(id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return jobs.Record{}, 0, jobs.ErrNotFound
	}
	if err != nil {
		return jobs.Record{}, 0, storeError(err)
	}
	var spec jobs.Spec
	_ = json.Unmarshal(m.Data, &spec)
	rec := jobs.Record{ID: id, Kind: spec.Kind, State: jobs.Scheduled, Created: m.Time, Spec: &spec}
	if at, ok := strings.CutPrefix(m.Header.Get(headerSchedule), "@at "); ok {
		rec.RunAt, _ = time.Parse(time.RFC3339Nano, at)
	}
	return rec, m.Sequence, nil
}

// delivered is the stream sequence the consumer has delivered up to,
// read at most every deliveredEvery: a job whose message is at or below it
// has started. 0 when it cannot be read.
func (r *Runner) delivered(ctx context.Context) uint64 {
	r.deliveredMu.Lock()
	defer r.deliveredMu.Unlock()
	if time.Since(r.deliveredAt) < deliveredEvery {
		return r.deliveredSeq
	}
	// A failed read is cached like a good one: while the store is out,
	// Gets waiting on the lock must not each spend a store timeout in turn.
	r.deliveredAt = time.Now()
	if info, err := r.cons.Info(ctx); err == nil {
		r.deliveredSeq = info.Delivered.Stream
	}
	return r.deliveredSeq
}

// deliveredEvery bounds how often Get asks the consumer how far it has
// delivered: a job that just started may read queued that long.
const deliveredEvery = 250 * time.Millisecond

// Wait waits until the job has ended and returns its record: at once if
// it has, else when the record changes to a terminal state, or when ctx
// ends (with ctx's error). A job found nowhere (an unknown id, a record
// expired) is ErrNotFound at once. It watches the job's key, so it costs
// no polling.
func (r *Runner) Wait(ctx context.Context, id string) (jobs.Record, error) {
	if !jobs.ValidID(id) {
		return jobs.Record{}, jobs.ErrNotFound
	}
	w, err := r.kv.Watch(ctx, id)
	if err != nil {
		return jobs.Record{}, storeError(err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return jobs.Record{}, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return jobs.Record{}, fmt.Errorf("%w: the watch of job %s ended", jobs.ErrUnavailable, id)
			}
			if e == nil {
				// The initial values' end, none terminal: a job found
				// nowhere (an unknown id, a record expired) never ends.
				// The watch is on, so a write after this read is seen.
				if _, err := r.Get(ctx, id); errors.Is(err, jobs.ErrNotFound) {
					return jobs.Record{}, err
				}
				continue
			}
			if e.Operation() != jetstream.KeyValuePut {
				continue // a deletion
			}
			var rec jobs.Record
			if err := json.Unmarshal(e.Value(), &rec); err != nil {
				return jobs.Record{}, fmt.Errorf("record of job %s: %w", id, err)
			}
			if rec.State.Terminal() {
				return rec, nil
			}
		}
	}
}

// connected refuses a write at once, rather than after the store's
// timeout, while the connection is down or the store is known to be out
// (storeHealth).
func (r *Runner) connected() error {
	if nc := r.js.Conn(); !nc.IsConnected() {
		return fmt.Errorf("%w: NATS connection %v", jobs.ErrUnavailable, nc.Status())
	}
	return r.health.Err()
}

// load reads a record and its revision. Like put and swap, it waits for
// the store at most StoreTimeout.
func (r *Runner) load(ctx context.Context, id string) (jobs.Record, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	// Any replica of the bucket answers a read (direct get), but a request
	// may go to one cut off the network before its route is dropped: each
	// try gets half the time, and a second goes to whichever answers.
	var e jetstream.KeyValueEntry
	var err error
	for range 2 {
		tctx, tcancel := context.WithTimeout(ctx, r.storeTimeout/2)
		e, err = r.kv.Get(tctx, id)
		tcancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
			break
		}
	}
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) || errors.Is(err, jetstream.ErrInvalidKey) {
		return jobs.Record{}, 0, jobs.ErrNotFound
	}
	if err != nil {
		return jobs.Record{}, 0, storeError(err)
	}
	rec, err := decodeRecord(id, e.Value())
	return rec, e.Revision(), err
}

// decodeRecord decodes job id's record.
func decodeRecord(id string, data []byte) (jobs.Record, error) {
	var rec jobs.Record
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // a factorial's result is a uint64: no float64 on the way
	if err := dec.Decode(&rec); err != nil {
		return jobs.Record{}, fmt.Errorf("record of job %s: %w", id, err)
	}
	return rec, nil
}

// put writes a record whatever its revision, and returns the new one. A
// finished record carries its TTL (ttl), after which the server removes
// it; a live one carries none.
func (r *Runner) put(ctx context.Context, rec jobs.Record) (uint64, error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	var opts []jetstream.PublishOpt
	if ttl := r.ttl(rec.State); ttl > 0 {
		opts = append(opts, jetstream.WithMsgTTL(ttl))
	}
	ack, err := r.js.Publish(ctx, r.layout.record(rec.ID), data, opts...)
	if err != nil {
		return 0, storeError(err)
	}
	return ack.Sequence, nil
}

// ttl is how long a record in state st is kept: none while the job lives.
func (r *Runner) ttl(st jobs.State) time.Duration {
	switch {
	case !st.Terminal():
		return 0
	case st == jobs.Succeeded:
		return r.succeededTTL
	}
	return r.failedTTL
}

// errChanged is a write refused because the record changed since it was
// read: another run of the same job wrote it.
var errChanged = errors.New("job record changed meanwhile")

// swap writes a record only if it is still at revision rev (0: only if it
// does not exist), with its state's TTL, and returns the new revision;
// errChanged otherwise.
func (r *Runner) swap(ctx context.Context, rec jobs.Record, rev uint64) (uint64, error) {
	data, err := json.Marshal(rec)
	if err == nil {
		data, err = r.fit(rec, data)
	}
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(rev)}
	if ttl := r.ttl(rec.State); ttl > 0 {
		opts = append(opts, jetstream.WithMsgTTL(ttl))
	}
	ack, err := r.js.Publish(ctx, r.layout.record(rec.ID), data, opts...)
	var api *jetstream.APIError
	switch {
	case err == nil:
		return ack.Sequence, nil
	case errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant):
		return 0, errChanged
	}
	return 0, storeError(err)
}

// storeError maps an error of the bucket or the stream to the Runner's:
// ErrFull for a stream full of jobs, ctx's own error as it is, and
// ErrUnavailable for the rest.
func storeError(err error) error {
	var api *jetstream.APIError
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &api) && api.ErrorCode != jetstream.JSErrCodeStreamMessageExceedsMaximum && full(api.Description):
		return jobs.ErrFull
	}
	return fmt.Errorf("%w: %v", jobs.ErrUnavailable, err)
}

// full reports whether a store's error says it has reached a limit.
func full(description string) bool {
	for _, s := range []string{"maximum messages", "maximum bytes", "resource limits exceeded", "insufficient resources"} {
		if strings.Contains(description, s) {
			return true
		}
	}
	return false
}
