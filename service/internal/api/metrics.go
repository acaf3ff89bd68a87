package api

import (
	"context"
	"strconv"
	"time"

	"github.com/crew-go/crew/service/internal/tracing"
	"github.com/prometheus/client_golang/prometheus"
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

// observe counts a request and its duration, with the request's trace as
// the duration's exemplar (tracing.Observe).
func (m *Metrics) observe(ctx context.Context, route, method string, code int, d time.Duration) {
	if code == 0 {
		code = 200
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
	tracing.Observe(ctx, m.duration.WithLabelValues(route), d.Seconds())
}
