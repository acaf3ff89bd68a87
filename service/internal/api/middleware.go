package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the instrumentation scope of crewd's HTTP spans.
const TracerName = "github.com/crew-go/crew/service/internal/api"

type ctxKey struct{}

// requestID is the id of the request in ctx, for log lines.
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// validID accepts a caller's X-Request-Id if it is short and plain.
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// MaxHeaderBytes bounds a request's line and headers; over it the API
// answers 431. (net/http's own bound, larger, answers in plain text.)
const MaxHeaderBytes = 64 << 10

// headerBytes is about what the request line and headers took on the wire.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// knownMethod is method if it is one of HTTP's registered methods, else
// "_OTHER" (OpenTelemetry's name for it): any token is a method to
// net/http, and a label or a span name taken from the client would give a
// hostile one a new metric series per request.
func knownMethod(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "_OTHER"
}

// NotFound answers 404 in the API's JSON shape, for the admin listener's
// paths that are not its own.
func NotFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such endpoint: " + quoteShort(r.URL.Path)})
	})
}

// wrap gives a route its request id (the caller's X-Request-Id or a new
// one, echoed back) and its server span (named by the route, a child of
// the caller's traceparent; a no-op unless a TracerProvider is set), turns
// a panic into a 500 JSON answer, counts the request in the metrics under
// route and logs it at debug level.
func (a *API) wrap(route string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !validID(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		method := knownMethod(r.Method)
		ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := otel.Tracer(TracerName).Start(ctx, method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", method), attribute.String("http.route", route),
				attribute.String("crewd.request_id", id)))
		defer span.End()
		r = r.WithContext(ctx)
		if a.stopping.Load() {
			// See SetStopping: no keep-alive connection outlives the stop.
			w.Header().Set("Connection", "close")
		}
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, id))
		sw := &statusWriter{ResponseWriter: w}
		serve := h // this request's: h is the route's, shared
		if n := headerBytes(r); n > MaxHeaderBytes {
			serve = func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Connection", "close")
				a.fail(w, r, http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("request line and headers of about %d bytes: at most %d", n, MaxHeaderBytes))
			}
		}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				if a.Log != nil {
					a.Log.ErrorContext(r.Context(), "handler panicked", "request_id", id, "path", r.URL.Path, "panic", v)
				}
				if sw.code == 0 {
					a.fail(sw, r, http.StatusInternalServerError, "internal error")
				}
			}
			span.SetAttributes(attribute.Int("http.response.status_code", sw.code))
			if sw.code >= 500 {
				span.SetStatus(codes.Error, http.StatusText(sw.code))
			}
			if a.Metrics != nil {
				a.Metrics.observe(r.Context(), route, method, sw.code, time.Since(start))
			}
			if a.Log != nil {
				a.Log.DebugContext(r.Context(), "request", "request_id", id, "method", r.Method, "path", r.URL.Path, "status", sw.code, "duration", time.Since(start))
			}
		}()
		serve(sw, r)
	})
}
