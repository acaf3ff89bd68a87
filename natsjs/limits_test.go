package natsjs_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/natsjs"
	"github.com/nats-io/nats.go/jetstream"
)

// TestMaxRequestBatchBelowCredit: a consumer whose MaxRequestBatch is
// below the Source's credit (pool bound plus window) must still be consumed.
func TestMaxRequestBatchBelowCredit(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons, err := e.js.CreateOrUpdateConsumer(context.Background(), "jobs", jetstream.ConsumerConfig{
		Durable: "crewd", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
		MaxRequestBatch: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.publish(t, "jobs.a", 20)
	pool := newPool(t, 8)
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error { return nil })
	run(t, src)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if src.Stats().Acked == 20 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("after 5 s: %v", src.Stats())
}

// TestMaxRequestExpiresBelowPullExpiry: same with the consumer's
// MaxRequestExpires below the Source's pull expiry (1 s by default).
func TestMaxRequestExpiresBelowPullExpiry(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons, err := e.js.CreateOrUpdateConsumer(context.Background(), "jobs", jetstream.ConsumerConfig{
		Durable: "crewd", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
		MaxRequestExpires: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.publish(t, "jobs.a", 20)
	pool := newPool(t, 8)
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error { return nil })
	run(t, src)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if src.Stats().Acked == 20 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("after 5 s: %v", src.Stats())
}

// TestLastDeliveryNotTermedWhilePoolRuns: every delivery is the last
// (MaxDeliver 1). A stop finds one message not yet submitted (the pool's
// queue was full); the pool is alive and runs the others once a slot frees.
// The README: "kept: ... It runs if the pool runs it; dead-lettered if the
// pool stopped without running it". It must not be termed unrun while the
// pool still runs.
func TestLastDeliveryNotTermedWhilePoolRuns(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, 1)
	e.publish(t, "jobs.a", 3)
	pool, err := crew.New(crew.WithWorkers(1), crew.WithQueueSize(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pool.Shutdown(context.Background(), crew.Drain) })
	block := make(chan struct{})
	open := opener(t, block)
	ran := newSeen()
	src := newSource(t, pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		ran.add(m.StreamSeq())
		if m.StreamSeq() == 1 {
			<-block
		}
		return nil
	}, natsjs.WithWindow(2))
	errc := make(chan error, 1)
	go func() { errc <- src.Run(context.Background()) }()
	eventually(t, 10*time.Second, "three received", func() bool { return src.Stats().Received == 3 })
	time.Sleep(100 * time.Millisecond)
	sd := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sd <- src.Shutdown(ctx)
	}()
	time.Sleep(500 * time.Millisecond)
	open()
	if err := <-sd; err != nil {
		t.Fatal(err)
	}
	<-errc
	if st := src.Stats(); ran.distinct() != 3 || st.Termed != 0 {
		t.Fatalf("%d of 3 ran; %v", ran.distinct(), st)
	}
}

// TestHeartbeatPointNineKeepsTheLease: WithHeartbeat(0.9), which New
// accepts, renewed a lease 0.9 AckWait after the last, plus up to a tick
// (renewAfter/4 = 0.225 AckWait below 400 ms AckWaits): the server's
// AckWait often passes first and a second consumer gets a message whose
// handler is still running and healthy.
func TestHeartbeatPointNineKeepsTheLease(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	const ackWait = 400 * time.Millisecond
	cons := e.consumer(t, "jobs", "crewd", ackWait, -1)
	e.publish(t, "jobs.a", 1)
	var runs atomic.Int32
	h := func(ctx context.Context, m *natsjs.Msg) error {
		runs.Add(1)
		select {
		case <-time.After(10 * ackWait):
		case <-ctx.Done():
		}
		return nil
	}
	a := newSource(t, newPool(t, 1), cons, h, natsjs.WithHeartbeat(0.9))
	b := newSource(t, newPool(t, 1), cons, h, natsjs.WithHeartbeat(0.9))
	run(t, a)
	eventually(t, 5*time.Second, "started", func() bool { return runs.Load() == 1 })
	run(t, b)
	time.Sleep(10 * ackWait)
	if r := runs.Load(); r != 1 {
		t.Fatalf("ran %d times while the first run renewed its lease; a %v", r, a.Stats())
	}
}

// TestHandlerContextDoneAfterReturn: after the handler returned, its
// context's Err is non-nil (the task's context ends with the task) while
// its Done channel never closes (release stopped the watch): the
// context.Context contract ("If Done is not yet closed, Err returns nil")
// is broken, and a goroutine the handler left waiting on ctx.Done() (the
// usual way to tie it to the task) leaks for ever.
func TestHandlerContextDoneAfterReturn(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 30*time.Second, -1)
	e.publish(t, "jobs.a", 1)
	exited := make(chan struct{})
	ctxc := make(chan context.Context, 1)
	src := newSource(t, newPool(t, 1), cons, func(ctx context.Context, m *natsjs.Msg) error {
		done := ctx.Done() // as select or a child context would
		go func() { <-done; close(exited) }()
		ctxc <- ctx
		return nil
	})
	run(t, src)
	ctx := <-ctxc
	eventually(t, 5*time.Second, "acked", func() bool { return src.Stats().Acked == 1 })
	select {
	case <-exited:
	case <-time.After(2 * time.Second):
		select {
		case <-ctx.Done():
		default:
			t.Errorf("2 s after the handler returned: ctx.Err() = %v, Done not closed", ctx.Err())
		}
		t.Fatal("the goroutine waiting on the handler's ctx.Done() never woke")
	}
}
