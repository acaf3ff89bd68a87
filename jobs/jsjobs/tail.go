package jsjobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Tails feed the index (index.go): each reads its stream in order, from
// its first message, in batches of direct gets that any replica answers,
// then follows it, asking again every tailEvery once it has caught up. A
// reader's state is the next sequence it wants; the streams' messages
// removed meanwhile (acked jobs, expired records) are stepped over by the
// server.
const (
	tailBatch = 1000
	tailEvery = 100 * time.Millisecond
)

// tails follows the jobs' stream and the records' bucket into an index.
type tails struct {
	index    *index
	replicas board                // the replicas' announcements (board.go)
	ready    chan struct{}        // closed once both tails have caught up once
	syncs    []chan chan struct{} // a tail's: closes the channel it is given once caught up after
	stop     context.CancelFunc
	done     sync.WaitGroup
	expire   func() // drops the records expired, or evicted from the full bucket, by now
}

// listing starts the tails at the first List or Counts (get), and stops
// them for good at Close.
type listing struct {
	once   sync.Once
	closed atomic.Bool
	tails  atomic.Pointer[tails] // nil until get
}

// get returns the tails, started by follow at the first call;
// ErrUnavailable once closed.
func (l *listing) get(follow func() *tails) (*tails, error) {
	l.once.Do(func() { l.tails.Store(follow()) })
	t := l.tails.Load()
	if l.closed.Load() || t == nil {
		return nil, fmt.Errorf("%w: the runner is closed", jobs.ErrUnavailable)
	}
	return t, nil
}

// started is the tails if they have started, else nil.
func (l *listing) started() *tails { return l.tails.Load() }

// close stops the tails, if started, and any start after it.
func (l *listing) close() {
	l.closed.Store(true)
	l.once.Do(func() {})
	if t := l.tails.Load(); t != nil {
		t.close()
	}
}

// follow starts the tails of l's stream and bucket through js, each read
// bounded by timeout; retention is a record's by state.
func follow(js jetstream.JetStream, l layout, timeout time.Duration, retention func(jobs.State) time.Duration, d *deps) *tails {
	ctx, stop := context.WithCancel(context.Background())
	t := &tails{index: newIndex(), ready: make(chan struct{}), stop: stop}
	t.expire = func() {
		now := time.Now().UnixNano()
		for _, st := range jobs.States {
			if keep := retention(st); keep > 0 {
				t.index.expire(st, now-keep.Nanoseconds())
			}
		}
		// The records the bucket's bound removed: without this, a steady
		// load would keep a TTL's worth of them in memory, however small
		// the bucket.
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if s, err := js.Stream(ctx, l.bucketStream()); err == nil {
			t.index.evict(s.CachedInfo().State.FirstSeq)
		}
	}
	api := apiPrefix(js)
	var caught sync.WaitGroup
	caught.Add(2)
	for _, tl := range []struct {
		stream string
		apply  func(*nats.Msg, uint64)
	}{
		{l.stream, applyMsg(l, t.index)},
		{l.bucketStream(), applyRecord(l, t.index, &t.replicas, d)},
	} {
		syncs := make(chan chan struct{})
		t.syncs = append(t.syncs, syncs)
		t.done.Go(func() {
			read(ctx, js.Conn(), api+"DIRECT.GET."+tl.stream, timeout, tl.apply, caught.Done, t.expire, syncs)
		})
	}
	t.done.Go(func() { caught.Wait(); close(t.ready) })
	return t
}

// close stops the tails and waits for them.
func (t *tails) close() {
	t.stop()
	t.done.Wait()
}

// sync has each tail read its stream up to its end now, and waits for
// them, or for ctx: so that a List answers the jobs as they are when it is
// called, wherever they were last changed.
func (t *tails) sync(ctx context.Context) {
	var all []chan struct{}
	for _, s := range t.syncs {
		done := make(chan struct{})
		select {
		case s <- done:
			all = append(all, done)
		case <-ctx.Done():
			return
		}
	}
	for _, done := range all {
		select {
		case <-done:
		case <-ctx.Done():
			return
		}
	}
}

// wait waits until the index has caught up with the stores once.
func (t *tails) wait(ctx context.Context) error {
	select {
	case <-t.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: the jobs' index is still being read from the store", jobs.ErrUnavailable)
	}
}

// read follows one stream: apply is given each message and its sequence,
// caught is called when the first catch-up is done, and tick when caught
// up, before each wait; a channel received from syncs is closed once the
// tail has caught up after it came.
func read(ctx context.Context, nc *nats.Conn, subject string, timeout time.Duration, apply func(*nats.Msg, uint64), caught, tick func(), syncs <-chan chan struct{}) {
	next := uint64(1)
	var waiting []chan struct{}
	var once sync.Once
	defer once.Do(caught) // so that the index's waiters go on after a close
	lastTick := time.Now()
	var in replies
	defer in.close()
	for {
		n, pending, err := in.batch(ctx, nc, subject, next, timeout, func(m *nats.Msg, seq uint64) {
			apply(m, seq)
			next = seq + 1
		})
		wait := time.Duration(0)
		switch {
		case err != nil:
			wait = time.Second
		case n == 0 || pending == 0:
			once.Do(caught)
			for _, w := range waiting {
				close(w)
			}
			waiting = waiting[:0]
			if time.Since(lastTick) > 10*time.Second {
				tick()
				lastTick = time.Now()
			}
			wait = tailEvery
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			case w := <-syncs:
				waiting = append(waiting, w)
			}
		} else if ctx.Err() != nil {
			return
		}
	}
}

