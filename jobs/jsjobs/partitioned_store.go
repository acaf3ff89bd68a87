package jsjobs

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/prometheus/client_golang/prometheus"
)

var (
	_ jobs.ReplicaLister  = (*Partitioned)(nil)
	_ jobs.StoreInspector = (*Partitioned)(nil)
)

// Replicas implements jobs.ReplicaLister: each process announces what it
// runs in each partition it serves; a replica is their sum.
func (p *Partitioned) Replicas(ctx context.Context) ([]jobs.Replica, error) {
	byName := map[string]*jobs.Replica{}
	for _, r := range p.parts {
		reps, err := r.Replicas(ctx)
		if err != nil {
			return nil, err
		}
		for _, rep := range reps {
			have, ok := byName[rep.Name]
			if !ok {
				byName[rep.Name] = &rep
				continue
			}
			have.Running += rep.Running
			have.Jobs = append(have.Jobs, rep.Jobs...)
			if rep.Seen.After(have.Seen) {
				have.Seen = rep.Seen
			}
			if rep.Started.Before(have.Started) {
				have.Started = rep.Started
			}
		}
	}
	out := make([]jobs.Replica, 0, len(byName))
	for _, rep := range byName {
		slices.SortFunc(rep.Jobs, func(a, b jobs.RunningJob) int { return a.Since.Compare(b.Since) })
		rep.Jobs = rep.Jobs[:min(len(rep.Jobs), jobs.MaxReplicaJobs)]
		out = append(out, *rep)
	}
	slices.SortFunc(out, func(a, b jobs.Replica) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// StoreGroups implements jobs.StoreInspector: every partition's stream
// and bucket.
func (p *Partitioned) StoreGroups(ctx context.Context) ([]jobs.StoreGroup, error) {
	var out []jobs.StoreGroup
	for _, r := range p.parts {
		g, err := r.StoreGroups(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, g...)
	}
	return out, nil
}

// WatchStore probes every partition until ctx ends (Runner.WatchStore).
func (p *Partitioned) WatchStore(ctx context.Context) {
	var wg sync.WaitGroup
	for _, r := range p.parts {
		wg.Go(func() { r.WatchStore(ctx) })
	}
	wg.Wait()
}

// StoreDown says since when every partition has been out, and why: the
// store takes jobs while any partition does (a submit goes to another).
// The zero time and nil while one is available.
func (p *Partitioned) StoreDown() (time.Time, error) {
	var since time.Time
	var errs []error
	for _, r := range p.parts {
		s, err := r.StoreDown()
		if err == nil {
			return time.Time{}, nil
		}
		if s.After(since) {
			since = s
		}
		errs = append(errs, err)
	}
	return since, errors.Join(errs...)
}

// Outcomes are the counts of every partition's runs (they share their
// instruments).
func (p *Partitioned) Outcomes() Outcomes { return p.parts[0].Outcomes() }

// Collector exports what Runner.Collector does for the whole store: the
// partitions' runs (their shared instruments), the store up while every
// partition is, the hand-backs and reads summed, the queues as Queues reads them;
// and each partition's own (partitionMetrics).
func (p *Partitioned) Collector() prometheus.Collector {
	return partitionCollector{collector{p.parts[0].instruments, func() storeStats {
		all := p.parts[0].stats() // the reads: the partitions share their hedging
		for _, r := range p.parts[1:] {
			s := r.stats()
			all.up = all.up && s.up
			all.handbacks += s.handbacks
		}
		return all
	}, p.Queues}, p.parts, p.metrics}
}
