package natsjs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Lanes: a Source over several consumers, the first taken before the
// next (WithLanes; pull.go, rule 5), or groups of them, each group before
// the next and the lanes of a group in turns (WithLaneGroups). jsjobs
// gives a queue's priorities a consumer each, and a Source of the queue
// reads them as its lanes; a partitioned store gives each priority a
// consumer on every partition's stream, a group.

// WithLanes makes the Source take messages from consumers in the order
// given, from each only when those before it have none waiting. New's
// consumer must be one of them, by name: it names the Source (Consumer,
// the metrics), and Lag counts them all. Each must be a pull consumer
// with explicit acks with New's consumer's AckWait, on any stream. A
// sweep of them costs a no-wait pull a consumer; an idle Source keeps a
// pull waiting on each.
func WithLanes(consumers ...jetstream.Consumer) Option {
	groups := make([][]jetstream.Consumer, len(consumers))
	for i, c := range consumers {
		groups[i] = []jetstream.Consumer{c}
	}
	return WithLaneGroups(groups...)
}

// WithLaneGroups is WithLanes over groups of lanes of one rank: a group is
// taken before the next, as a lane of WithLanes, and its lanes take turns
// being first, one sweep each, so that none of a group starves another.
func WithLaneGroups(groups ...[]jetstream.Consumer) Option {
	return optionFunc(func(o *options) error {
		o.lanes, o.ranks = nil, nil
		for rank, g := range groups {
			if len(g) == 0 {
				return fmt.Errorf("%w: WithLaneGroups: an empty group", ErrInvalidOption)
			}
			for _, c := range g {
				if c == nil {
					return fmt.Errorf("%w: WithLanes: nil consumer", ErrInvalidOption)
				}
				o.lanes, o.ranks = append(o.lanes, c), append(o.ranks, rank)
			}
		}
		return nil
	})
}

// checkLanes checks that every consumer of lanes can be one of the
// Source's lanes, its own among them, and makes them its lanes.
func (s *Source) checkLanes(lanes []jetstream.Consumer, ranks []int) error {
	if len(lanes) == 0 {
		return nil
	}
	own := false
	idle := max(s.o.pullExpiry, idleWatch)
	for _, c := range lanes {
		info := c.CachedInfo()
		switch {
		case info == nil:
			return fmt.Errorf("%w: consumer without info", ErrInvalidOption)
		case info.Config.AckPolicy != jetstream.AckExplicitPolicy:
			return fmt.Errorf("%w: consumer %q acks %v; a Source needs explicit acks", ErrInvalidOption, info.Name, info.Config.AckPolicy)
		case max(0, info.Config.AckWait) != max(0, s.cons.CachedInfo().Config.AckWait):
			return fmt.Errorf("%w: consumer %q's AckWait %v is not %q's", ErrInvalidOption, info.Name, info.Config.AckWait, s.consumer)
		}
		own = own || info.Name == s.consumer && info.Stream == s.stream
		if b := info.Config.MaxRequestBatch; b > 0 && (s.maxBatch == 0 || b < s.maxBatch) {
			s.maxBatch = b
		}
		if e := info.Config.MaxRequestExpires; e > 0 && e < idle {
			idle = e // the server refuses a longer pull
		}
	}
	if !own {
		return fmt.Errorf("%w: WithLanes: the lanes do not hold the Source's consumer %q", ErrInvalidOption, s.consumer)
	}
	s.lanes, s.ranks, s.idleWatch = lanes, ranks, idle
	s.watched = make([]bool, len(lanes))
	s.grouped = make([]bool, len(lanes))
	for i := range lanes {
		s.grouped[i] = i > 0 && ranks[i-1] == ranks[i] || i+1 < len(lanes) && ranks[i+1] == ranks[i]
	}
	return nil
}

// maxWatch bounds what a watch of a lane of a group of several asks for.
// Such a lane holds a share of its rank's messages (a partition's), so
// under a light load it is found drained at most sweeps and watched
// between them: a watch of one message a time costs a pull, a sweep's
// no-wait pull and its answer a message. A watch of one of them asks for
// one message beyond the credit, as any watch, plus a share of the credit
// its sweep left unused, up to maxWatch in all, and takes the messages as
// they come: a pull a few messages. The cost is to priorities: a watch's
// reserved messages are taken when they come, so with the credit running
// out at that moment, up to maxWatch-1 of them a watched lane of a group
// may start before a message of an earlier rank that waits.
const maxWatch = 4

// watchGather is the longest a watch for more than one message waits (the
// server ends it a tenth sooner).
const watchGather = time.Second

// A watch of one message (an idle lane's) waits on the server up to
// idleWatch, the server's heartbeat every idleWatchBeat saying it still
// holds it: a pull lost with a server is found within two beats. Why not
// a pull's expiry: in a cluster, the server copies each waiting pull
// through the consumer's raft group as it comes and as it goes, and a
// filtered consumer's look for its next message writes one more entry
// there (the messages it stepped over), so each renewal of an idle lane's
// watch costs three replicated writes, times every lane of every process.
// The heartbeat is sent without the raft group.
const (
	idleWatch     = 30 * time.Second
	idleWatchBeat = 2 * time.Second
)

