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
	if err := p.parts[0].parentsKnown(ctx, spec.WaitsFor()); err != nil {
		return jobs.Record{}, err
	}
	n := len(p.parts)
	first := int(p.turn.Add(1) % uint64(n))
	order := make([]int, n)
	for i := range order {
		order[i] = (first + i) % n
	}
	order = p.cooledLast(order, time.Now())
	var err error
	for len(order) > 0 {
		k := order[0]
		order = order[1:]
		sctx, cancel := context.WithTimeout(ctx, p.Failover)
		var rec jobs.Record
		rec, err = p.parts[k].submit(sctx, spec, p.parts[k].streamReachable)
		cancel()
		switch {
		case err == nil:
			p.metrics.stored[k].Add(1)
			p.storedAt[k].Store(time.Now().UnixNano())
			return rec, nil
		case ctx.Err() != nil:
			return jobs.Record{}, ctx.Err()
		case !leftForAnother(err):
			return jobs.Record{}, err
		}
		p.metrics.left[k].Add(1)
		p.leave(k, time.Now(), p.Failover)
		order = p.cooledLast(order, time.Now())
	}
	return jobs.Record{}, err
}

// leave notes that a submit left partition k for another after waiting
// failover: k, every partition whose stream the same server led when
// Balance last looked (leaders; most likely out with it), and, when some
// partition stored a submit since the one left began (submits go on
// meanwhile: a sign of life is to be had), every partition that stored
// none (out with it, whatever the leaders say, which may be a moment old),
// are skipped by submits for partitionCooldown, tried only when no other
// is left. A server cut off while it leads two partitions' streams
// (after a fault, before Balance spread them again) then costs a submit
// one Failover, not two.
func (p *Partitioned) leave(k int, now time.Time, failover time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failedAt[k] = now
	since := now.Add(-failover).UnixNano()
	alive := false
	for j := range p.storedAt {
		alive = alive || p.storedAt[j].Load() >= since
	}
	if alive {
		for j := range p.storedAt {
			if p.storedAt[j].Load() < since {
				p.failedAt[j] = now
			}
		}
	}
	if l := p.leaders[k]; l != "" {
		for j, lj := range p.leaders {
			if lj == l {
				p.failedAt[j] = now
			}
		}
	}
}

// cooledLast is order with the partitions left by a submit within
// partitionCooldown moved to its end, each part in its order.
func (p *Partitioned) cooledLast(order []int, now time.Time) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]int, 0, len(order))
	var cooling []int
	for _, k := range order {
		if !p.failedAt[k].IsZero() && now.Sub(p.failedAt[k]) < partitionCooldown {
			cooling = append(cooling, k)
			continue
		}
		out = append(out, k)
	}
	return append(out, cooling...)
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
