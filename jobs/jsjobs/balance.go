package jsjobs

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crew-go/crew/jobs"
)

// Leaders kept spread (Partitioned.Balance): each partition's stream,
// bucket and lanes (the consumers its queues' jobs go through, one a queue
// and priority) is a raft group; JetStream places their leaders where it
// likes, and after a server restarts the others keep what they took over,
// so one server may come to lead most of them and order most writes.
// Every balanceEvery, each group whose leader is not its target asks its
// leader to step down in favour of the target (the server's stepdown with
// a preferred peer). The target is the same on every process (group i of
// the store's, the streams and buckets in order and then the lanes, by
// name and partition, as the servers list them, to the i-th of its peers
// sorted by name, round the peers), so processes balancing at once ask for the
// same moves and none undoes another's. A target offline or behind is
// left for the next round.

// balanceEvery is how often Balance moves leaders, and leadersEvery how
// often, besides, it notes which server leads each partition's stream, for
// Submit's failover (leave): a server cut off after it took over a second
// partition's stream since the last look costs a submit two Failovers.
// The notes have a loop of their own, each partition read at once within
// leadersWait, so that a round of moves waiting on a server cut off (each
// stepdown up to the store's timeout) holds no note back.
const (
	balanceEvery = 10 * time.Second
	leadersEvery = 2 * time.Second
	leadersWait  = time.Second
)

// Balance keeps the partitions' leaders spread over their servers until
// ctx ends (see above).
func (p *Partitioned) Balance(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { every(ctx, leadersEvery, func() { p.noteLeaders(ctx) }) })
	every(ctx, balanceEvery, func() { p.balanceOnce(ctx) })
}

// every runs fn at once and then every d until ctx ends.
func every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		fn()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// noteLeaders notes the server leading each partition's stream, the
// partitions read at once, and returns every partition's groups in order
// (ok false when a partition's could not be read within leadersWait).
func (p *Partitioned) noteLeaders(ctx context.Context) (groups []jobs.StoreGroup, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, leadersWait)
	defer cancel()
	read := make([][]jobs.StoreGroup, len(p.parts))
	var wg sync.WaitGroup
	for k, r := range p.parts {
		wg.Go(func() { read[k], _ = r.StoreGroups(ctx) })
	}
	wg.Wait()
	ok = true
	for k, g := range read {
		if len(g) == 0 {
			ok = false // a partition out
			continue
		}
		p.mu.Lock()
		p.leaders[k] = g[0].Leader // its stream's: what a submit waits for
		p.mu.Unlock()
		groups = append(groups, g...)
	}
	return groups, ok
}

// balanceOnce notes the server leading each partition's stream (for
// Submit's failover: leave), asks each group led elsewhere than its
// target to step down to it, and returns how many it asked.
func (p *Partitioned) balanceOnce(ctx context.Context) int {
	groups, ok := p.noteLeaders(ctx)
	if !ok {
		return 0 // a partition out: no move now
	}
	// Then the partitions' lanes, the consumers every job of a queue and
	// priority is delivered and acked through: JetStream elects their
	// leaders where it likes, often on a server already leading another
	// partition's, which then orders more than its share. They go by name,
	// then partition, so that one lane's groups in the partitions (the
	// default queue's, which carries most jobs, among them) have targets in
	// turn, whatever the number of lanes a partition: taken partition by
	// partition, a number of lanes that is a multiple of the servers would
	// give every partition's default lane the same target.
	subjects := make([]string, 0, len(groups))
	for _, g := range groups {
		subjects = append(subjects, "STREAM.LEADER.STEPDOWN."+g.Name)
	}
	type lane struct {
		k int
		g jobs.StoreGroup
	}
	var lanes []lane
	for k, r := range p.parts {
		gs, err := r.laneGroups(ctx)
		if err != nil {
			return 0 // the lanes' order unknown: no move now
		}
		for _, g := range gs {
			lanes = append(lanes, lane{k, g})
		}
	}
	slices.SortFunc(lanes, func(a, b lane) int { return cmp.Or(strings.Compare(a.g.Name, b.g.Name), a.k-b.k) })
	for _, l := range lanes {
		groups = append(groups, l.g)
		subjects = append(subjects, "CONSUMER.LEADER.STEPDOWN."+p.parts[l.k].layout.stream+"."+l.g.Name)
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

// laneGroups are the raft groups of r's lanes (its queues' consumers, a
// priority each), by the consumer's name: each one's leader and
// followers, read in one listing of the stream's consumers.
func (r *Runner) laneGroups(ctx context.Context) ([]jobs.StoreGroup, error) {
	ctx, cancel := context.WithTimeout(ctx, r.storeTimeout)
	defer cancel()
	def := r.store.consumer()
	list := r.store.jobs.ListConsumers(ctx)
	var out []jobs.StoreGroup
	for info := range list.Info() {
		if _, _, ok := laneOf(def, info.Name); !ok {
			continue
		}
		g := jobs.StoreGroup{Name: info.Name}
		if c := info.Cluster; c != nil {
			g.Leader = c.Leader
			for _, p := range c.Replicas {
				g.Followers = append(g.Followers, jobs.StorePeer{Name: p.Name, Current: p.Current, Offline: p.Offline, Lag: p.Lag, Seen: p.Active})
			}
		}
		out = append(out, g)
	}
	if err := list.Err(); err != nil {
		return nil, storeError(err)
	}
	slices.SortFunc(out, func(a, b jobs.StoreGroup) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
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
