package natsjs

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Lanes: a Source over several consumers of one stream, the first taken
// before the next (WithLowerPriority; pull.go, rule 5). jsjobs gives a
// queue's priorities a consumer each, and a Source of the queue reads them
// as its lanes.

// WithLowerPriority adds consumers that the Source takes messages from
// only when those before them have none waiting: New's consumer first,
// then these in the order given. Each must be a pull consumer with
// explicit acks on New's consumer's stream with its AckWait. A sweep of
// them costs a no-wait pull a consumer; an idle Source keeps a pull
// waiting on each.
func WithLowerPriority(consumers ...jetstream.Consumer) Option {
	return optionFunc(func(o *options) error {
		for _, c := range consumers {
			if c == nil {
				return fmt.Errorf("%w: WithLowerPriority: nil consumer", ErrInvalidOption)
			}
		}
		o.lower = append(o.lower, consumers...)
		return nil
	})
}

// checkLanes checks that every lower consumer can be one of the Source's
// lanes, and makes them its lanes after its own consumer.
func (s *Source) checkLanes(lower []jetstream.Consumer) error {
	if len(lower) == 0 {
		return nil
	}
	s.lanes = append([]jetstream.Consumer{s.cons}, lower...)
	s.watched = make([]bool, len(s.lanes))
	for _, c := range lower {
		info := c.CachedInfo()
		switch {
		case info == nil:
			return fmt.Errorf("%w: consumer without info", ErrInvalidOption)
		case info.Stream != s.stream:
			return fmt.Errorf("%w: consumer %q is on stream %q, not %q", ErrInvalidOption, info.Name, info.Stream, s.stream)
		case info.Config.AckPolicy != jetstream.AckExplicitPolicy:
			return fmt.Errorf("%w: consumer %q acks %v; a Source needs explicit acks", ErrInvalidOption, info.Name, info.Config.AckPolicy)
		case max(0, info.Config.AckWait) != max(0, s.cons.CachedInfo().Config.AckWait):
			return fmt.Errorf("%w: consumer %q's AckWait %v is not %q's", ErrInvalidOption, info.Name, info.Config.AckWait, s.consumer)
		}
		if b := info.Config.MaxRequestBatch; b > 0 && (s.maxBatch == 0 || b < s.maxBatch) {
			s.maxBatch = b
		}
	}
	return nil
}

// pullLanes is pull's decision for lanes (rule 5), with s.mu held: credit
// counts the watches' messages as not asked for.
func (s *Source) pullLanes(credit int) {
	switch {
	case s.sweeping, credit <= 0:
		return
	case s.idle && !s.woken:
		// The last sweep found nothing and no watch has brought a message
		// since: watch the lanes no watch waits on, and nothing else.
		s.watch()
		return
	}
	if s.maxBatch > 0 && credit > s.maxBatch {
		credit = s.maxBatch
	}
	s.woken, s.idle, s.sweeping = false, false, true
	s.requested += credit
	s.fetches++
	go s.sweep(credit)
}

// sweep takes up to n messages from the lanes in order, each only what
// waits now, and watches every lane if it found none.
func (s *Source) sweep(n int) {
	got := 0
	var err error
	for _, c := range s.lanes {
		var k int
		k, err = s.take(c, n-got, nil)
		got += k
		if (err != nil && !isNoMessages(err)) || got == n {
			break
		}
		err = nil
	}
	s.mu.Lock()
	s.requested -= n - got
	s.backlog = got == n
	s.sweeping = false
	if got == 0 && err == nil && !s.stopping {
		s.idle = true
		s.watch()
	}
	s.fetched(got, err)
	s.mu.Unlock()
	s.signal()
}

// watch sends a pull of one message, waiting on the server, to each lane
// without one. Called with s.mu held.
func (s *Source) watch() {
	for i, c := range s.lanes {
		if s.watched[i] || s.stopping {
			continue
		}
		s.watched[i] = true
		s.watching++
		s.requested++
		s.fetches++
		go s.watchLane(i, c)
	}
}

// watchLane waits on the server for one message of lane i.
func (s *Source) watchLane(i int, c jetstream.Consumer) {
	ctx, cancel := context.WithTimeout(s.fetchCtx, s.o.pullExpiry)
	defer cancel()
	got, err := s.take(c, 1, ctx)
	s.mu.Lock()
	s.requested -= 1 - got
	s.watching--
	s.watched[i] = false
	if got > 0 {
		s.woken = true
	}
	s.fetched(got, err)
	s.mu.Unlock()
	s.signal()
}

// isNoMessages tells a no-wait pull that found nothing.
func isNoMessages(err error) bool {
	return errors.Is(err, jetstream.ErrNoMessages)
}
