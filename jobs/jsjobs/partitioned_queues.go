package jsjobs

import (
	"cmp"
	"context"
	"time"

	"github.com/crew-go/crew/jobs"
)

var (
	_ jobs.Queuer    = (*Partitioned)(nil)
	_ jobs.Scheduler = (*Partitioned)(nil)
)

// A queue of a Partitioned store is a queue of each partition (its
// lanes there); what holds for it across every process:
//   - Its Limit is shared out: each partition's lanes get ceil(Limit/n),
//     so the queue runs at most n×ceil(Limit/n), Limit when n divides it,
//     and its jobs spread over the partitions as they are submitted. A
//     queue that must run one job at a time wants a store of one
//     partition (or Limit a multiple of n).
//   - Its Rate is shared out likewise: each partition starts at most
//     Rate a Per×n, so the queue at most Rate a Per in all.
//   - A pause or a resume is each partition's.
//   - Its counts (Queues) are the partitions' summed, its oldest waiting
//     job the oldest of theirs.

// Queues implements jobs.Queuer: each queue's partitions summed, the
// default first.
func (p *Partitioned) Queues(ctx context.Context) ([]jobs.QueueInfo, error) {
	var out []jobs.QueueInfo
	at := map[string]int{}
	for k, r := range p.parts {
		qs, err := r.Queues(ctx)
		if err != nil {
			return nil, err
		}
		for _, q := range qs {
			i, ok := at[q.Name]
			if !ok {
				at[q.Name] = len(out)
				if k == 0 {
					q.Limit, q.Rate, q.Per = p.whole(q.Queue)
				}
				out = append(out, q)
				continue
			}
			o := &out[i]
			o.Waiting += q.Waiting
			o.Taken += q.Taken
			o.Paused = o.Paused || q.Paused
			if !q.OldestWaiting.IsZero() && (o.OldestWaiting.IsZero() || q.OldestWaiting.Before(o.OldestWaiting)) {
				o.OldestWaiting = q.OldestWaiting
			}
		}
	}
	return out, nil
}

// whole is a queue's Limit and Rate in all, from a partition's share: the
// Limit the partitions' shares add up to.
func (p *Partitioned) whole(q jobs.Queue) (limit, rate int, per jobs.Duration) {
	n := len(p.parts)
	limit = q.Limit * n
	if q.Rate > 0 {
		return limit, q.Rate, q.Per / jobs.Duration(n)
	}
	return limit, 0, 0
}

// SetQueue implements jobs.Queuer: each partition gets its share of q's
// Limit and Rate (above).
func (p *Partitioned) SetQueue(ctx context.Context, q jobs.Queue) error {
	if err := q.Validate(); err != nil {
		return err
	}
	n := len(p.parts)
	share := q
	share.Limit = (q.Limit + n - 1) / n
	if q.Rate > 0 {
		share.Per = jobs.Duration(cmp.Or(time.Duration(q.Per), time.Second) * time.Duration(n))
	}
	for _, r := range p.parts {
		if err := r.SetQueue(ctx, share); err != nil {
			return err
		}
	}
	return nil
}

// PauseQueue implements jobs.Queuer: every partition's lanes of queue q.
func (p *Partitioned) PauseQueue(ctx context.Context, q string, until time.Time) error {
	for _, r := range p.parts {
		if err := r.PauseQueue(ctx, q, until); err != nil {
			return err
		}
	}
	return nil
}

// ResumeQueue implements jobs.Queuer.
func (p *Partitioned) ResumeQueue(ctx context.Context, q string) error {
	for _, r := range p.parts {
		if err := r.ResumeQueue(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// SetPeriodic implements jobs.Scheduler: periodic jobs are partition 0's
// (its stream ticks them; each tick's job goes there).
func (p *Partitioned) SetPeriodic(ctx context.Context, pe jobs.Periodic) (bool, error) {
	return p.parts[0].SetPeriodic(ctx, pe)
}

// DeletePeriodic implements jobs.Scheduler.
func (p *Partitioned) DeletePeriodic(ctx context.Context, name string) error {
	return p.parts[0].DeletePeriodic(ctx, name)
}

// Periodics implements jobs.Scheduler.
func (p *Partitioned) Periodics(ctx context.Context) ([]jobs.Periodic, error) {
	return p.parts[0].Periodics(ctx)
}
