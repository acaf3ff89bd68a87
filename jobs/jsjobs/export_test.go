package jsjobs

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/natsjs"
	"github.com/nats-io/nats.go/jetstream"
)

// HandleDelivery runs Handle's logic on a delivery made up by a test.
func (r *Runner) HandleDelivery(ctx context.Context, subject string, data []byte) error {
	return settled(ctx, r.handle(ctx, delivery{subject: subject, data: data, published: time.Now()}))
}

// settled is what a Source settles a delivery on: the handler's return, or
// what it left with natsjs.Then, run here.
func settled(ctx context.Context, err error) error {
	if fn, ok := natsjs.ThenFunc(err); ok {
		return fn(ctx)
	}
	return err
}

// HandleProbe records a probe's outcome, as WatchStore does.
func (r *Runner) HandleProbe(err error) { r.health.probed(err) }

// HandleFirstDelivery runs Handle's logic on a first delivery made up by a
// test: the run starts while its start is recorded.
func (r *Runner) HandleFirstDelivery(ctx context.Context, subject string, data []byte) error {
	return settled(ctx, r.handle(ctx, delivery{subject: subject, data: data, published: time.Now(), attempt: 1}))
}

// Revision reads the revision of job id's record.
func (r *Runner) Revision(ctx context.Context, id string) (uint64, error) {
	_, rev, err := r.store.load(ctx, id)
	return rev, err
}

// HandleRetryDelivery runs Handle's logic on a delivery (the first if
// first) of a Retry's message of job id, naming record revision retryOf.
func (r *Runner) HandleRetryDelivery(ctx context.Context, id string, retryOf uint64, spec *jobs.Spec, first bool) error {
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return settled(ctx, r.handle(ctx, delivery{subject: r.layout.job(id), data: data, published: time.Now(), attempt: map[bool]int{true: 1, false: 2}[first], retryOf: retryOf}))
}

// OnRecordMissing has fn run after each read of a record that finds none,
// before the reader goes on: a test makes a job move on between a Get's
// reads. The reads are then sent once each, not hedged: a read is not
// sent again past fn.
func (r *Runner) OnRecordMissing(fn func(id string)) {
	r.reads.once = true
	r.store.kv = missingRecord{KeyValue: r.store.kv, fn: fn}
}

type missingRecord struct {
	jetstream.KeyValue
	fn func(id string)
}

func (m missingRecord) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	e, err := m.KeyValue.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		m.fn(key)
	}
	return e, err
}

// OnMessageMissing has fn run after each read of a job's message that
// finds none, before the reader goes on, the reads not hedged
// (OnRecordMissing).
func (r *Runner) OnMessageMissing(fn func(id string)) {
	r.reads.once = true
	r.store.jobs = missingMessage{Stream: r.store.jobs, fn: fn, prefix: r.layout.job("")}
}

type missingMessage struct {
	jetstream.Stream
	fn     func(id string)
	prefix string
}

func (m missingMessage) GetLastMsgForSubject(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	msg, err := m.Stream.GetLastMsgForSubject(ctx, subject)
	if id, ok := strings.CutPrefix(subject, m.prefix); ok && errors.Is(err, jetstream.ErrMsgNotFound) {
		m.fn(id)
	}
	return msg, err
}

// BehindItsLeader makes every direct read of the stream and the bucket
// find nothing, as a replica that has not yet applied what its leader
// stored: only the leaders' reads find the jobs.
func (r *Runner) BehindItsLeader() {
	r.store.kv = behindKV{KeyValue: r.store.kv}
	r.store.jobs = behindStream{Stream: r.store.jobs}
}

type behindKV struct{ jetstream.KeyValue }

func (behindKV) Get(context.Context, string) (jetstream.KeyValueEntry, error) {
	return nil, jetstream.ErrKeyNotFound
}

type behindStream struct{ jetstream.Stream }

func (behindStream) GetLastMsgForSubject(context.Context, string) (*jetstream.RawStreamMsg, error) {
	return nil, jetstream.ErrMsgNotFound
}

// StaleRecords makes every direct read of a record answer the entry it
// had when StaleRecords was called (as a replica that has applied nothing
// since), or not found for a job that had none.
func (r *Runner) StaleRecords(ctx context.Context, ids ...string) error {
	frozen := map[string]jetstream.KeyValueEntry{}
	for _, id := range ids {
		e, err := r.store.kv.Get(ctx, id)
		if err != nil {
			return err
		}
		frozen[id] = e
	}
	r.store.kv = staleKV{KeyValue: r.store.kv, frozen: frozen}
	return nil
}

type staleKV struct {
	jetstream.KeyValue
	frozen map[string]jetstream.KeyValueEntry
}

