package natsotel_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/crew-go/crew/natsjs"
	"github.com/crew-go/crew/natsjs/natsotel"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The producer publishes inside its request's span; the consumer's runs
// are children of it, on whichever process pulls the message.
func ExampleHandler() {
	var (
		ctx    = context.Background()
		js     jetstream.JetStream // jetstream.New(nc)
		handle natsjs.Handler      // the job
	)
	if js != nil {
		_, _ = natsotel.Publish(ctx, js, &nats.Msg{Subject: "jobs.42", Data: []byte(`{"kind":"sleep"}`)})
	}
	traced := natsotel.Handler(handle) // pass to natsjs.New
	_ = traced
	// Output:
}

// A handler that keeps its own record of each message links a rerun to
// the earlier run itself: the record holds the run's traceparent (crewd's
// job record does), the next run reads it and adds the link.
func ExamplePreviousAttempt() {
	var record sync.Map // the handler's own store, by message id (runs are concurrent)
	handle := func(ctx context.Context, m *natsjs.Msg) error {
		span := trace.SpanFromContext(ctx)
		id := m.Subject()
		if prev, ok := record.Load(id); ok {
			earlier := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": prev.(string)})
			if sc := trace.SpanContextFromContext(earlier); sc.IsValid() {
				span.AddLink(natsotel.PreviousAttempt(sc))
			}
		}
		c := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, c)
		record.Store(id, c["traceparent"]) // this run, for the next
		return nil
	}
	traced := natsotel.Handler(handle) // pass to natsjs.New
	_ = traced
	fmt.Println(natsotel.PreviousAttempt(trace.SpanContext{}).Attributes[0].Value.AsString())
	// Output: previous attempt
}