// replies is a tail's one subscription for its batches' answers, each
// batch answered on a subject of its own under it: a subscription is
// announced to every server of a cluster and withdrawn, so one a batch,
// ten a second a tail, would cost every server that much. An answer to an
// earlier batch (one that timed out) comes on that batch's subject and is
// dropped.
type replies struct {
	sub    *nats.Subscription
	prefix string
	n      uint64
}

// next is the subject for the next batch's answers, subscribed at the
// first.
func (r *replies) next(nc *nats.Conn) (string, error) {
	if r.sub == nil {
		r.prefix = nc.NewInbox()
		sub, err := nc.SubscribeSync(r.prefix + ".*")
		if err != nil {
			return "", err
		}
		r.sub = sub
	}
	r.n++
	return r.prefix + "." + strconv.FormatUint(r.n, 10), nil
}

func (r *replies) close() {
	if r.sub != nil {
		_ = r.sub.Unsubscribe()
	}
}

// batch asks for up to tailBatch messages from sequence from,
// gives each to fn, and returns how many came and how many more the server
// said there were.
func (r *replies) batch(ctx context.Context, nc *nats.Conn, subject string, from uint64, timeout time.Duration, fn func(*nats.Msg, uint64)) (n int, pending uint64, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	inbox, err := r.next(nc)
	if err != nil {
		return 0, 0, err
	}
	// Every subject: a filter, even ">", costs the server a subject match
	// for each message it steps over; apply skips what is not a job's.
	req, _ := json.Marshal(map[string]any{"seq": from, "batch": tailBatch, "max_bytes": 8 << 20})
	if err := nc.PublishRequest(subject, inbox, req); err != nil {
		return 0, 0, err
	}
	for {
		m, err := r.sub.NextMsgWithContext(ctx)
		if err != nil {
			return n, 0, err
		}
		if m.Subject != inbox {
			continue // an earlier batch's, which gave up on it
		}
		switch m.Header.Get("Status") {
		case "":
		case "404": // nothing at or after from
			return n, 0, nil
		case "204": // the batch's end
			pending, _ = strconv.ParseUint(m.Header.Get("Nats-Num-Pending"), 10, 64)
			return n, pending, nil
		default:
			return n, 0, fmt.Errorf("direct get from %s: %s %s", subject, m.Header.Get("Status"), m.Header.Get("Description"))
		}
		seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		if err != nil {
			return n, 0, errors.New("direct get: a message without its sequence")
		}
		fn(m, seq)
		n++
	}
}

// applyMsg indexes a message of the jobs' stream: a job waiting, or due
// later.
func applyMsg(l layout, x *index) func(*nats.Msg, uint64) {
	return func(m *nats.Msg, seq uint64) {
		subj := m.Header.Get(jetstream.SubjectHeader)
		e := entry{seq: seq, fromMsg: true, t: stamp(m)}
		what, id := l.parse(subj)
		switch what {
		case aJob:
			// Its lane, which says how far its consumer has delivered.
			e.state, e.queue, e.name = jobs.Queued, consumerOf("", l.queueOf(subj), l.priorityOf(subj)), l.queueOf(subj)
		case aDue:
			e.state = jobs.Scheduled
		default:
			return // a tick, a schedule: no job
		}
		var ok bool
		if e.id, ok = keyOf(id); !ok {
			return
		}
		var spec struct{ Kind string }
		_ = json.Unmarshal(m.Data, &spec)
		e.kind = spec.Kind
		e.retryOf, _ = strconv.ParseUint(m.Header.Get(headerRetryOf), 10, 64)
		x.set(e)
	}
}

// applyRecord indexes a message of the records' bucket: a record
// written, or deleted; and tells d (deps.go).
func applyRecord(l layout, x *index, b *board, d *deps) func(*nats.Msg, uint64) {
	return func(m *nats.Msg, seq uint64) {
		id := l.recordKey(m.Header.Get(jetstream.SubjectHeader))
		if name, ok := strings.CutPrefix(id, replicaPrefix); ok {
			b.apply(name, m)
			return
		}
		k, ok := keyOf(id) // not an idempotency key's claim
		if !ok {
			return
		}
		if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
			x.remove(k, seq, false)
			d.removed(k)
			return
		}
		var rec struct {
			State jobs.State
			Kind  string
			Queue string
			After []string
			Spec  struct {
				EvenOnFailure bool   `json:"even_on_failure"`
				Gate          string `json:"gate"`
			}
		}
		if json.Unmarshal(m.Data, &rec) != nil {
			return
		}
		x.set(entry{id: k, state: rec.State, kind: rec.Kind, name: rec.Queue, t: stamp(m), seq: seq})
		d.record(k, seq, rec.State, rec.After, jobs.Spec{EvenOnFailure: rec.Spec.EvenOnFailure, Gate: rec.Spec.Gate})
	}
}
