package tracing

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// Observe records v in o; inside a sampled span it leaves the span's
// trace id as the observation's exemplar ({trace_id="..."}, shown in the
// OpenMetrics exposition: Accept: application/openmetrics-text), so that a
// slow bucket leads to a trace.
func Observe(ctx context.Context, o prometheus.Observer, v float64) {
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		if e, ok := o.(prometheus.ExemplarObserver); ok {
			e.ObserveWithExemplar(v, prometheus.Labels{"trace_id": sc.TraceID().String()})
			return
		}
	}
	o.Observe(v)
}
