// Package tracing turns crewd's OpenTelemetry traces on, the standard way:
// from the OTEL_* environment variables. With no OTLP endpoint set
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), or
// with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, nothing is set
// up and every span is OpenTelemetry's no-op. Otherwise spans are exported
// over OTLP/HTTP (the exporter reads the endpoint, headers, timeout and
// protocol variables itself), sampled as OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG say (read by the SDK; default: parent-based,
// always on), under OTEL_SERVICE_NAME (default crewd), the host's name and
// OTEL_RESOURCE_ATTRIBUTES, with W3C trace context and baggage as the
// propagators.
package tracing

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

// Enabled reports whether the environment asks for traces.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs the global TracerProvider and propagator when Enabled,
// and returns what flushes and stops them (a no-op otherwise). The SDK's
// own errors (an export that failed: the collector down or slow) go to log
// as warnings, one line each, instead of plain lines on stderr.
func Setup(ctx context.Context, getenv func(string) string, log *slog.Logger) (shutdown func(context.Context) error, err error) {
	if !Enabled(getenv) {
		return func(context.Context) error { return nil }, nil
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("tracing: spans not exported", "error", err)
	}))
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	// host.name tells the replicas apart (a pod's name in Kubernetes, the
	// container's hostname in compose).
	detected, err := resource.New(ctx, resource.WithHost(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, err
	}
	res, err := resource.Merge(
		resource.NewSchemaless(semconv.ServiceName("crewd")),
		detected,
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, err
	}
	res, err = resource.Merge(res, resource.Environment()) // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES win
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return tp.Shutdown, nil
}
