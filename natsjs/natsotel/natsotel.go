// Package natsotel carries OpenTelemetry trace context through NATS
// JetStream messages for natsjs: Publish starts a producer span and writes
// its W3C traceparent and tracestate into the message's headers, through
// the configured propagator; Handler starts each run of a natsjs.Handler as
// a consumer span, a child of the context the message carries, on whichever
// process pulls it. A redelivered message's run can link to its earlier
// attempt's span (WithPreviousRun), which the message's headers cannot
// carry (a redelivery resends the message as it was published).
//
// It is a module of its own, so that natsjs, prom and the core carry no
// OpenTelemetry dependency. With no TracerProvider configured (the global
// one is a no-op until a program sets one), spans cost a no-op.
package natsotel

import (
	"context"
	"strconv"

	"github.com/crew-go/crew/natsjs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the spans made here.
const ScopeName = "github.com/crew-go/crew/natsjs/natsotel"

// Attribute keys of the spans, beside OpenTelemetry's messaging ones.
const (
	AttrDeliveryAttempt = attribute.Key("messaging.nats.delivery_attempt")
	AttrStreamSequence  = attribute.Key("messaging.nats.stream_sequence")
	// AttrLink marks a link: "previous attempt" on a run's link to the
	// message's earlier run.
	AttrLink = attribute.Key("crew.link")
)

// PreviousAttempt is the link from a run's span to the span of the same
// message's earlier run, sc: what Handler adds with WithPreviousRun, and
// what a handler that finds the earlier run itself (in its own record)
// adds to its span with AddLink.
func PreviousAttempt(sc trace.SpanContext) trace.Link {
	return trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{AttrLink.String("previous attempt")}}
}

// Header adapts nats.Header to propagation.TextMapCarrier.
type Header nats.Header

var _ propagation.TextMapCarrier = Header{}

// Get returns the first value of key.
func (h Header) Get(key string) string { return nats.Header(h).Get(key) }

// Set replaces key's values with value.
func (h Header) Set(key, value string) { nats.Header(h).Set(key, value) }

// Keys lists the keys held.
func (h Header) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// Option configures Publish, Inject, Extract and Handler. Options are made
// by the With... functions of this package only.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	tp       trace.TracerProvider
	prop     propagation.TextMapPropagator
	previous func(context.Context, *natsjs.Msg) (trace.SpanContext, bool)
	started  func(context.Context, *natsjs.Msg, trace.SpanContext)
}

func newConfig(opts []Option) config {
	c := config{}
	for _, o := range opts {
		o.apply(&c)
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.prop == nil {
		c.prop = otel.GetTextMapPropagator()
	}
	return c
}

// WithTracerProvider sets the TracerProvider; default: otel's global one.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tp = tp })
}

// WithPropagator sets the propagator; default: otel's global one (set it to
// propagation.TraceContext{} for W3C trace context).
func WithPropagator(p propagation.TextMapPropagator) Option {
	return optionFunc(func(c *config) { c.prop = p })
}

// WithPreviousRun gives Handler the span context of a message's earlier
// run (from wherever the caller kept it: crewd keeps it in the job's
// record); a valid one becomes a link of the new run's span.
func WithPreviousRun(f func(ctx context.Context, m *natsjs.Msg) (trace.SpanContext, bool)) Option {
	return optionFunc(func(c *config) { c.previous = f })
}

// WithRunStarted tells the caller each run's span context once its span
// has started, for WithPreviousRun to find on a redelivery.
func WithRunStarted(f func(ctx context.Context, m *natsjs.Msg, sc trace.SpanContext)) Option {
	return optionFunc(func(c *config) { c.started = f })
}

// Inject writes ctx's trace context into h.
func Inject(ctx context.Context, h nats.Header, opts ...Option) {
	newConfig(opts).prop.Inject(ctx, Header(h))
}

// Extract returns ctx with the trace context h carries.
func Extract(ctx context.Context, h nats.Header, opts ...Option) context.Context {
	if h == nil {
		return ctx
	}
	return newConfig(opts).prop.Extract(ctx, Header(h))
}

// Publish publishes msg to JetStream inside a producer span ("<subject>
// publish"), a child of ctx's, with the span's context in msg's headers.
func Publish(ctx context.Context, js jetstream.JetStream, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	return PublishWith(ctx, js, msg, nil, opts...)
}

// PublishWith is Publish with this package's options.
func PublishWith(ctx context.Context, js jetstream.JetStream, msg *nats.Msg, own []Option, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	c := newConfig(own)
	ctx, span := c.tp.Tracer(ScopeName).Start(ctx, msg.Subject+" publish",
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.operation.type", "send"),
			attribute.String("messaging.destination.name", msg.Subject)))
	defer span.End()
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	c.prop.Inject(ctx, Header(msg.Header))
	ack, err := js.PublishMsg(ctx, msg, opts...)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return nil, err
	}
	span.SetAttributes(AttrStreamSequence.Int64(int64(ack.Sequence)),
		attribute.String("messaging.message.id", strconv.FormatUint(ack.Sequence, 10)))
	return ack, nil
}

// Handler runs h inside a consumer span ("<subject> process"), a child of
// the trace context the message carries, with the delivery attempt and the
// stream sequence as attributes, linked to the earlier run's span when
// WithPreviousRun finds one; an error (a panic, recovered by natsjs, is
// one) sets the span's status.
func Handler(h natsjs.Handler, opts ...Option) natsjs.Handler {
	c := newConfig(opts)
	tracer := c.tp.Tracer(ScopeName)
	return func(ctx context.Context, m *natsjs.Msg) error {
		parent := ctx
		if hd := m.Header(); hd != nil {
			parent = c.prop.Extract(ctx, Header(hd))
		}
		startOpts := []trace.SpanStartOption{
			trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(
				attribute.String("messaging.system", "nats"),
				attribute.String("messaging.operation.type", "process"),
				attribute.String("messaging.destination.name", m.Subject()),
				attribute.String("messaging.message.id", strconv.FormatUint(m.StreamSeq(), 10)),
				AttrStreamSequence.Int64(int64(m.StreamSeq())),
				AttrDeliveryAttempt.Int(m.Attempt())),
		}
		if c.previous != nil && m.Attempt() > 1 {
			if sc, ok := c.previous(ctx, m); ok && sc.IsValid() {
				startOpts = append(startOpts, trace.WithLinks(PreviousAttempt(sc)))
			}
		}
		ctx, span := tracer.Start(parent, m.Subject()+" process", startOpts...)
		if c.started != nil {
			c.started(ctx, m, span.SpanContext())
		}
		err := process(span, func() error { return h(ctx, m) })
		if fn, ok := natsjs.ThenFunc(err); ok {
			// The span goes on until what the handler left is done.
			return natsjs.Then(func(ctx context.Context) error {
				return process(span, func() error { return fn(trace.ContextWithSpan(ctx, span)) })
			})
		}
		return err
	}
}

// process runs f, a message's processing, and ends its span with f's error
// (a panic included), unless f left the rest to Then.
func process(span trace.Span, f func() error) (err error) {
	then := false
	defer func() {
		if then {
			return
		}
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	err = f()
	_, then = natsjs.ThenFunc(err)
	return err
}