func (s staleKV) Get(_ context.Context, key string) (jetstream.KeyValueEntry, error) {
	if e, ok := s.frozen[key]; ok {
		return e, nil
	}
	return nil, jetstream.ErrKeyNotFound
}

// LeaderBehind makes the next n reads of job id's record from the
// bucket's leader answer the record as it is now, as a leader does while a
// write of it is on its way through its group.
func (r *Runner) LeaderBehind(ctx context.Context, id string, n int) error {
	frozen, err := r.store.atLeader(ctx, r.layout.record(id))
	if err != nil {
		return err
	}
	read := r.store.atLeader
	var mu sync.Mutex
	r.store.atLeader = func(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
		mu.Lock()
		behind := subject == r.layout.record(id) && n > 0
		if behind {
			n--
		}
		mu.Unlock()
		if behind {
			return frozen, nil
		}
		return read(ctx, subject)
	}
	return nil
}

// NoLateKeeper has no keeper write the ends kept after a lost lease
// (late.go): only the job's next delivery here writes them.
func (r *Runner) NoLateKeeper() {
	r.late.mu.Lock()
	defer r.late.mu.Unlock()
	r.late.keeping = true
}

// HandleTick runs Handle's logic on a periodic job's tick made up by a
// test: stream sequence seq, its next tick due at next.
func (r *Runner) HandleTick(ctx context.Context, name string, seq uint64, next time.Time, data []byte) error {
	d := delivery{subject: r.layout.tick(name), data: data, published: time.Now(), seq: seq, tickNext: next.Format(time.RFC3339Nano)}
	return settled(ctx, r.handle(ctx, d))
}

// TickID is the id of the job a periodic job's tick of that sequence submits.
func TickID(name string, seq uint64) string { return tickID(name, seq, -1) }

// AnnounceEvery sets how often serving processes announce themselves, for
// the test, and puts it back at its end.
func AnnounceEvery(t interface{ Cleanup(func()) }, d time.Duration) {
	was := replicaEvery
	replicaEvery = d
	t.Cleanup(func() { replicaEvery = was })
}

// Vanish stops r's announcements without purging the last, as a process
// killed would.
func (r *Runner) Vanish() {
	a := &r.announcer
	a.started.Do(func() {})
	if a.stop != nil {
		a.stop()
		a.done.Wait()
	}
	a.stop = nil
}

// InPartition makes r write ids of partition k, as a Partitioned's own
// Runner does: a test makes the ids of a store from before partitions
// that begin as a partition's.
func (r *Runner) InPartition(k int) { r.partition = k }

// PartitionOf is the partition a job id names.
func PartitionOf(id string) int { return partitionOf(id) }

// BalanceOnce asks each of p's groups led elsewhere than its target to
// step down to it, and returns how many it asked.
func (p *Partitioned) BalanceOnce(ctx context.Context) int { return p.balanceOnce(ctx) }

// LaneStepDowns are the subjects that ask p's lanes' leaders to step
// down, of the lanes led elsewhere than on server.
func (p *Partitioned) LaneStepDowns(ctx context.Context, server string) []string {
	var out []string
	for _, r := range p.parts {
		lanes, _ := r.laneGroups(ctx)
		for _, g := range lanes {
			if g.Leader == server {
				continue
			}
			out = append(out, "$JS.API.CONSUMER.LEADER.STEPDOWN."+r.layout.stream+"."+g.Name)
		}
	}
	return out
}

// LaneSpread says, of each lane whose leaders in the partitions are not
// on as many servers as there are partitions, who leads it in each.
func (p *Partitioned) LaneSpread(ctx context.Context) map[string][]string {
	by := map[string][]string{}
	for _, r := range p.parts {
		lanes, _ := r.laneGroups(ctx)
		for _, g := range lanes {
			by[g.Name] = append(by[g.Name], g.Leader)
		}
	}
	for name, leaders := range by {
		if len(slices.Compact(slices.Sorted(slices.Values(leaders)))) == len(p.parts) {
			delete(by, name)
		}
	}
	return by
}

// LaneLeaders counts the servers leading p's lanes.
func (p *Partitioned) LaneLeaders(ctx context.Context) map[string]int {
	n := map[string]int{}
	for _, r := range p.parts {
		lanes, _ := r.laneGroups(ctx)
		for _, g := range lanes {
			n[g.Leader]++
		}
	}
	return n
}

// SuspectReplicas has the store's reads go as while a replica does not
// answer (hedge.go): each sent several times at once, a Get's reads at
// once.
func (r *Runner) SuspectReplicas() {
	r.reads.suspect()
}
