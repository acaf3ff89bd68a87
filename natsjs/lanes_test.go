package natsjs_test

import (
	"context"
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew/natsjs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// lane is a consumer of the messages of subject alone.
func (e *env) lane(t testing.TB, stream, name, subject string) jetstream.Consumer {
	t.Helper()
	c, err := e.js.CreateOrUpdateConsumer(context.Background(), stream, jetstream.ConsumerConfig{
		Durable:       name,
		FilterSubject: subject,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       5 * time.Second,
		MaxAckPending: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLanesTakeTheFirstFirst: 400 messages wait in the second lane and
// run two at a time; 20 published to the first lane while they run all
// start before any more of the second's than were already held, and the
// second's run on after them.
func TestLanesTakeTheFirstFirst(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	hi := e.lane(t, "jobs", "hi", "jobs.hi")
	lo := e.lane(t, "jobs", "lo", "jobs.lo")
	e.publish(t, "jobs.lo", 400)
	const workers = 2
	pool := newPool(t, workers)
	var (
		mu      sync.Mutex
		order   []string
		hiAfter atomic.Bool // the first lane's messages are published
		loSince int         // the second lane's starts since then, before the first lane's last
		hiRan   int
	)
	src := newSource(t, pool, hi, func(ctx context.Context, m *natsjs.Msg) error {
		mu.Lock()
		order = append(order, m.Subject())
		switch {
		case m.Subject() == "jobs.hi":
			hiRan++
		case hiAfter.Load() && hiRan < 20:
			loSince++
		}
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		return nil
	}, natsjs.WithLanes(hi, lo), natsjs.WithWindow(0))
	run(t, src)
	eventually(t, 10*time.Second, "the second lane under way", func() bool { return src.Stats().Acked >= 50 })
	e.publish(t, "jobs.hi", 20)
	hiAfter.Store(true)
	eventually(t, 20*time.Second, "every message acked", func() bool { return src.Stats().Acked == 420 })
	mu.Lock()
	defer mu.Unlock()
	// With no window a sweep takes only free slots: what the second lane
	// may still start is what was held, or pulled, when the first lane's
	// messages came (a worker's and a sweep's worth).
	if loSince > 2*workers+1 {
		t.Fatalf("%d of the second lane's messages started after the first's were published, before its last; order %v", loSince, order)
	}
	if hiRan != 20 || len(order) != 420 || order[len(order)-1] != "jobs.lo" {
		t.Fatalf("first lane ran %d; %d runs; last %q", hiRan, len(order), order[len(order)-1])
	}
}

// TestLanesIdleWakeForEither: an idle Source over two lanes runs a
// message published to either within a pull's wait, and stops with its
// watches waiting on the server within the stop's bound.
func TestLanesIdleWakeForEither(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	hi := e.lane(t, "jobs", "hi", "jobs.hi")
	lo := e.lane(t, "jobs", "lo", "jobs.lo")
	pool := newPool(t, 2)
	ran := make(chan string, 4)
	src := newSource(t, pool, lo, func(ctx context.Context, m *natsjs.Msg) error {
		ran <- m.Subject()
		return nil
	}, natsjs.WithLanes(hi, lo))
	errc := make(chan error, 1)
	go func() { errc <- src.Run(context.Background()) }()
	time.Sleep(1500 * time.Millisecond) // idle past a pull's wait: the watches are sent again
	for _, subj := range []string{"jobs.lo", "jobs.hi"} {
		start := time.Now()
		e.publish(t, subj, 1)
		select {
		case got := <-ran:
			if got != subj {
				t.Fatalf("ran %q, want %q", got, subj)
			}
			if d := time.Since(start); d > 500*time.Millisecond {
				t.Fatalf("%s ran %v after its publish: an idle Source must watch every lane", subj, d)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s not run", subj)
		}
	}
	eventually(t, 5*time.Second, "both acked", func() bool { return src.Stats().Acked == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	if err := src.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with watches waiting: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Shutdown took %v", d)
	}
	// Without WithDoubleAck, a counted ack may still be on its way: the
	// stop no longer waits a pull's expiry for the idle watches.
	eventually(t, 5*time.Second, "no lag", func() bool {
		lag, err := src.Lag(context.Background())
		return err == nil && lag == 0
	})
}

func TestLanesRefused(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	hi := e.lane(t, "jobs", "hi", "jobs.hi")
	lo := e.lane(t, "jobs", "lo", "jobs.lo")
	slow, err := e.js.CreateOrUpdateConsumer(context.Background(), "jobs", jetstream.ConsumerConfig{
		Durable: "slow", FilterSubject: "jobs.slow", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool(t, 1)
	h := func(context.Context, *natsjs.Msg) error { return nil }
	for name, opt := range map[string]natsjs.Option{
		"nil":           natsjs.WithLanes(nil),
		"empty group":   natsjs.WithLaneGroups([]jetstream.Consumer{hi}, nil),
		"other AckWait": natsjs.WithLanes(hi, slow),
		"not its own":   natsjs.WithLanes(lo),
	} {
		if _, err := natsjs.New(pool, hi, h, opt); !errors.Is(err, natsjs.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
}

// TestLanesUnderLoad: bursts published to three lanes with idle gaps
// between them (so the Source goes from sweeps to watches and back)
// all run once, none redelivered, none left held; run it with -cpu 2,4,8.
func TestLanesUnderLoad(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	lanes := []jetstream.Consumer{e.lane(t, "jobs", "a", "jobs.a"), e.lane(t, "jobs", "b", "jobs.b"), e.lane(t, "jobs", "c", "jobs.c")}
	pool := newPool(t, 4)
	got := newSeen()
	src := newSource(t, pool, lanes[0], func(ctx context.Context, m *natsjs.Msg) error {
		got.add(m.StreamSeq())
		if m.StreamSeq()%7 == 0 {
			time.Sleep(time.Millisecond)
		}
		return nil
	}, natsjs.WithLanes(lanes...))
	run(t, src)
	n := 0
	for round := range 12 {
		var wg sync.WaitGroup
		for i, subj := range []string{"jobs.a", "jobs.b", "jobs.c"} {
			k := 50 + 40*((round+i)%3)
			n += k
			wg.Go(func() { e.publish(t, subj, k) })
		}
		wg.Wait()
		if round%3 == 2 {
			time.Sleep(1200 * time.Millisecond) // idle past a watch's wait
		}
	}
	eventually(t, 30*time.Second, "every message acked", func() bool { return src.Stats().Acked == uint64(n) })
	if got.distinct() != n {
		t.Fatalf("distinct %d, want %d", got.distinct(), n)
	}
	st := src.Stats()
	if st.Received != uint64(n) || st.Redelivered != 0 || st.InFlight != 0 {
		t.Fatalf("stats %+v after %d messages", st, n)
	}
}

// TestLaneGroupsTakeTurns: two lanes of one rank on two streams (each
// consumer named "hi", as a partitioned store names them) with 200
// messages waiting each take turns: each has a fair share of the first 100
// runs, where WithLanes would run the first's alone; the lane of the next
// rank runs after both, but for what was held when they drained; the
// dead letters of either stream would name it.
func TestLaneGroupsTakeTurns(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "p0", "p0.>")
	e.stream(t, "p1", "p1.>")
	hi0 := e.lane(t, "p0", "hi", "p0.hi")
	hi1 := e.lane(t, "p1", "hi", "p1.hi")
	lo := e.lane(t, "p0", "lo", "p0.lo")
	e.publish(t, "p0.hi", 200)
	e.publish(t, "p1.hi", 200)
	e.publish(t, "p0.lo", 50)
	const workers = 2
	pool := newPool(t, workers)
	var (
		mu    sync.Mutex
		order []string
	)
	src := newSource(t, pool, hi0, func(ctx context.Context, m *natsjs.Msg) error {
		mu.Lock()
		order = append(order, m.Subject())
		mu.Unlock()
		time.Sleep(time.Millisecond)
		return nil
	}, natsjs.WithLaneGroups([]jetstream.Consumer{hi0, hi1}, []jetstream.Consumer{lo}), natsjs.WithWindow(0))
	if lag, err := src.Lag(context.Background()); err != nil || lag != 450 {
		t.Fatalf("lag %d (%v), want 450 over the three lanes", lag, err)
	}
	run(t, src)
	eventually(t, 30*time.Second, "every message acked", func() bool { return src.Stats().Acked == 450 })
	mu.Lock()
	defer mu.Unlock()
	first := map[string]int{}
	for _, subj := range order[:100] {
		first[subj]++
	}
	if first["p0.hi"] < 25 || first["p1.hi"] < 25 {
		t.Errorf("the first 100 runs: %v; want each lane of the first rank a fair share", first)
	}
	lastHi := 0
	for i, subj := range order {
		if subj != "p0.lo" {
			lastHi = i
		}
	}
	early := 0
	for _, subj := range order[:lastHi] {
		if subj == "p0.lo" {
			early++
		}
	}
	if early > 2*workers+1 {
		t.Errorf("%d of the second rank's messages ran before the first rank's last", early)
	}
}

// TestLaneGroupWatchesTakeSeveral: a trickle of messages over three
// streams, each lane found drained at most sweeps, costs the lanes of one
// group (a partitioned store's) fewer pulls a message than the same lanes
// each of its own rank, whose watches take one message each: a grouped
// lane's watch asks for up to maxWatch with the credit left unused.
func TestLaneGroupWatchesTakeSeveral(t *testing.T) {
	pullsPerMessage := func(grouped bool) float64 {
		e := newEnv(t)
		var lanes []jetstream.Consumer
		for _, s := range []string{"p0", "p1", "p2"} {
			e.stream(t, s, s+".>")
			lanes = append(lanes, e.lane(t, s, "hi", s+".hi"))
		}
		opt := natsjs.WithLanes(lanes...)
		if grouped {
			opt = natsjs.WithLaneGroups(lanes)
		}
		pool := newPool(t, 8)
		src := newSource(t, pool, lanes[0], func(ctx context.Context, m *natsjs.Msg) error { return nil }, opt)
		run(t, src)
		const rounds = 200
		time.Sleep(200 * time.Millisecond) // the first sweep done, every lane watched
		before := e.nc.Stats().OutMsgs
		for range rounds {
			for _, s := range []string{"p0", "p1", "p2"} {
				if _, err := e.js.Publish(context.Background(), s+".hi", nil); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(3 * time.Millisecond)
		}
		eventually(t, 30*time.Second, "every message acked", func() bool { return src.Stats().Acked == 3*rounds })
		// Sent: the publishes, an ack each, and the pulls.
		pulls := float64(e.nc.Stats().OutMsgs-before) - 2*3*rounds
		return pulls / (3 * rounds)
	}
	ranked, grouped := pullsPerMessage(false), pullsPerMessage(true)
	t.Logf("pulls a message: lanes of their own rank %.2f, lanes of one group %.2f", ranked, grouped)
	if grouped > 0.75*ranked {
		t.Errorf("a group's lanes pulled %.2f times a message, lanes of their own rank %.2f: want at most 3/4 of it", grouped, ranked)
	}
}

// TestLanesIdleWatchesRenewRarely: an idle Source keeps one watch waiting
// on each lane for the long idle wait, not a pull a second: in a cluster
// each renewal costs the lane's raft group three writes. Over 4 s idle,
// each lane gets at most its sweep and one watch; a message published then
// still runs at once.
func TestLanesIdleWatchesRenewRarely(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	hi := e.lane(t, "jobs", "hi", "jobs.hi")
	lo := e.lane(t, "jobs", "lo", "jobs.lo")
	var mu sync.Mutex
	pulls := map[string]int{}
	sub, err := e.nc.Subscribe("$JS.API.CONSUMER.MSG.NEXT.jobs.*", func(m *nats.Msg) {
		mu.Lock()
		pulls[m.Subject[len("$JS.API.CONSUMER.MSG.NEXT.jobs."):]]++
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	ran := make(chan string, 4)
	src := newSource(t, newPool(t, 2), lo, func(ctx context.Context, m *natsjs.Msg) error {
		ran <- m.Subject()
		return nil
	}, natsjs.WithLanes(hi, lo))
	run(t, src)
	time.Sleep(4 * time.Second)
	mu.Lock()
	got := maps.Clone(pulls)
	mu.Unlock()
	t.Logf("pull requests in 4 s idle: %v", got)
	for _, lane := range []string{"hi", "lo"} {
		if got[lane] == 0 || got[lane] > 2 {
			t.Errorf("lane %s got %d pull requests in 4 s idle, want its sweep and one watch", lane, got[lane])
		}
	}
	start := time.Now()
	e.publish(t, "jobs.lo", 1)
	select {
	case <-ran:
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Fatalf("ran %v after its publish", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a message on an idle lane not run")
	}
}

// TestLanesIdleWatchLostInARestart: a server restart ends the idle lanes'
// watches, which wait 30 s when nothing ends them; the lanes are watched
// again at once, so a message published after the restart runs within
// seconds. (A watch lost without a word is found by the server's missing
// heartbeats: a cluster's, not a lone server's, case.)
func TestLanesIdleWatchLostInARestart(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	hi := e.lane(t, "jobs", "hi", "jobs.hi")
	lo := e.lane(t, "jobs", "lo", "jobs.lo")
	ran := make(chan string, 4)
	src := newSource(t, newPool(t, 2), lo, func(ctx context.Context, m *natsjs.Msg) error {
		ran <- m.Subject()
		return nil
	}, natsjs.WithLanes(hi, lo), natsjs.WithConn(e.nc))
	run(t, src)
	time.Sleep(500 * time.Millisecond) // every lane watched
	before := e.nc.Stats().Reconnects
	e.restart(t)
	eventually(t, 10*time.Second, "reconnected", func() bool { return e.nc.Stats().Reconnects > before && e.nc.IsConnected() })
	for _, subj := range []string{"jobs.hi", "jobs.lo"} {
		start := time.Now()
		e.publish(t, subj, 1)
		select {
		case got := <-ran:
			t.Logf("%s ran %v after its publish", got, time.Since(start))
		case <-time.After(10 * time.Second):
			t.Fatalf("%s, published after a restart, not run in 10 s: a lost watch went unnoticed", subj)
		}
	}
}
