package jsjobs

import (
	"context"
	"slices"

	"github.com/crew-go/crew/jobs"
)

var (
	_ jobs.Lister     = (*Partitioned)(nil)
	_ jobs.EndCounter = (*Partitioned)(nil)
)

// List implements jobs.Lister over every partition: each partition's page
// below the cursor from its index, merged newest first (every index
// orders its jobs by their latest change and id, so one cursor serves
// them all), the first Limit read.
func (p *Partitioned) List(ctx context.Context, q jobs.Query) (jobs.Page, error) {
	after, err := listQuery(&q)
	if err != nil {
		return jobs.Page{}, err
	}
	type mine struct {
		f    found
		part int
	}
	var all []mine
	more := false
	for k, r := range p.parts {
		ids, next, err := r.pageIDs(ctx, q, after)
		if err != nil {
			return jobs.Page{}, err
		}
		more = more || next != ""
		for _, f := range ids {
			all = append(all, mine{f, k})
		}
	}
	slices.SortFunc(all, func(a, b mine) int { // newest first
		switch {
		case b.f.it.before(a.f.it):
			return -1
		case a.f.it.before(b.f.it):
			return 1
		}
		return 0
	})
	if len(all) > q.Limit {
		all, more = all[:q.Limit], true
	}
	next := ""
	if more && len(all) > 0 {
		next = cursor(all[len(all)-1].f.it)
	}
	// Each partition reads its own jobs' records; the page keeps the
	// merged order.
	byPart := make([][]found, len(p.parts))
	for _, m := range all {
		byPart[m.part] = append(byPart[m.part], m.f)
	}
	read := make([][]jobs.Record, len(p.parts))
	for k, ids := range byPart {
		if len(ids) == 0 {
			continue
		}
		if read[k], err = p.parts[k].read(ctx, ids); err != nil {
			return jobs.Page{}, err
		}
	}
	recs := make([]jobs.Record, 0, len(all))
	taken := make([]int, len(p.parts))
	for _, m := range all {
		recs = append(recs, read[m.part][taken[m.part]])
		taken[m.part]++
	}
	return jobs.Page{Jobs: stillIn(recs, q.State), Next: next}, nil
}

// Counts implements jobs.Lister: every partition's counts summed.
func (p *Partitioned) Counts(ctx context.Context) (jobs.Counts, error) {
	sum := jobs.Counts{}
	for _, r := range p.parts {
		c, err := r.Counts(ctx)
		if err != nil {
			return nil, err
		}
		for st, n := range c {
			sum[st] += n
		}
	}
	return sum, nil
}

// EndsPerMinute implements jobs.EndCounter: every partition's summed by
// minute.
func (p *Partitioned) EndsPerMinute(ctx context.Context, minutes int) ([]jobs.Ends, error) {
	var sum []jobs.Ends
	for _, r := range p.parts {
		ends, err := r.EndsPerMinute(ctx, minutes)
		if err != nil {
			return nil, err
		}
		if sum == nil {
			sum = ends
			continue
		}
		at := make(map[int64]int, len(sum)) // a minute's place: the partitions may have read the clock on either side of one
		for i, e := range sum {
			at[e.Minute.Unix()] = i
		}
		for _, e := range ends {
			if i, ok := at[e.Minute.Unix()]; ok {
				for st, n := range e.Counts {
					sum[i].Counts[st] += n
				}
			}
		}
	}
	return sum, nil
}
