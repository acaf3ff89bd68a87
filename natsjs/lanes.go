package natsjs

import (
	"context"
	"errors"
	"fmt"
	"slices"

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
	}
	if !own {
		return fmt.Errorf("%w: WithLanes: the lanes do not hold the Source's consumer %q", ErrInvalidOption, s.consumer)
	}
	s.lanes, s.ranks = lanes, ranks
	s.watched = make([]bool, len(lanes))
	return nil
}

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
		for _, i := range drained {
			s.watchLane(i)
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
// of one message that waits on the server: a lane found empty is not
// asked again at every sweep. Called with s.mu held.
func (s *Source) watchLane(i int) {
	if s.watched[i] || s.stopping {
		return
	}
	s.watched[i] = true
	s.watching++
	s.requested++
	s.fetches++
	go s.watch(i, s.lanes[i])
}

// watch waits on the server for one message of lane i: it is taken at
// once, and the lane swept again; none within the pull's wait, the lane is
// watched again, still empty.
func (s *Source) watch(i int, c jetstream.Consumer) {
	ctx, cancel := context.WithTimeout(s.fetchCtx, s.o.pullExpiry)
	defer cancel()
	got, err := s.take(c, 1, ctx)
	s.mu.Lock()
	s.requested -= 1 - got
	s.watching--
	s.watched[i] = false
	s.fetched(got, err)
	if got == 0 && isExpiry(err) {
		s.watchLane(i)
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
