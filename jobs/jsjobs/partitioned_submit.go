package jsjobs

import (
	"context"
	"errors"
	"hash/fnv"
	"time"

	"github.com/crew-go/crew/jobs"
)

var (
	_ jobs.KeyedRunner = (*Partitioned)(nil)
	_ jobs.Retrier     = (*Partitioned)(nil)
	_ jobs.Deleter     = (*Partitioned)(nil)
)

// Submit implements jobs.Runner: the job goes to the partitions in turn,
// leaving one that does not answer within Failover, or fails for want of
// its store, for the next (see Partitioned). Each partition's stream is
// tried whatever its store's health says: the health counts the bucket
// too, which a submit does not write, and a server leading every bucket
// cut off would otherwise refuse every submit at once. A refusal of the
// job itself (an *InvalidError, a queue that does not exist) is answered
// at once.
func (p *Partitioned) Submit(ctx context.Context, spec jobs.Spec) (jobs.Record, error) {
	n := len(p.parts)
	first := int(p.turn.Add(1) % uint64(n))
	order := p.submitOrder(first, time.Now())
	var err error
	for _, k := range order {
		sctx, cancel := context.WithTimeout(ctx, p.Failover)
		var rec jobs.Record
		rec, err = p.parts[k].submit(sctx, spec, p.parts[k].streamReachable)
		cancel()
		switch {
		case err == nil:
			return rec, nil
		case ctx.Err() != nil:
			return jobs.Record{}, ctx.Err()
		case !leftForAnother(err):
			return jobs.Record{}, err
		}
		p.mu.Lock()
		p.failedAt[k] = time.Now()
		p.mu.Unlock()
	}
	return jobs.Record{}, err
}

// submitOrder is the partitions a submit tries, from first on: those not
// left by a submit within partitionCooldown, then those.
func (p *Partitioned) submitOrder(first int, now time.Time) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.parts)
	order := make([]int, 0, n)
	var cooling []int
	for i := range n {
		k := (first + i) % n
		if !p.failedAt[k].IsZero() && now.Sub(p.failedAt[k]) < partitionCooldown {
			cooling = append(cooling, k)
			continue
		}
		order = append(order, k)
	}
	return append(order, cooling...)
}

// leftForAnother reports whether a partition's submit error is its
// store's (unavailable, or no answer within Failover), which another
// partition may not share.
func leftForAnother(err error) bool {
	return errors.Is(err, jobs.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

// SubmitOnce implements jobs.KeyedRunner in the partition key hashes to:
// its claim and its job there, so that the key stays one job however
// many partitions there are (see Partitioned).
func (p *Partitioned) SubmitOnce(ctx context.Context, spec jobs.Spec, key string) (jobs.Record, bool, error) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return p.parts[int(h.Sum32()%uint32(len(p.parts)))].SubmitOnce(ctx, spec, key)
}
