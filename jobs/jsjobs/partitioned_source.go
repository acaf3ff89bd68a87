package jsjobs

import (
	"context"
	"fmt"
	"strings"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/natsjs"
	"github.com/nats-io/nats.go/jetstream"
)

// Source makes the natsjs.Source that runs the default queue's jobs of
// every partition (and the periodic jobs' ticks, which partition 0 keeps)
// on pool, as Runner.Source does for one: each priority's lanes of all the
// partitions a group taking turns (natsjs.WithLaneGroups), each message
// handled by its partition's Runner, the journal partition 0's Config
// names.
func (p *Partitioned) Source(pool *crew.Pool, opts ...natsjs.Option) (*natsjs.Source, error) {
	return p.source(context.Background(), jobs.DefaultQueue, pool, opts)
}

// QueueSource is Source for queue q, as Runner.QueueSource.
func (p *Partitioned) QueueSource(ctx context.Context, q string, pool *crew.Pool, opts ...natsjs.Option) (*natsjs.Source, error) {
	return p.source(ctx, q, pool, opts)
}

func (p *Partitioned) source(ctx context.Context, q string, pool *crew.Pool, opts []natsjs.Option) (*natsjs.Source, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: a Source needs a pool", natsjs.ErrInvalidOption)
	}
	groups := make([][]jetstream.Consumer, len(priorities))
	byStream := make(map[string]*Runner, len(p.parts))
	var own jetstream.Consumer
	for k, r := range p.parts {
		cons := r.store.cons
		if q != jobs.DefaultQueue {
			var err error
			if cons, err = r.servedCons(ctx, q); err != nil {
				return nil, err
			}
		}
		lanes, err := r.lanes(ctx, q, cons)
		if err != nil {
			return nil, err
		}
		for i, c := range lanes {
			groups[i] = append(groups[i], c)
		}
		if k == 0 {
			own = cons
		}
		byStream[r.layout.stream] = r
		r.announcer.start()
	}
	// Each message to its partition's Runner, by the stream it came from.
	handle := func(ctx context.Context, m *natsjs.Msg) error {
		r := p.parts[0]
		if md, err := m.Raw().Metadata(); err == nil && byStream[md.Stream] != nil {
			r = byStream[md.Stream]
		}
		return r.TracedHandle()(ctx, m)
	}
	base := []natsjs.Option{natsjs.WithDoubleAck(), natsjs.WithTaskName("job"), natsjs.WithLaneGroups(groups...)}
	if journal := p.parts[0].journal; journal != "" {
		if q != jobs.DefaultQueue {
			journal += "-" + q
		}
		base = append(base, natsjs.WithConn(p.parts[0].js.Conn()), natsjs.WithJournal(journal),
			natsjs.WithRecovered(func(ctx context.Context, rc natsjs.Recovered) {
				r := p.parts[0]
				if stream, _, ok := strings.Cut(rc.Subject, "."); ok && byStream[stream] != nil {
					r = byStream[stream]
				}
				r.interrupted(ctx, rc)
			}))
	}
	return natsjs.New(pool, own, handle, append(base, opts...)...)
}
