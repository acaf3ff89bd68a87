package jsjobs_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/natsjs/natstest"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// threeServers are three JetStream servers routed to one another on
// loopback, in process; start starts the i-th.
type threeServers struct {
	t    *testing.T
	opts []*server.Options
	urls []string
}

func newThreeServers(t *testing.T) *threeServers {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range 6 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	var routes []string
	for i := range 3 {
		routes = append(routes, "nats-route://127.0.0.1:"+strconv.Itoa(ports[3+i]))
	}
	s := &threeServers{t: t}
	for i := range 3 {
		opts := natstest.Options(t.TempDir(), ports[i])
		opts.ServerName = fmt.Sprintf("n%d", i+1)
		opts.Cluster = server.ClusterOpts{Name: "test", Host: "127.0.0.1", Port: ports[3+i]}
		opts.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		s.opts = append(s.opts, opts)
		s.urls = append(s.urls, "nats://127.0.0.1:"+strconv.Itoa(ports[i]))
	}
	return s
}

func (s *threeServers) start(i int) *server.Server {
	s.t.Helper()
	return natstest.Start(s.t, s.opts[i])
}

// syncBuffer is a log written by the runner and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func replicasOf(ctx context.Context, t *testing.T, js jetstream.JetStream, stream string) int {
	t.Helper()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	return s.CachedInfo().Config.Replicas
}

// TestJetStreamReplicasOnAFormingCluster: a runner started while one
// server of three is up (no JetStream leader, nothing answers) tries again
// rather than failing, and once the other two are up creates the stream
// and the bucket with three replicas. A second runner asking for three
// replicas of streams made with one warns and leaves them as they are.
func TestJetStreamReplicasOnAFormingCluster(t *testing.T) {
	s := newThreeServers(t)
	s.start(0)
	nc, err := nats.Connect(s.urls[0], nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	cfg := jsConfig()
	cfg.Replicas = 3
	cfg.Log = slog.New(slog.NewTextHandler(&log, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	type result struct {
		r   *jsjobs.Runner
		err error
	}
	made := make(chan result, 1)
	go func() {
		r, err := jsjobs.New(ctx, js, cfg)
		made <- result{r, err}
	}()
	for !strings.Contains(log.String(), "JetStream not ready yet") {
		select {
		case res := <-made:
			t.Fatalf("with one server of three the setup ended: %v\n%s", res.err, log.String())
		case <-ctx.Done():
			t.Fatalf("no retry logged:\n%s", log.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	s.start(1)
	s.start(2)
	res := <-made
	if res.err != nil {
		t.Fatalf("setup once the cluster formed: %v\n%s", res.err, log.String())
	}
	for _, name := range []string{"jobs", "KV_jobs"} {
		if got := replicasOf(ctx, t, js, name); got != 3 {
			t.Errorf("stream %s: %d replicas, want 3", name, got)
		}
	}
	if strings.Contains(log.String(), "fewer replicas") {
		t.Errorf("a warning for streams made with the replicas asked:\n%s", log.String())
	}
	// Each part has a leader and two followers, current once the writes
	// settle (StoreGroups, which the UI's overview shows).
	defer func() { _ = res.r.Close() }()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		groups, err := res.r.StoreGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		settled := len(groups) == 2
		for _, g := range groups {
			current := 0
			for _, f := range g.Followers {
				if f.Current && f.Name != g.Leader {
					current++
				}
			}
			settled = settled && g.Leader != "" && current == 2
		}
		if settled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("store groups after 20 s: %+v", groups)
		}
	}

	// Streams made beforehand with one replica are used as they are.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "one", Subjects: []string{"one.>"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "one"}); err != nil {
		t.Fatal(err)
	}
	var log2 syncBuffer
	cfg.Stream, cfg.Bucket, cfg.Log = "one", "one", slog.New(slog.NewTextHandler(&log2, nil))
	if _, err := jsjobs.New(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"one", "KV_one"} {
		if got := replicasOf(ctx, t, js, name); got != 1 {
			t.Errorf("stream %s made with 1 replica now has %d", name, got)
		}
		if !strings.Contains(log2.String(), "stream="+name+" replicas=1 want=3") {
			t.Errorf("no warning for stream %s:\n%s", name, log2.String())
		}
	}
}

// TestJetStreamReplicasRefused: more replicas than a single server can
// hold fail the setup at once, with the server's reason, not after the
// setup's whole time.
func TestJetStreamReplicasRefused(t *testing.T) {
	c := newCluster(t)
	cfg := jsConfig()
	cfg.Replicas = 3
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := jsjobs.New(ctx, c.js, cfg)
	if err == nil || !strings.Contains(err.Error(), "replicas") || ctx.Err() != nil {
		t.Fatalf("R3 on one server: %v (ctx %v)", err, ctx.Err())
	}
	for _, n := range []int{-1, 6} {
		cfg.Replicas = n
		if _, err := jsjobs.New(ctx, c.js, cfg); err == nil || !strings.Contains(err.Error(), "bad settings") {
			t.Errorf("replicas %d: %v", n, err)
		}
	}
}

// TestBadSettingsAreNamed: a setting out of range is refused by name and
// value, not by a dump of the whole Config; MaxTimeout alone lowers the
// default timeout with it.
func TestBadSettingsAreNamed(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	cfg := jsConfig()
	cfg.MaxDelay, cfg.Replicas = -time.Hour, 6
	_, err := jsjobs.New(ctx, c.js, cfg)
	if err == nil || !strings.Contains(err.Error(), "MaxDelay -1h0m0s, want more than 0") || !strings.Contains(err.Error(), "Replicas 6, want 1..5") || strings.Contains(err.Error(), "Kinds") {
		t.Fatalf("New with a negative MaxDelay and 6 replicas: %v", err)
	}
	cfg = jsConfig()
	cfg.DefaultTimeout, cfg.MaxTimeout = 0, 10*time.Second
	r, err := jsjobs.New(ctx, c.js, cfg)
	if err != nil {
		t.Fatalf("New with MaxTimeout alone: %v", err)
	}
	closeRunner(t, r)
}
