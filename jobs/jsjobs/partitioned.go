package jsjobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go/jetstream"
)

// Partitioned is a job store spread over partitions, each a stream and a
// bucket of its own (a Runner each), so that no single raft group holds
// every job: a partition whose leader is gone (its server cut off, an
// election under way) stalls only its own jobs, and the partitions'
// leaders spread the writes over the servers.
//
// The rules it keeps:
//   - A job's id names its partition (partition.go): reads, cancels,
//     retries and deletes go to that partition alone; an id whose
//     partition does not hold it (a job of the store before it was
//     partitioned, whose ids are all random) is looked up in partition 0,
//     which is that store: upgraded, its jobs drain where they are.
//   - A submit goes to the partitions in turn; one that has not answered
//     within Failover (or failed for want of its store) is left for the
//     next, with a new id, and skipped by the next submits for a while
//     (partitionCooldown). A submit is therefore answered within about
//     Failover while any partition has a leader. The cost: a submit whose
//     first partition stored it after Failover all the same runs twice,
//     as two jobs (an unkeyed submit is at least once, as a client's retry
//     of a lost answer is). A keyed submit (SubmitOnce) never moves: its
//     key's claim and its job are in the partition its key hashes to, so
//     it stays one job, and waits for that partition's election (one key
//     in N).
//   - List, Counts and EndsPerMinute read every partition's index (no
//     store write): a page is the newest of the partitions' pages merged by
//     the order every index keeps, the same cursor for all.
//   - A Source takes the priorities of every partition as lane groups: a
//     priority's lanes of all partitions take turns, a priority before the
//     next, so priorities keep their order across partitions.
type Partitioned struct {
	parts []*Runner // by partition; parts[0] on the Config's own names
	// Failover is how long a submit waits for one partition before it
	// tries the next; DefaultFailover unless set before the first Submit.
	Failover time.Duration

	metrics  *partitionMetrics
	turn     atomic.Uint64 // the submits made: the next one's first partition
	mu       sync.Mutex
	failedAt []time.Time    // a partition's last submit left for the next
	leaders  []string       // the server leading each partition's stream when Balance last looked ("" unknown)
	storedAt []atomic.Int64 // a partition's last submit stored, in Unix ns
}

// DefaultFailover is a partition's wait before a submit tries the next:
// far under a raft election (4 to 9 s in nats-server), well over a write
// (milliseconds).
const DefaultFailover = 500 * time.Millisecond

// partitionCooldown is how long submits skip a partition that one of them
// left, unless every partition is skipped.
const partitionCooldown = 5 * time.Second

// NewPartitioned makes or finds a store of n partitions (1 to
// MaxPartitions) with cfg's settings: partition 0 on cfg's stream and
// bucket (a store made by New before is its partition 0), partition k on
// "<stream>-k" and "<bucket>-k", each with cfg's consumers. A store may
// grow: n greater than before adds partitions for new jobs, the old ones
// staying where they are; n less than before leaves the partitions past
// it unread, so it is refused only by the operator's care (the docs say so).
func NewPartitioned(ctx context.Context, js jetstream.JetStream, cfg Config, n int) (*Partitioned, error) {
	if n < 1 || n > MaxPartitions {
		return nil, fmt.Errorf("jetstream runner: bad settings: partitions %d, want 1 to %d", n, MaxPartitions)
	}
	p := &Partitioned{Failover: DefaultFailover, failedAt: make([]time.Time, n), leaders: make([]string, n), storedAt: make([]atomic.Int64, n), metrics: newPartitionMetrics(cmp.Or(cfg.Namespace, DefaultNamespace), n)}
	reads := new(hedger) // the partitions are on the same servers: a replica cut off is so for every one
	for k := range n {
		c := cfg
		c.Stream, c.Bucket = partitionNames(cfg.Stream, cfg.Bucket, k)
		if k > 0 && c.Journal != "" {
			c.Journal = "" // one journal, the Source's (partitioned_source.go)
		}
		r, err := newRunner(ctx, js, c, reads)
		if err != nil {
			_ = p.Close()
			return nil, fmt.Errorf("partition %d: %w", k, err)
		}
		r.partition = k
		if k > 0 {
			r.instruments = p.parts[0].instruments // one set of metrics for the store
		}
		p.parts = append(p.parts, r)
	}
	// One view of the waiting jobs, fed by every partition's tails: a
	// job's parents may be in any partition.
	shared := newDeps(func(k jobKey) (jobs.State, bool) {
		r, _ := p.runnerOf(k.String())
		return r.indexState(k)
	}, func(ctx context.Context, id string, seq uint64, parent string, st jobs.State) error {
		r, _ := p.runnerOf(id)
		return r.settleWaiting(ctx, id, seq, parent, st)
	}, func() {
		for _, r := range p.parts {
			_, _ = r.tails()
		}
	})
	for _, r := range p.parts {
		r.deps, r.get = shared, p.Get
	}
	return p, nil
}

