package jsjobs

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/crew-go/crew/jobs"
)

// Leaders kept spread (Partitioned.Balance): each partition's stream,
// bucket and default lane (the consumer its default queue's jobs go
// through) is a raft group; JetStream places their leaders where it likes,
// and after a server restarts the others keep what they took over, so one
// server may come to lead most of them and order most writes. Every
// balanceEvery, each group whose leader is not its target asks its leader
// to step down in favour of the target (the server's stepdown with a
// preferred peer). The target is the same on every process (group i of
// the store's 3n, the streams and buckets in order and then the lanes, to
// the i-th of its peers sorted by name, round the peers), so processes
// balancing at once ask for the same moves and none undoes another's. A
// target offline or behind is left for the next round.

// balanceEvery is how often Balance looks at the leaders.
const balanceEvery = 10 * time.Second

// Balance keeps the partitions' leaders spread over their servers until
// ctx ends (see above).
func (p *Partitioned) Balance(ctx context.Context) {
	t := time.NewTicker(balanceEvery)
	defer t.Stop()
	for {
		p.balanceOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// balanceOnce notes the server leading each partition's stream (for
// Submit's failover: leave), asks each group led elsewhere than its
// target to step down to it, and returns how many it asked.
func (p *Partitioned) balanceOnce(ctx context.Context) int {
	var groups []jobs.StoreGroup
	out := false
	for k, r := range p.parts {
		g, err := r.StoreGroups(ctx)
		if err != nil {
			out = true // a partition out: no move now
			continue
		}
		p.mu.Lock()
		p.leaders[k] = g[0].Leader // its stream's: what a submit waits for
		p.mu.Unlock()
		groups = append(groups, g...)
	}
	if out {
		return 0
	}
	// Then each partition's default lane, the consumer every job of the
	// default queue and priority is delivered and acked through: JetStream
	// elects its leader where it likes, often on a server already leading
	// another partition's, which then orders more than its share.
	subjects := make([]string, 0, len(groups)+len(p.parts))
	for _, g := range groups {
		subjects = append(subjects, "STREAM.LEADER.STEPDOWN."+g.Name)
	}
	for _, r := range p.parts {
		g, err := r.laneGroup(ctx)
		if err != nil {
			continue // that one waits for the next round
		}
		groups = append(groups, g)
		subjects = append(subjects, "CONSUMER.LEADER.STEPDOWN."+r.layout.stream+"."+g.Name)
	}
	asked := 0
	for i, g := range groups {
		target, ok := targetOf(g, i)
		if !ok || target == g.Leader {
			continue
		}
		req, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": target}})
		rctx, cancel := context.WithTimeout(ctx, p.parts[0].storeTimeout)
		_, err := p.parts[0].js.Conn().RequestWithContext(rctx, apiPrefix(p.parts[0].js)+subjects[i], req)
		cancel()
		if err == nil {
			asked++
		}
	}
	return asked
}

// laneGroup is the raft group of r's default lane (its default queue's
// consumer): its leader and followers, named by the consumer.
func (r *Runner) laneGroup(ctx context.Context) (jobs.StoreGroup, error) {
	info, err := r.consInfo(ctx, r.store.cons)
	if err != nil {
		return jobs.StoreGroup{}, err
	}
	g := jobs.StoreGroup{Name: info.Name}
	if c := info.Cluster; c != nil {
		g.Leader = c.Leader
		for _, p := range c.Replicas {
			g.Followers = append(g.Followers, jobs.StorePeer{Name: p.Name, Current: p.Current, Offline: p.Offline, Lag: p.Lag, Seen: p.Active})
		}
	}
	return g, nil
}

// targetOf is the server that should lead group g, the i-th of the
// store's groups: the i-th of its peers by name, round them; false when
// the group has no leader, one peer, or its target is offline or behind.
func targetOf(g jobs.StoreGroup, i int) (string, bool) {
	if g.Leader == "" || len(g.Followers) == 0 {
		return "", false
	}
	peers := []string{g.Leader}
	current := map[string]bool{g.Leader: true}
	for _, f := range g.Followers {
		peers = append(peers, f.Name)
		current[f.Name] = f.Current && !f.Offline
	}
	slices.Sort(peers)
	target := peers[i%len(peers)]
	return target, current[target]
}
