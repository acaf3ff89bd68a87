package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestParseRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "-streams: none given"},
		{[]string{"-streams", "jobs,,KV_jobs"}, `"" is not a stream name`},
		{[]string{"-streams", "jobs.x"}, `"jobs.x" is not a stream name`},
		{[]string{"-streams", "jobs", "-replicas", "0"}, "-replicas 0: want 1 to 5"},
		{[]string{"-streams", "jobs", "-replicas", "7"}, "-replicas 7: want 1 to 5"},
		{[]string{"-streams", "jobs", "-wait", "0s"}, "-wait 0s: want more than 0"},
		{[]string{"-streams", "jobs", "extra"}, `unexpected argument "extra"`},
		{[]string{"-streams", "jobs", "-replicas", "three"}, "invalid value"},
	} {
		var stderr bytes.Buffer
		if code := run(tc.args, &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
	if s, err := parse([]string{"-streams", " jobs , KV_jobs", "-replicas", "3"}, &bytes.Buffer{}); err != nil ||
		len(s.streams) != 2 || s.streams[0] != "jobs" || s.streams[1] != "KV_jobs" || s.replicas != 3 {
		t.Errorf("parse: %+v, %v", s, err)
	}
}

// cluster runs three JetStream servers routed to one another, in process,
// on loopback, and returns a client URL listing all three.
func cluster(t *testing.T) string {
	t.Helper()
	ports := freePorts(t, 3)
	var routes []string
	for _, p := range ports {
		routes = append(routes, "nats-route://127.0.0.1:"+strconv.Itoa(p))
	}
	var urls []string
	for i, p := range ports {
		opts := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       -1,
			JetStream:  true,
			StoreDir:   t.TempDir(),
			Cluster:    server.ClusterOpts{Name: "test", Host: "127.0.0.1", Port: p},
			Routes:     server.RoutesFromStr(strings.Join(routes, ",")),
			NoLog:      true,
			NoSigs:     true,
		}
		srv, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		srv.Start()
		t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
		if !srv.ReadyForConnections(10 * time.Second) {
			t.Fatal("nats-server not ready in 10 s")
		}
		urls = append(urls, srv.ClientURL())
	}
	return strings.Join(urls, ",")
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
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
	return ports
}

// connect returns a JetStream context once the cluster has a meta leader
// (a stream can be created), within 30 s.
func connect(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return js
		}
		if time.Now().After(deadline) {
			t.Fatalf("no JetStream meta leader within 30 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The streams crewd creates, R1 with a consumer and a bucket, become R3,
// the consumer with them; a stream already at R3 is not lowered.
func TestRaiseToThreeReplicas(t *testing.T) {
	url := cluster(t)
	js := connect(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "jobs", Subjects: []string{"jobs.>"}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "crewd", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "jobs", Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-servers", url, "-streams", "jobs,KV_jobs", "-replicas", "3", "-wait", "45s"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	t.Logf("%s", stdout.String())
	for _, name := range []string{"jobs", "KV_jobs"} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.CachedInfo().Config.Replicas; got != 3 {
			t.Errorf("stream %s: %d replicas, want 3", name, got)
		}
	}
	c, err := st.Consumer(ctx, "crewd")
	if err != nil {
		t.Fatal(err)
	}
	if ci := c.CachedInfo(); ci.Cluster == nil || len(ci.Cluster.Replicas) != 2 {
		t.Errorf("consumer crewd did not follow its stream to R3: %+v", ci.Cluster)
	}

	// Asked for fewer, it leaves the stream as it is.
	if code := run([]string{"-servers", url, "-streams", "jobs", "-replicas", "1", "-wait", "10s"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if s, err := js.Stream(ctx, "jobs"); err != nil || s.CachedInfo().Config.Replicas != 3 {
		t.Errorf("-replicas 1 lowered the stream: %v", err)
	}
}

// A stream that never appears is an error once the wait ends, saying so.
func TestMissingStreamFails(t *testing.T) {
	url := cluster(t)
	connect(t, url)
	var stderr bytes.Buffer
	code := run([]string{"-servers", url, "-streams", "nothere", "-replicas", "3", "-wait", "2s"}, &bytes.Buffer{}, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "stream nothere: not done within -wait: it does not exist yet") {
		t.Errorf("exit %d, %q", code, stderr.String())
	}
}