// Partitions are the store's partitions, by number: each a Runner of its
// own stream and bucket.
func (p *Partitioned) Partitions() []*Runner { return p.parts }

// Close closes every partition's Runner, all at once (each may wait on
// the store: its announcement's purge, an end still to write), and
// returns their errors joined.
func (p *Partitioned) Close() error {
	errs := make([]error, len(p.parts))
	var wg sync.WaitGroup
	for k, r := range p.parts {
		wg.Go(func() { errs[k] = r.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runnerOf is the partition job id names, if the store has it; else
// partition 0.
func (p *Partitioned) runnerOf(id string) (*Runner, int) {
	if k := partitionOf(id); k > 0 && k < len(p.parts) {
		return p.parts[k], k
	}
	return p.parts[0], 0
}

// onJob runs op on job id's partition, and on partition 0 when that
// partition does not know it (a job of the store before partitions).
func onJob[T any](p *Partitioned, id string, op func(*Runner) (T, error)) (T, error) {
	r, k := p.runnerOf(id)
	v, err := op(r)
	if k != 0 && errors.Is(err, jobs.ErrNotFound) {
		return op(p.parts[0])
	}
	return v, err
}

// Get implements jobs.Runner.
func (p *Partitioned) Get(ctx context.Context, id string) (jobs.Record, error) {
	return onJob(p, id, func(r *Runner) (jobs.Record, error) { return r.Get(ctx, id) })
}

// Wait implements jobs.Runner.
func (p *Partitioned) Wait(ctx context.Context, id string) (jobs.Record, error) {
	return onJob(p, id, func(r *Runner) (jobs.Record, error) { return r.Wait(ctx, id) })
}

// Cancel implements jobs.Runner.
func (p *Partitioned) Cancel(ctx context.Context, id string) (jobs.Record, jobs.State, error) {
	type canceled struct {
		rec jobs.Record
		was jobs.State
	}
	c, err := onJob(p, id, func(r *Runner) (canceled, error) {
		rec, was, err := r.Cancel(ctx, id)
		return canceled{rec, was}, err
	})
	return c.rec, c.was, err
}

// Retry implements jobs.Retrier: the job runs again in its partition.
func (p *Partitioned) Retry(ctx context.Context, id string) (jobs.Record, error) {
	return onJob(p, id, func(r *Runner) (jobs.Record, error) { return r.Retry(ctx, id) })
}

// AddAfter implements jobs.ParentAdder: the job takes more parents in
// its partition, its parents read wherever they are.
func (p *Partitioned) AddAfter(ctx context.Context, id string, after ...string) (jobs.Record, error) {
	return onJob(p, id, func(r *Runner) (jobs.Record, error) { return r.AddAfter(ctx, id, after...) })
}

// Delete implements jobs.Deleter.
func (p *Partitioned) Delete(ctx context.Context, id string) (jobs.Record, error) {
	return onJob(p, id, func(r *Runner) (jobs.Record, error) { return r.Delete(ctx, id) })
}
