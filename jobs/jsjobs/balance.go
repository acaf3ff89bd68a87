package jsjobs

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/crew-go/crew/jobs"
)

// Leaders kept spread (Partitioned.Balance): each partition's stream and
// bucket is a raft group; JetStream places their leaders where it likes,
// and after a server restarts the others keep what they took over, so one
// server may come to lead most of them and order most writes. Every
// balanceEvery, each group whose leader is not its target asks its leader
// to step down in favour of the target (the server's stepdown with a
// preferred peer). The target is the same on every process (group i of
// the store's 2n, in order, to the i-th of its peers sorted by name, round
// the peers), so processes balancing at once ask for the same moves and
// none undoes another's. A target offline or behind is left for the next
// round.

// balanceEvery is how often Balance looks at the leaders.
const balanceEvery = 30 * time.Second

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

// balanceOnce asks each group led elsewhere than its target to step down
// to it, and returns how many it asked.
func (p *Partitioned) balanceOnce(ctx context.Context) int {
	var groups []jobs.StoreGroup
	for _, r := range p.parts {
		g, err := r.StoreGroups(ctx)
		if err != nil {
			return 0 // a partition out: no move now
		}
		groups = append(groups, g...)
	}
	asked := 0
	for i, g := range groups {
		target, ok := targetOf(g, i)
		if !ok || target == g.Leader {
			continue
		}
		req, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": target}})
		rctx, cancel := context.WithTimeout(ctx, p.parts[0].storeTimeout)
		_, err := p.parts[0].js.Conn().RequestWithContext(rctx, apiPrefix(p.parts[0].js)+"STREAM.LEADER.STEPDOWN."+g.Name, req)
		cancel()
		if err == nil {
			asked++
		}
	}
	return asked
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
