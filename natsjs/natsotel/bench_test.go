package natsotel_test

import (
	"context"
	"testing"

	"github.com/crew-go/crew/natsjs/natsotel"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace/noop"
)

// BenchmarkInjectNoop is the cost of tracing left off: a no-op provider's
// span context is invalid, and the W3C propagator writes nothing.
func BenchmarkInjectNoop(b *testing.B) {
	ctx, span := noop.NewTracerProvider().Tracer("b").Start(context.Background(), "x")
	defer span.End()
	h := nats.Header{}
	b.ReportAllocs()
	for b.Loop() {
		natsotel.Inject(ctx, h, natsotel.WithPropagator(w3c))
	}
	if h.Get("traceparent") != "" {
		b.Fatal("a no-op span wrote a traceparent")
	}
}
