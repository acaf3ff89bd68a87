package tracing_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew/service/internal/tracing"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestEnabledByTheStandardVariables(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_SERVICE_NAME": "crewd"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		if got := tracing.Enabled(env(c.env)); got != c.want {
			t.Errorf("Enabled(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

// TestOffIsANoOp: with nothing set, Setup installs nothing: spans are
// OpenTelemetry's no-ops.
func TestOffIsANoOp(t *testing.T) {
	stop, err := tracing.Setup(context.Background(), env(nil), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop(context.Background())
	_, span := otel.Tracer("t").Start(context.Background(), "x")
	defer span.End()
	if span.SpanContext().IsValid() {
		t.Fatal("a real span with tracing off")
	}
}

// TestSpansReachTheOTLPEndpoint: with OTEL_EXPORTER_OTLP_ENDPOINT set, a
// span ends up POSTed to <endpoint>/v1/traces as OTLP protobuf, at the
// latest when Setup's shutdown flushes; the propagator is W3C.
func TestSpansReachTheOTLPEndpoint(t *testing.T) {
	var got atomic.Int64
	resources := make(chan map[string]string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" && proto.Unmarshal(b, &req) == nil {
			got.Add(1)
			for _, rs := range req.GetResourceSpans() {
				attrs := map[string]string{}
				for _, kv := range rs.GetResource().GetAttributes() {
					attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
				}
				select {
				case resources <- attrs:
				default:
				}
			}
		}
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "crewd-test")
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	defer func() { otel.SetTracerProvider(prevTP); otel.SetTextMapPropagator(prevProp) }()

	stop, err := tracing.Setup(context.Background(), func(k string) string { return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}[k] }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := otel.Tracer("t").Start(context.Background(), "x")
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	span.End()
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got.Load() == 0 {
		t.Fatal("no OTLP export reached the endpoint")
	}
	host, _ := os.Hostname()
	if res := <-resources; res["service.name"] != "crewd-test" || res["host.name"] != host {
		t.Fatalf("resource %v: want service.name crewd-test (OTEL_SERVICE_NAME) and host.name %s (the replica)", res, host)
	}
	if carrier["traceparent"] == "" || !trace.SpanContextFromContext(ctx).IsSampled() {
		t.Fatalf("propagated %v; sampled %v", carrier, trace.SpanContextFromContext(ctx).IsSampled())
	}
}

// TestLogLinesCarryTheTrace: a line logged with a span's context names
// its trace and span; one without a span does not.
func TestLogLinesCarryTheTrace(t *testing.T) {
	var buf strings.Builder
	log := slog.New(tracing.LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "api")
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	log.InfoContext(ctx, "inside")
	log.Info("outside")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"`) ||
		!strings.Contains(lines[0], `"component":"api"`) || strings.Contains(lines[1], "trace_id") {
		t.Fatalf("lines:\n%s", buf.String())
	}
}

// TestExportErrorsAreLogged: with the collector unreachable, each failed
// export is a warning in crewd's JSON log, not a plain line on stderr.
func TestExportErrorsAreLogged(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
	t.Setenv("OTEL_BSP_EXPORT_TIMEOUT", "200")
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	defer func() { otel.SetTracerProvider(prevTP); otel.SetTextMapPropagator(prevProp) }()
	var logs syncBuffer
	stop, err := tracing.Setup(context.Background(), os.Getenv, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = stop(ctx) // fails: nothing to export to
	}()
	_, span := otel.Tracer("t").Start(context.Background(), "x")
	span.End()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), `"level":"WARN","msg":"tracing: spans not exported"`); {
		if time.Now().After(deadline) {
			t.Fatalf("no warning for a failed export in 10 s; the log:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for the SDK's goroutine and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
