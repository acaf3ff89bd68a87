package jsjobs

import (
	"context"

	"github.com/crew-go/crew/jobs"
)

// StoreGroups implements jobs.StoreInspector: the jobs' stream and the
// records' bucket, as their leader's server reports them (one request
// each, within the store's timeout).
func (r *Runner) StoreGroups(ctx context.Context) ([]jobs.StoreGroup, error) {
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	var groups []jobs.StoreGroup
	for _, name := range []string{r.layout.stream, r.layout.bucketStream()} {
		s, err := r.js.Stream(ctx, name)
		if err != nil {
			return nil, storeError(err)
		}
		g := jobs.StoreGroup{Name: name}
		if c := s.CachedInfo().Cluster; c != nil {
			g.Leader = c.Leader
			for _, p := range c.Replicas {
				g.Followers = append(g.Followers, jobs.StorePeer{Name: p.Name, Current: p.Current, Offline: p.Offline, Lag: p.Lag, Seen: p.Active})
			}
		}
		groups = append(groups, g)
	}
	return groups, nil
}
