package jsjobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go/jetstream"
)

// New finds the stream, the consumer and the bucket, or
// creates those missing with cfg's settings. Existing ones are used as they
// are, whatever cfg says, so that an operator may create them beforehand;
// the settings in force are logged, with a warning for a stream or bucket
// with fewer replicas than cfg.Replicas (raising them is left to the
// operator: it moves the whole store between servers). While the
// JetStream cluster is forming (no answer, or "temporarily unavailable")
// the setup is tried again with backoff until ctx ends.
func New(ctx context.Context, js jetstream.JetStream, cfg Config) (*Runner, error) {
	return newRunner(ctx, js, cfg, new(hedger))
}

// newRunner is New with the store's reads hedged by reads, which a
// Partitioned's partitions share (they are on the same servers).
func newRunner(ctx context.Context, js jetstream.JetStream, cfg Config, reads *hedger) (*Runner, error) {
	cfg.defaults()
	if cfg.Kinds == nil || len(cfg.Kinds.Names()) == 0 {
		return nil, errors.New("jetstream runner: no kinds of job registered (Config.Kinds)")
	}
	if bad := cfg.bad(); len(bad) > 0 {
		return nil, fmt.Errorf("jetstream runner: bad settings: %s", strings.Join(bad, "; "))
	}
	r := &Runner{
		js: js, layout: layout{stream: cfg.Stream, bucket: cfg.Bucket}, storeTimeout: cfg.StoreTimeout,
		health: storeHealth{log: cfg.Log}, kinds: cfg.Kinds, maxDelay: cfg.MaxDelay, journal: cfg.Journal,
		partition:      -1,
		defaultTimeout: cfg.DefaultTimeout, maxTimeout: cfg.MaxTimeout, maxAttempts: cfg.MaxAttempts, backoff: cfg.Backoff, log: cfg.Log,
		instruments: newInstruments(cfg.Namespace),
	}
	r.late.write, r.late.timeout, r.late.log = r.writeLate, cfg.StoreTimeout, cfg.Log
	r.deps = newDeps(r.indexState, r.settleWaiting, func() { _, _ = r.tails() })
	name := cmp.Or(cfg.Replica, ReplicaName())
	r.announcer = announcer{name: name, js: js, subject: r.layout.record(replicaPrefix + name), timeout: cfg.StoreTimeout, running: &r.running, log: cfg.Log}
	r.reads = reads
	stream := &jobStream{js: js, reads: r.reads, layout: r.layout, storeTimeout: cfg.StoreTimeout, leader: leaderLast(js, cfg.StoreTimeout, cfg.Stream)}
	r.store = jobStore{
		records: &records{js: js, reads: r.reads, layout: r.layout, storeTimeout: cfg.StoreTimeout, atLeader: leaderLast(js, cfg.StoreTimeout, r.layout.bucketStream()),
			succeededTTL: cfg.SucceededTTL, failedTTL: cfg.FailedTTL},
		jobStream: stream,
	}
	if err := retrySetup(ctx, cfg.Log, func(ctx context.Context) error { return r.setup(ctx, cfg) }); err != nil {
		return nil, err
	}
	if err := r.running.listen(js.Conn(), r.layout); err != nil {
		return nil, fmt.Errorf("jetstream runner: listen for cancels: %w", err)
	}
	if r.log != nil {
		ctx, cancel := context.WithTimeout(ctx, setupAttempt)
		defer cancel()
		ci := r.store.cons.CachedInfo()
		args := []any{"stream", cfg.Stream, "consumer", cfg.Consumer, "bucket", cfg.Bucket,
			"ack_wait", ci.Config.AckWait.String(), "max_attempts", cfg.MaxAttempts}
		for _, name := range []string{cfg.Stream, r.layout.bucketStream()} {
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
	r.store.jobs = stream
	r.store.schedules = r.allowSchedules(ctx, stream, cfg.Stream)
	r.store.cons, err = findOrCreate(ctx, func() (jetstream.Consumer, error) {
		return stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:        cfg.Consumer,
			Description:    "the job runners of the default queue, and periodic jobs' ticks",
			FilterSubjects: r.layout.defaults(),
			AckPolicy:      jetstream.AckExplicitPolicy,
			AckWait:        cfg.AckWait,
			// Deliveries are not bounded here: a message the server stops
			// delivering would sit in the stream for ever. Handle bounds
			// the runs instead, counted in the record.
			MaxDeliver: -1,
		})
	}, func() (jetstream.Consumer, error) { return stream.Consumer(ctx, cfg.Consumer) }, jetstream.ErrConsumerExists)
	if err != nil {
		return fmt.Errorf("consumer %q: %w", cfg.Consumer, err)
	}
	if err := r.defaultQueueOnly(ctx, stream); err != nil {
		return fmt.Errorf("consumer %q: %w", cfg.Consumer, err)
	}
	if _, err := r.lanes(ctx, jobs.DefaultQueue, r.store.cons); err != nil {
		return fmt.Errorf("consumer %q: its priorities' lanes: %w", cfg.Consumer, err)
	}
	r.store.kv, err = findOrCreate(ctx, func() (jetstream.KeyValue, error) {
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

// defaultQueueOnly narrows a consumer found reading every job (made by an
// earlier version, before named queues) to the default queue and the
// ticks: a work-queue stream refuses a queue's consumer beside one whose
// subjects overlap it.
func (r *Runner) defaultQueueOnly(ctx context.Context, stream jetstream.Stream) error {
	cc := r.store.cons.CachedInfo().Config
	if cc.FilterSubject != r.layout.jobs() {
		return nil
	}
	cc.FilterSubject, cc.FilterSubjects = "", r.layout.defaults()
	cons, err := stream.UpdateConsumer(ctx, cc)
	if err != nil {
		return fmt.Errorf("narrow to the default queue: %w", err)
	}
	r.store.cons = cons
	if r.log != nil {
		r.log.Info("the jobs' consumer now reads the default queue and the ticks; each named queue has a consumer of its own", "consumer", cc.Durable)
	}
	return nil
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
	s, err := r.js.Stream(ctx, r.layout.bucketStream())
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

// Close stops listing jobs (List and Counts then answer ErrUnavailable),
// reading the queues for the metrics, and listening for cancels (the jobs
// running here can then be cancelled only through their records), and
// drops the ends of runs not yet written after their lease was lost
// (late.go): those jobs run again. A second Close does nothing.
func (r *Runner) Close() error {
	r.closing.Do(func() {
		r.announcer.close()
		r.deps.close()
		r.listing.close()
		if r.running.sub != nil {
			r.closeErr = r.running.sub.Unsubscribe()
		}
		r.late.close()
		r.instruments.queues.close()
	})
	return r.closeErr
}
