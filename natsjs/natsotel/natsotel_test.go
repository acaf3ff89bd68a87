package natsotel_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/natsjs"
	"github.com/crew-go/crew/natsjs/natsotel"
	"github.com/crew-go/crew/natsjs/natstest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

var w3c = propagation.TraceContext{}

// TestInjectExtract: the trace context goes into a nats.Header and comes
// back out as the same span context, remote.
func TestInjectExtract(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("t").Start(context.Background(), "parent")
	defer span.End()
	h := nats.Header{}
	natsotel.Inject(ctx, h, natsotel.WithPropagator(w3c))
	if h.Get("traceparent") == "" {
		t.Fatalf("no traceparent in %v", h)
	}
	got := trace.SpanContextFromContext(natsotel.Extract(context.Background(), h, natsotel.WithPropagator(w3c)))
	if got.TraceID() != span.SpanContext().TraceID() || got.SpanID() != span.SpanContext().SpanID() || !got.IsRemote() {
		t.Fatalf("extracted %v, want %v remote", got, span.SpanContext())
	}
	if ctx := natsotel.Extract(context.Background(), nil, natsotel.WithPropagator(w3c)); trace.SpanContextFromContext(ctx).IsValid() {
		t.Fatal("a context out of no header")
	}
}

// fixture is a real embedded JetStream server with a stream "jobs", a
// consumer, a pool, and a TracerProvider recording every span.
type fixture struct {
	js   jetstream.JetStream
	cons jetstream.Consumer
	pool *crew.Pool
	rec  *tracetest.SpanRecorder
	tp   *sdktrace.TracerProvider
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	srv := natstest.Start(t, natstest.Options(t.TempDir(), -1))
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "jobs", Subjects: []string{"jobs.>"}}); err != nil {
		t.Fatal(err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, "jobs", jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := crew.New(crew.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pool.Close() })
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return &fixture{js: js, cons: cons, pool: pool, rec: rec, tp: tp}
}

// run runs a Source with h until done is closed.
func (f *fixture) run(t *testing.T, h natsjs.Handler, done <-chan struct{}, opts ...natsjs.Option) {
	t.Helper()
	src, err := natsjs.New(f.pool, f.cons, h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- src.Run(context.Background()) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Error("the handler did not finish in 30 s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := src.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) spans(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range f.rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// TestRunIsAChildOfThePublish: across a real server, the run's span is a
// child of the publish span, in the request's trace, with the attempt and
// the sequence; the handler's context carries the run's span.
func TestRunIsAChildOfThePublish(t *testing.T) {
	f := newFixture(t)
	opts := []natsotel.Option{natsotel.WithTracerProvider(f.tp), natsotel.WithPropagator(w3c)}
	ctx, request := f.tp.Tracer("t").Start(context.Background(), "POST /v1/jobs")
	if _, err := natsotel.PublishWith(ctx, f.js, &nats.Msg{Subject: "jobs.a", Data: []byte("x")}, opts); err != nil {
		t.Fatal(err)
	}
	request.End()
	done := make(chan struct{})
	var inside trace.SpanContext
	f.run(t, natsotel.Handler(func(ctx context.Context, m *natsjs.Msg) error {
		inside = trace.SpanContextFromContext(ctx)
		close(done)
		return nil
	}, opts...), done)

	pub, run := f.spans("jobs.a publish"), f.spans("jobs.a process")
	if len(pub) != 1 || len(run) != 1 {
		t.Fatalf("%d publish and %d process spans, want 1 and 1", len(pub), len(run))
	}
	if run[0].Parent().SpanID() != pub[0].SpanContext().SpanID() || run[0].SpanContext().TraceID() != request.SpanContext().TraceID() {
		t.Fatalf("run's parent %v, publish %v; trace %v, request's %v", run[0].Parent(), pub[0].SpanContext(), run[0].SpanContext().TraceID(), request.SpanContext().TraceID())
	}
	if pub[0].Parent().SpanID() != request.SpanContext().SpanID() {
		t.Fatal("the publish is not a child of the request")
	}
	if run[0].SpanKind() != trace.SpanKindConsumer || pub[0].SpanKind() != trace.SpanKindProducer {
		t.Fatalf("kinds %v, %v", run[0].SpanKind(), pub[0].SpanKind())
	}
	if attr(run[0], "messaging.nats.delivery_attempt") != "1" || attr(run[0], "messaging.nats.stream_sequence") != "1" || attr(pub[0], "messaging.message.id") != "1" {
		t.Fatalf("attributes: run %v, publish %v", run[0].Attributes(), pub[0].Attributes())
	}
	if inside.SpanID() != run[0].SpanContext().SpanID() {
		t.Fatal("the handler's context does not carry the run's span")
	}
}

// TestRedeliveryLinksToTheEarlierRun: a run that fails is redelivered; the
// second run's span, in the same trace, links to the first's (kept by
// WithRunStarted, found by WithPreviousRun), and the first's status is an
// error.
func TestRedeliveryLinksToTheEarlierRun(t *testing.T) {
	f := newFixture(t)
	var (
		mu   sync.Mutex
		runs = map[uint64]trace.SpanContext{} // by stream sequence: the last run's
	)
	opts := []natsotel.Option{natsotel.WithTracerProvider(f.tp), natsotel.WithPropagator(w3c),
		natsotel.WithRunStarted(func(_ context.Context, m *natsjs.Msg, sc trace.SpanContext) {
			mu.Lock()
			defer mu.Unlock()
			runs[m.StreamSeq()] = sc
		}),
		natsotel.WithPreviousRun(func(_ context.Context, m *natsjs.Msg) (trace.SpanContext, bool) {
			mu.Lock()
			defer mu.Unlock()
			sc, ok := runs[m.StreamSeq()]
			return sc, ok
		})}
	ctx, request := f.tp.Tracer("t").Start(context.Background(), "POST /v1/jobs")
	if _, err := natsotel.PublishWith(ctx, f.js, &nats.Msg{Subject: "jobs.b", Data: []byte("x")}, opts); err != nil {
		t.Fatal(err)
	}
	request.End()
	done := make(chan struct{})
	f.run(t, natsotel.Handler(func(ctx context.Context, m *natsjs.Msg) error {
		if m.Attempt() == 1 {
			return errors.New("first attempt fails")
		}
		close(done)
		return nil
	}, opts...), done, natsjs.WithBackoff(10*time.Millisecond, 10*time.Millisecond))

	run := f.spans("jobs.b process")
	if len(run) != 2 {
		t.Fatalf("%d runs, want 2", len(run))
	}
	first, second := run[0], run[1]
	if attr(first, "messaging.nats.delivery_attempt") != "1" {
		first, second = second, first
	}
	if first.Status().Description != "first attempt fails" || len(first.Links()) != 0 {
		t.Fatalf("first run: status %v, links %v", first.Status(), first.Links())
	}
	if len(second.Links()) != 1 || second.Links()[0].SpanContext.SpanID() != first.SpanContext().SpanID() {
		t.Fatalf("second run's links %v, want the first run %v", second.Links(), first.SpanContext())
	}
	if second.SpanContext().TraceID() != request.SpanContext().TraceID() || second.Parent().SpanID() != first.Parent().SpanID() {
		t.Fatal("the second run is not in the request's trace under the publish")
	}
}
