package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestRequestSpanIsNamedByTheRoute: a request's span is named by its
// route, not its path (a job id would make every name new), is a child of
// the caller's traceparent, and carries the status.
func TestRequestSpanIsNamedByTheRoute(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	defer func() {
		_ = tp.Shutdown(context.Background())
		otel.SetTracerProvider(prevTP)
		otel.SetTextMapPropagator(prevProp)
	}()
	f := newFixture(t)
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req, _ := http.NewRequest("GET", f.srv.URL+"/v1/jobs/0123456789abcdef", nil)
	req.Header.Set("traceparent", parent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Name() != "GET /v1/jobs/{id}" {
		t.Fatalf("span %q, want the route", s.Name())
	}
	if s.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("trace %v parent %v: not the caller's", s.SpanContext().TraceID(), s.Parent().SpanID())
	}
	var status string
	for _, kv := range s.Attributes() {
		if kv.Key == "http.response.status_code" {
			status = kv.Value.Emit()
		}
	}
	if status != "404" || strings.Contains(s.Name(), "0123456789abcdef") {
		t.Fatalf("status %q, name %q", status, s.Name())
	}

	// The duration histogram keeps the sampled request's trace id as an
	// exemplar.
	families, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range families {
		if mf.GetName() != "crewd_http_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, b := range m.GetHistogram().GetBucket() {
				for _, l := range b.GetExemplar().GetLabel() {
					if l.GetName() == "trace_id" && l.GetValue() == "4bf92f3577b34da6a3ce929d0e0e4736" {
						found = true
					}
				}
			}
		}
	}
	if !found {
		t.Fatal("no exemplar with the request's trace id on crewd_http_request_duration_seconds")
	}
}
