package clustertest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTrace is the proof that a job's trace crosses replicas, read from
// the compose file's trace backend (the collector's file of spans): a job
// posted to crewd1 (the only replica up, so it runs there) inside a trace
// the client started, crewd2 started, crewd1 stopped as Kubernetes stops a
// pod while the job runs, and the job run again on crewd2. One trace must
// hold, under the client's span: crewd1's server span for the route; the
// publish as its child (accepting a job writes nothing else); the interrupted run on
// crewd1 and the run on crewd2 that succeeded, both children of the
// publish, with the job's id and the second linked to the first.
func TestTrace(t *testing.T) {
	if os.Getenv("CREW_CLUSTER_TEST") == "" {
		t.Skip("the compose trace test runs with CREW_CLUSTER_TEST=1 (deploy/compose/cluster-test.sh): it needs a Docker engine")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skip("no Docker engine answers (docker info failed): not run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	transport := &http.Transport{}
	client := &http.Client{Transport: bearer{transport}}
	defer transport.CloseIdleConnections()

	t0 := time.Now()
	crewdImage := buildImages(ctx, t, readSettings(t))
	phase(t, "images built", t0)
	// A short shutdown deadline: crewd1 interrupts the job 2 s after the
	// stop instead of waiting for it.
	c := newCompose(t, crewdImage, natsImage, otelcolImage, "CREW_SHUTDOWN_TIMEOUT=2s")
	cl := &cluster{c: c, client: client, reps: &replicas{names: crewds[:2], addr: map[string]string{}, down: map[string]bool{}}}
	if _, err := c.run(ctx, "up", "-d", "otelcol", "crewd1"); err != nil { // and the nats-servers it depends on
		t.Fatal(err)
	}
	if err := c.containers(ctx, "otelcol", "crewd1"); err != nil {
		t.Fatal(err)
	}
	cl.waitReady(ctx, t, "crewd1")
	phase(t, "crewd1 ready", t0)

	// The client's own span, which the server span must continue.
	clientTrace, clientSpan := randomHex(16), randomHex(8)
	l := &load{client: client, reps: cl.reps}
	// Long enough to be running still when crewd1 stops, once crewd2 is
	// up (which took 7 s on a loaded machine).
	id := postTraced(ctx, t, l, "crewd1", `{"kind":"sleep","duration":"30s","timeout":"1m"}`, "00-"+clientTrace+"-"+clientSpan+"-01")
	// A first run writes its record only at its end (or when it is
	// interrupted): while it runs, the job reads running from the
	// consumer's state, with no traceparent yet.
	waitFor(ctx, t, 30*time.Second, "the job running on crewd1", func() (bool, string) {
		rec, err := l.getFrom(ctx, "crewd1", id)
		if err != nil {
			return false, err.Error()
		}
		return rec.state() == "running", fmt.Sprint(rec)
	})

	if _, err := c.run(ctx, "up", "-d", "crewd2"); err != nil {
		t.Fatal(err)
	}
	if err := c.containers(ctx, "crewd2"); err != nil {
		t.Fatal(err)
	}
	cl.waitReady(ctx, t, "crewd2")
	if err := c.stop(ctx, "crewd1"); err != nil {
		t.Fatal(err)
	}
	phase(t, "crewd2 ready, crewd1 stopped", t0)
	var second string
	waitFor(ctx, t, 90*time.Second, "the job succeeded on crewd2", func() (bool, string) {
		rec, err := l.getFrom(ctx, "crewd2", id)
		if err != nil {
			return false, err.Error()
		}
		second, _ = rec["trace"].(string)
		return rec.state() == "succeeded" && rec.attempts() == 2 && second != "", fmt.Sprint(rec)
	})
	phase(t, "job "+id+" succeeded on its second run", t0)

	var tr traceSpans
	waitFor(ctx, t, 60*time.Second, "the job's trace in the collector", func() (bool, string) {
		b, err := c.file(ctx, "otelcol", "/data/traces.jsonl")
		if err != nil {
			return false, err.Error()
		}
		tr, err = readTrace(b, clientTrace)
		if err != nil {
			return false, err.Error()
		}
		why := tr.check(id, clientSpan, "", spanID(second)) // the one run on crewd1
		return why == "", why
	})
	phase(t, fmt.Sprintf("trace %s: %d spans on crewd1 and crewd2, the second run linked to the first", clientTrace, len(tr)), t0)
}

// postTraced posts a job with a traceparent header and returns its id.
func postTraced(ctx context.Context, t *testing.T, l *load, name, body, traceparent string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.reps.url(name, "/v1/jobs"), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", traceparent)
	resp, err := l.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct {
		ID string `json:"id"`
	}
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(b, &r) != nil || r.ID == "" {
		t.Fatalf("POST /v1/jobs: %s %s", resp.Status, firstLine(b))
	}
	return r.ID
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// spanID is a traceparent's span id.
func spanID(traceparent string) string {
	parts := strings.Split(traceparent, "-")
	if len(parts) != 4 {
		return ""
	}
	return parts[2]
}

// span is what the test reads of one span in the collector's file
// (OTLP/JSON: ids in hex, attribute values typed).
type span struct {
	host, name string
	id, parent string
	attrs      map[string]string
	links      []string // "spanid crew.link"
	traceID    string
}

type traceSpans []span

type otlpKV struct {
	Key   string `json:"key"`
	Value struct {
		String string `json:"stringValue"`
		Int    any    `json:"intValue"`
	} `json:"value"`
}

func kvs(list []otlpKV) map[string]string {
	m := make(map[string]string, len(list))
	for _, kv := range list {
		m[kv.Key] = kv.Value.String
		if kv.Value.Int != nil {
			m[kv.Key] = fmt.Sprint(kv.Value.Int)
		}
	}
	return m
}

// readTrace reads the spans of one trace from the collector's file: one
// OTLP/JSON export request per line.
func readTrace(file []byte, traceID string) (traceSpans, error) {
	var out traceSpans
	sc := bufio.NewScanner(bytes.NewReader(file))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var req struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []otlpKV `json:"attributes"`
				} `json:"resource"`
				ScopeSpans []struct {
					Spans []struct {
						TraceID    string   `json:"traceId"`
						SpanID     string   `json:"spanId"`
						Parent     string   `json:"parentSpanId"`
						Name       string   `json:"name"`
						Attributes []otlpKV `json:"attributes"`
						Links      []struct {
							TraceID    string   `json:"traceId"`
							SpanID     string   `json:"spanId"`
							Attributes []otlpKV `json:"attributes"`
						} `json:"links"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return nil, fmt.Errorf("the collector's file: %v", err)
		}
		for _, rs := range req.ResourceSpans {
			host := kvs(rs.Resource.Attributes)["host.name"]
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					if s.TraceID != traceID {
						continue
					}
					sp := span{host: host, name: s.Name, id: s.SpanID, parent: s.Parent, attrs: kvs(s.Attributes), traceID: s.TraceID}
					for _, l := range s.Links {
						sp.links = append(sp.links, l.SpanID+" "+kvs(l.Attributes)["crew.link"])
					}
					out = append(out, sp)
				}
			}
		}
	}
	return out, sc.Err()
}

// find returns the span named name on host, with the given id if id is
// not empty.
func (tr traceSpans) find(host, name, id string) (span, bool) {
	for _, s := range tr {
		if s.host == host && s.name == name && (id == "" || s.id == id) {
			return s, true
		}
	}
	return span{}, false
}

// check says what the trace lacks ("" when nothing): the client's span
// the parent of crewd1's server span; the publish its child; the first run (crewd1, interrupted) and the second
// (crewd2, succeeded) children of the publish, with the job's id and
// attempt, the second linked to the first.
func (tr traceSpans) check(job, clientSpan, firstRun, secondRun string) string {
	names := make([]string, 0, len(tr))
	for _, s := range tr {
		names = append(names, s.host+": "+s.name)
	}
	lacks := func(what string) string { return fmt.Sprintf("%s; the trace holds %d spans: %v", what, len(tr), names) }
	srv, ok := tr.find("crewd1", "POST /v1/jobs", "")
	if !ok || srv.parent != clientSpan || srv.attrs["http.route"] != "/v1/jobs" {
		return lacks("no server span on crewd1 for the route, a child of the client's span")
	}
	// The job's subject is its partition's stream's: "jobs" for partition
	// 0, "jobs-k" for partition k (the id's first byte).
	subject := "jobs." + job
	if k, err := strconv.ParseUint(job[:2], 16, 8); err == nil && k > 0 {
		subject = fmt.Sprintf("jobs-%d.%s", k, job)
	}
	pub, ok := tr.find("crewd1", subject+" publish", "")
	if !ok || pub.parent != srv.id {
		return lacks("no publish on crewd1 under the server span")
	}
	run1, ok := tr.find("crewd1", subject+" process", firstRun)
	if !ok || run1.parent != pub.id {
		return lacks("no first run on crewd1 under the publish")
	}
	if run1.attrs["crewd.job.id"] != job || run1.attrs["crewd.job.attempt"] != "1" || run1.attrs["crewd.job.outcome"] != "interrupted" {
		return lacks(fmt.Sprintf("the first run's attributes %v: want the job's id, attempt 1, outcome interrupted", run1.attrs))
	}
	run2, ok := tr.find("crewd2", subject+" process", secondRun)
	if !ok || run2.parent != pub.id {
		return lacks("no second run on crewd2 under the publish")
	}
	if run2.attrs["crewd.job.id"] != job || run2.attrs["crewd.job.attempt"] != "2" || run2.attrs["crewd.job.outcome"] != "succeeded" {
		return lacks(fmt.Sprintf("the second run's attributes %v: want the job's id, attempt 2, outcome succeeded", run2.attrs))
	}
	if len(run2.links) != 1 || run2.links[0] != run1.id+" previous attempt" {
		return lacks(fmt.Sprintf("the second run's links %v: want one to the first run %s", run2.links, run1.id))
	}
	return ""
}