// pullLanes is pull's decision for lanes (rule 5), with s.mu held: credit
// counts the watches' messages as not asked for. It sweeps the lanes no
// watch waits on; another sweep while one is in flight only for a credit
// of threshold or more (rule 2); with every lane watched (all empty) it
// sends nothing.
func (s *Source) pullLanes(credit, threshold int) {
	if credit <= 0 || (s.sweeps > 0 && credit < threshold) || !slices.Contains(s.watched, false) {
		return
	}
	if s.maxBatch > 0 && credit > s.maxBatch {
		credit = s.maxBatch
	}
	s.sweeps++
	s.requested += credit
	s.fetches++
	go s.sweep(credit)
}

// sweep takes up to n messages from the lanes in order (turns, in their
// groups), each only what waits now, skipping the watched ones (a message
// there goes to its watch); a lane found drained is watched from then on.
func (s *Source) sweep(n int) {
	got := 0
	var err error
	var drained []int
	for _, i := range s.turns() {
		c := s.lanes[i]
		s.mu.Lock()
		watched := s.watched[i]
		s.mu.Unlock()
		if watched {
			continue
		}
		k, e := s.take(c, n-got, nil)
		got += k
		if e != nil && !isNoMessages(e) {
			err = e
			break
		}
		if got == n {
			break
		}
		drained = append(drained, i) // gave less than asked: nothing waits there now
	}
	s.mu.Lock()
	s.requested -= n - got
	s.backlog = got == n
	s.sweeps--
	if err == nil {
		// The credit the sweep left unused, shared by the watches of
		// drained lanes of groups (maxWatch).
		grouped := 0
		for _, i := range drained {
			if s.grouped[i] {
				grouped++
			}
		}
		share := 0
		if grouped > 0 {
			share = min(maxWatch-1, (n-got)/grouped)
		}
		for _, i := range drained {
			if s.grouped[i] {
				s.watchLane(i, share)
			} else {
				s.watchLane(i, 0)
			}
		}
	}
	s.fetched(got, err)
	s.mu.Unlock()
	s.signal()
}

// turns is the order a sweep takes the lanes in: the groups in rank, the
// lanes of a group from the one whose turn it is, the turns moved on one
// each sweep.
func (s *Source) turns() []int {
	s.mu.Lock()
	turn := s.turn
	s.turn++
	s.mu.Unlock()
	order := make([]int, 0, len(s.lanes))
	for start := 0; start < len(s.lanes); {
		end := start + 1
		for end < len(s.lanes) && s.ranks[end] == s.ranks[start] {
			end++
		}
		for k := range end - start {
			order = append(order, start+(turn+k)%(end-start))
		}
		start = end
	}
	return order
}

// watchLane sends lane i, unless it has one or the Source stops, a pull
// that waits on the server for one message beyond the credit and extra
// more within it (maxWatch): a lane found empty is not asked again at
// every sweep. Called with s.mu held.
func (s *Source) watchLane(i, extra int) {
	if s.watched[i] || s.stopping {
		return
	}
	s.watched[i] = true
	s.watching++
	s.requested += 1 + extra
	s.fetches++
	go s.watch(i, s.lanes[i], 1+extra)
}

// watch waits on the server for up to n messages of lane i, each taken as
// it comes, and the lane swept again once the watch ends with any; none
// within the pull's wait, the lane is watched again, still empty, for one.
// A watch for more than one waits at most watchGather: the credit it
// holds is back within that (maxWatch). A watch for one waits
// s.idleWatch, with heartbeats (idleWatch).
func (s *Source) watch(i int, c jetstream.Consumer, n int) {
	parent, wait, opts := s.idleCtx, s.idleWatch, []jetstream.FetchOpt(nil)
	if n > 1 {
		parent, wait = s.fetchCtx, min(s.o.pullExpiry, watchGather)
	}
	if wait >= 2*idleWatchBeat+time.Second {
		opts = append(opts, jetstream.FetchHeartbeat(idleWatchBeat))
	}
	ctx, cancel := context.WithTimeout(parent, wait)
	defer cancel()
	got, err := s.take(c, n, ctx, opts...)
	s.mu.Lock()
	s.requested -= n - got
	s.watching--
	s.watched[i] = false
	s.fetched(got, err)
	if got == 0 && isExpiry(err) {
		s.watchLane(i, 0)
	}
	s.mu.Unlock()
	s.signal()
}

// isNoMessages tells a no-wait pull that found nothing.
func isNoMessages(err error) bool {
	return errors.Is(err, jetstream.ErrNoMessages)
}

// isExpiry tells a waiting pull that ran out its wait with nothing.
func isExpiry(err error) bool {
	return err == nil || errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages)
}
