package jsjobs_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestAJobsTraceCrossesRunners: a job submitted inside a request's span
// on one runner and run by another's Source makes one trace: the publish
// is a child of the request (the only write of the submit), the run a child of
// the publish (its context carried in the message's headers), marked with
// the job's id, kind, attempt and outcome.
func TestAJobsTraceCrossesRunners(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		otel.SetTracerProvider(prevTP)
		otel.SetTextMapPropagator(prevProp)
	})

	c := newCluster(t)
	front, back := c.runner(t, jsConfig()), c.runner(t, jsConfig())
	ctx, request := tp.Tracer("test").Start(context.Background(), "POST /v1/jobs")
	job, err := front.Submit(ctx, jobstest.Factorial(5))
	request.End()
	if err != nil {
		t.Fatal(err)
	}
	consume(t, back)
	eventually(t, front, job.ID, jobs.Succeeded)

	byName := func(name string) sdktrace.ReadOnlySpan {
		for range 500 {
			for _, s := range rec.Ended() {
				if s.Name() == name {
					return s
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("no span %q in %d spans", name, len(rec.Ended()))
		return nil
	}
	pub, run := byName("jobs."+job.ID+" publish"), byName("jobs."+job.ID+" process")
	reqID := request.SpanContext()
	for _, s := range []sdktrace.ReadOnlySpan{pub, run} {
		if s.SpanContext().TraceID() != reqID.TraceID() {
			t.Fatalf("%s is in trace %v, not the request's %v", s.Name(), s.SpanContext().TraceID(), reqID.TraceID())
		}
	}
	if pub.Parent().SpanID() != reqID.SpanID() {
		t.Fatal("the publish is not a child of the request")
	}
	if run.Parent().SpanID() != pub.SpanContext().SpanID() {
		t.Fatalf("the run's parent is %v, not the publish %v", run.Parent().SpanID(), pub.SpanContext().SpanID())
	}
	want := map[string]string{"crew.job.id": job.ID, "crew.job.kind": "factorial", "crew.job.attempt": "1", "crew.job.outcome": "succeeded"}
	for _, kv := range run.Attributes() {
		if w, ok := want[string(kv.Key)]; ok {
			if kv.Value.Emit() != w {
				t.Fatalf("%s = %s, want %s", kv.Key, kv.Value.Emit(), w)
			}
			delete(want, string(kv.Key))
		}
	}
	if len(want) != 0 {
		t.Fatalf("the run's span lacks %v: %v", want, run.Attributes())
	}
}

// TestARunLinksToTheJobsPreviousRun: the record keeps the traceparent of
// the job's latest sampled run, and a run after an interrupted one links
// to it (a redelivered message carries only its publish's context).
func TestARunLinksToTheJobsPreviousRun(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	traceparent := func(ctx context.Context) string {
		c := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, c)
		return c["traceparent"]
	}
	c := newCluster(t)
	r := c.runner(t, jsConfig())
	long := jobstest.Timed(jobstest.Sleep(time.Minute), time.Minute)
	job := submit(t, r, long)
	body, _ := json.Marshal(long)

	runCtx, cancel := context.WithCancel(context.Background())
	ctx1, run1 := tp.Tracer("test").Start(runCtx, "run 1")
	done := make(chan error, 1)
	go func() { done <- r.HandleDelivery(ctx1, "jobs."+job.ID, body) }()
	if got := eventually(t, r, job.ID, jobs.Running); got.Trace != traceparent(ctx1) {
		t.Fatalf("running record's trace %q, want the run's %q", got.Trace, traceparent(ctx1))
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("an interrupted run returned nil")
	}
	run1.End()

	ctx2, run2 := tp.Tracer("test").Start(context.Background(), "run 2")
	short, _ := json.Marshal(jobstest.Sleep(time.Millisecond))
	if err := r.HandleDelivery(ctx2, "jobs."+job.ID, short); err != nil {
		t.Fatal(err)
	}
	run2.End()
	if got := eventually(t, r, job.ID, jobs.Succeeded); got.Trace != traceparent(ctx2) || got.Attempts != 2 {
		t.Fatalf("finished record: %+v, want attempt 2 and the second run's trace %q", got, traceparent(ctx2))
	}
	var second sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "run 2" {
			second = s
		}
	}
	if second == nil {
		t.Fatal("no span of the second run")
	}
	links := second.Links()
	if len(links) != 1 || links[0].SpanContext.SpanID() != run1.SpanContext().SpanID() ||
		len(links[0].Attributes) != 1 || links[0].Attributes[0].Value.AsString() != "previous attempt" {
		t.Fatalf("the second run's links: %+v, want one to the first run %v", links, run1.SpanContext().SpanID())
	}

	// Each run's time, by kind and outcome, its trace as exemplar.
	reg := prometheus.NewRegistry()
	reg.MustRegister(r.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exemplars := map[string]string{} // outcome -> trace id
	for _, mf := range mfs {
		if mf.GetName() != "crew_job_run_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] != "sleep" || m.GetHistogram().GetSampleCount() != 1 {
				t.Fatalf("crew_job_run_seconds%v: %d runs, want 1 of kind sleep", labels, m.GetHistogram().GetSampleCount())
			}
			for _, b := range m.GetHistogram().GetBucket() {
				for _, l := range b.GetExemplar().GetLabel() {
					exemplars[labels["outcome"]] = l.GetValue()
				}
			}
		}
	}
	if exemplars["interrupted"] != run1.SpanContext().TraceID().String() || exemplars["succeeded"] != run2.SpanContext().TraceID().String() {
		t.Fatalf("crew_job_run_seconds exemplars by outcome %v, want each run's trace", exemplars)
	}
}
