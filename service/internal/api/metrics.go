package api

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// Metrics are the HTTP request metrics, by route (the pattern, never the
// raw path, so that ids do not make new series).
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics registers the request metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crewd_http_requests_total", Help: "HTTP requests answered, by route, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "crewd_http_request_duration_seconds", Help: "Time to answer an HTTP request, by route.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}, []string{"route"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// observe counts a request and its duration; a request inside a sampled
// span leaves its trace id as the duration's exemplar (shown in the
// OpenMetrics exposition: Accept: application/openmetrics-text), so that a
// slow bucket leads to a trace.
func (m *Metrics) observe(ctx context.Context, route, method string, code int, d time.Duration) {
	if code == 0 {
		code = 200
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
	h := m.duration.WithLabelValues(route)
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		if e, ok := h.(prometheus.ExemplarObserver); ok {
			e.ObserveWithExemplar(d.Seconds(), prometheus.Labels{"trace_id": sc.TraceID().String()})
			return
		}
	}
	h.Observe(d.Seconds())
}
