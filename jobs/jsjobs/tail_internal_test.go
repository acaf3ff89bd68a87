package jsjobs

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew/natsjs/natstest"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestTailKeepsOneSubscription: a tail that has caught up asks again ten
// times a second, all on one subscription for its answers: a subscription
// a batch was announced to every server of a cluster and withdrawn, most
// of an idle cluster's route traffic. What comes after the catch-up is
// still read, and an answer on an earlier batch's subject is dropped.
func TestTailKeepsOneSubscription(t *testing.T) {
	srv := natstest.Start(t, natstest.Options(t.TempDir(), -1))
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "s", Subjects: []string{"s.>"}, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := js.Publish(ctx, "s.a", nil); err != nil {
			t.Fatal(err)
		}
	}
	tc, err := nats.Connect(srv.ClientURL()) // the tail's own
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	var readSeq atomic.Uint64
	caught := make(chan struct{})
	var once sync.Once
	rctx, stop := context.WithCancel(ctx)
	var done sync.WaitGroup
	done.Go(func() {
		read(rctx, tc, "$JS.API.DIRECT.GET.s", 5*time.Second, func(_ *nats.Msg, seq uint64) { readSeq.Store(seq) }, func() { once.Do(func() { close(caught) }) }, func() {}, nil)
	})
	defer func() { stop(); done.Wait() }()
	<-caught
	subs := func() []string {
		cz, err := srv.Connz(&server.ConnzOptions{Subscriptions: true, CID: clientID(t, tc)})
		if err != nil || len(cz.Conns) != 1 {
			t.Fatalf("connz: %v, %d conns", err, len(cz.Conns))
		}
		return cz.Conns[0].Subs
	}
	first := subs()
	time.Sleep(450 * time.Millisecond) // four polls or so
	second := subs()
	if len(first) != 1 || len(second) != 1 || first[0] != second[0] || !strings.HasSuffix(first[0], ".*") {
		t.Fatalf("the tail's subscriptions %v, then %v: want one, kept", first, second)
	}
	if _, err := js.Publish(ctx, "s.a", nil); err != nil {
		t.Fatal(err)
	}
	// An answer on an earlier batch's subject, as a batch that timed out
	// would get it late.
	if err := nc.Publish(strings.TrimSuffix(first[0], "*")+"1", []byte("stale")); err != nil {
		t.Fatal(err)
	}
	// Within a few polls: the stale answer, taken for this batch's, would
	// have failed it and cost a second's wait.
	deadline := time.Now().Add(600 * time.Millisecond)
	for readSeq.Load() != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("the tail read up to %d in 600 ms, want 4", readSeq.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func clientID(t *testing.T, nc *nats.Conn) uint64 {
	id, err := nc.GetClientID()
	if err != nil {
		t.Fatal(err)
	}
	return id
}
