package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/memjobs"
	"github.com/crew-go/crew/service/internal/api"
	"github.com/crew-go/crew/service/internal/kinds"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type fixture struct {
	pool *crew.Pool
	api  *api.API
	srv  *httptest.Server
	reg  *prometheus.Registry
}

func newFixture(t *testing.T, opts ...crew.Option) *fixture {
	t.Helper()
	pool, err := crew.New(append([]crew.Option{crew.WithWorkers(2), crew.WithQueueSize(8)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	a := &api.API{
		Pool:       pool,
		Jobs:       &memjobs.Runner{Pool: pool, Store: memjobs.NewStore(100, time.Hour, nil, nil), Kinds: kinds.New(), DefaultTimeout: time.Second, MaxTimeout: time.Minute},
		MaxNumbers: 1024, MaxBody: 4096, RequestTimeout: 5 * time.Second, RetryAfter: 2 * time.Second,
		Metrics: api.NewMetrics(reg),
	}
	srv := httptest.NewServer(checkAnswers(t, a.Handler()))
	t.Cleanup(func() {
		srv.Close()
		_ = pool.Close()
	})
	return &fixture{pool: pool, api: a, srv: srv, reg: reg}
}

type answer struct {
	code   int
	header http.Header
	body   map[string]any
	raw    string
}

func (f *fixture) do(t *testing.T, method, path, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{code: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if method != http.MethodHead && resp.StatusCode != http.StatusNoContent {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s: Content-Type %q, body %s", method, path, ct, raw)
		}
		if err := json.Unmarshal(raw, &a.body); err != nil {
			t.Fatalf("%s %s: body is not JSON: %s", method, path, raw)
		}
	}
	return a
}

func TestFactorialSumsAsTheArticlesLoadTest(t *testing.T) {
	f := newFixture(t)
	for body, want := range map[string]string{
		`{"numbers":[1,2,3]}`: "9",
		`{"numbers":[0,20]}`:  "2432902008176640001",
		// Past 2^64: written exactly, from 128 bits.
		`{"numbers":[20,20,20,20,20,20,20,20,20,20]}`: "24329020081766400000",
	} {
		resp, err := http.Post(f.srv.URL+"/v1/factorial", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Sum   json.Number
			Count int
		}
		dec := json.NewDecoder(resp.Body)
		dec.UseNumber()
		err = dec.Decode(&out)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || string(out.Sum) != want || out.Count != strings.Count(body, ",")+1 {
			t.Fatalf("%s: %d %+v %v, want sum %s", body, resp.StatusCode, out, err, want)
		}
	}
}

// TestFactorialBatchIsOneTaskPerParticipant: a batch of 1,000 numbers is
// not 1,000 tasks: crew.Map splits it among at most the pool's bound of
// participants (the request's goroutine helps), each a task that claims
// chunks, as the service README says.
func TestFactorialBatchIsOneTaskPerParticipant(t *testing.T) {
	f := newFixture(t)
	numbers := strings.TrimSuffix(strings.Repeat("20,", 1000), ",")
	before := f.pool.Stats().Submitted
	if a := f.do(t, "POST", "/v1/factorial", `{"numbers":[`+numbers+`]}`); a.code != 200 || a.body["count"] != 1000.0 {
		t.Fatalf("a batch of 1,000: %d %v", a.code, a.body)
	}
	if n := f.pool.Stats().Submitted - before; n > 2 {
		t.Fatalf("a batch of 1,000 on a pool of 2 submitted %d tasks, want at most 2 (one per participant)", n)
	}
}

// TestBadInputGetsAClearAnswer: every bad request is answered with the
// status that says what is wrong and a JSON {"error": ...}, never a crash
// or a hang.
func TestBadInputGetsAClearAnswer(t *testing.T) {
	f := newFixture(t)
	big := `{"numbers":[` + strings.Repeat("1,", 3000) + `1]}`
	for _, tc := range []struct {
		name, method, path, body string
		code                     int
		says                     string
	}{
		{"malformed JSON", "POST", "/v1/factorial", `{"numbers":[1,`, 400, "malformed JSON"},
		{"not JSON", "POST", "/v1/factorial", `{"numbers":nm}`, 400, `malformed JSON near byte 13: want an object such as {"numbers":[1,2,3]}`},
		{"unknown field", "POST", "/v1/factorial", `{"numbers":[1],"extra":true}`, 400, `unknown field "extra": want only "numbers"`},
		{"wrong type", "POST", "/v1/factorial", `{"numbers":"1,2"}`, 400, `"numbers": want an array of integers from 0 to 20, got a JSON string`},
		{"a number as a string", "POST", "/v1/factorial", `{"numbers":["1"]}`, 400, `"numbers": want an array of integers from 0 to 20, got a JSON string`},
		{"a fraction", "POST", "/v1/factorial", `{"numbers":[1.5]}`, 400, `"numbers": want an array of integers from 0 to 20, got a JSON number 1.5`},
		{"an array body", "POST", "/v1/factorial", `[1,2]`, 400, `the body: want an object such as {"numbers":[1,2,3]}, got a JSON array`},
		{"empty object", "POST", "/v1/factorial", `{}`, 400, `"numbers" is required: an array of 1 to 1024 integers`},
		{"null", "POST", "/v1/factorial", `null`, 400, `"numbers" is required`},
		{"null numbers", "POST", "/v1/factorial", `{"numbers":null}`, 400, `"numbers" is required`},
		{"no numbers", "POST", "/v1/factorial", `{"numbers":[]}`, 400, `"numbers" is required`},
		{"trailing data", "POST", "/v1/factorial", `{"numbers":[1]} {}`, 400, "trailing data"},
		{"empty body", "POST", "/v1/factorial", ``, 400, "empty body"},
		{"number too big", "POST", "/v1/factorial", `{"numbers":[3,21]}`, 400, "numbers[1] = 21"},
		{"negative number", "POST", "/v1/factorial", `{"numbers":[-1]}`, 400, "numbers[0] = -1"},
		{"too many numbers", "POST", "/v1/factorial", `{"numbers":[` + strings.Repeat("1,", 1024) + `1]}`, 400, "at most 1024"},
		{"body over the limit", "POST", "/v1/factorial", big, 413, "body over 4096 bytes"},
		{"wrong method", "GET", "/v1/factorial", ``, 405, "method GET not allowed"},
		{"wrong method on jobs", "DELETE", "/v1/jobs", ``, 405, "allowed: GET, POST"},
		{"wrong method on counts", "POST", "/v1/jobs/counts", ``, 405, "allowed: GET"},
		{"wrong method on retry", "GET", "/v1/jobs/0123456789abcdef/retry", ``, 405, "allowed: POST"},
		{"list: unknown state", "GET", "/v1/jobs?state=lost", ``, 400, `"state" "lost": want one of scheduled, waiting, queued, running, retrying, succeeded, failed, timed_out, canceled, not_run`},
		{"list: limit not a number", "GET", "/v1/jobs?limit=ten", ``, 400, `"limit" "ten": want an integer from 1 to 1000`},
		{"list: limit 0", "GET", "/v1/jobs?limit=0", ``, 400, `"limit" "0": want an integer from 1 to 1000`},
		{"list: negative limit", "GET", "/v1/jobs?limit=-1", ``, 400, `"limit" "-1"`},
		{"list: limit over the maximum", "GET", "/v1/jobs?limit=1001", ``, 400, `"limit" "1001": want an integer from 1 to 1000`},
		{"list: empty limit", "GET", "/v1/jobs?limit=", ``, 400, `"limit" "": want`},
		{"list: bad cursor", "GET", "/v1/jobs?after=x", ``, 400, `"after" "x": not a cursor this list gave`},
		{"list: unknown parameter", "GET", "/v1/jobs?status=failed", ``, 400, `unknown query parameter "status": want only "after", "kind", "limit", "queue", "state"`},
		{"list: bad queue", "GET", "/v1/jobs?queue=a.b", ``, 400, `"queue" "a.b": want 1 to 64 letters, digits`},
		{"replicas: jobs in memory", "GET", "/v1/replicas", ``, 501, `replicas: not kept by this job store`},
		{"replicas: a parameter", "GET", "/v1/replicas?x=1", ``, 400, `/v1/replicas takes no parameters`},
		{"list: unknown parameters", "GET", "/v1/jobs?a=1&b=2&c=3&d=4&e=5", ``, 400, `unknown query parameter "a", "b", "c", and 2 more: want only`},
		{"list: a parameter twice", "GET", "/v1/jobs?state=failed&state=queued", ``, 400, `"state" given 2 times: give it once`},
		{"list: malformed query", "GET", "/v1/jobs?state=%zz", ``, 400, `malformed query string: invalid URL escape "%zz"`},
		{"counts with a parameter", "GET", "/v1/jobs/counts?state=failed", ``, 400, `query "state=failed": /v1/jobs/counts takes no parameters`},
		{"retry of an unknown job", "POST", "/v1/jobs/0123456789abcdef/retry", ``, 404, `no job "0123456789abcdef"`},
		{"retry of no job id", "POST", "/v1/jobs/counts/retry", ``, 404, `no job "counts": a job id is 16`},
		{"unknown job", "GET", "/v1/jobs/0123456789abcdef", ``, 404, `no job "0123456789abcdef"`},
		{"not a job id", "GET", "/v1/jobs/nope", ``, 404, `no job "nope": a job id is 16 lowercase hex digits`},
		{"a 5000-byte id", "GET", "/v1/jobs/" + strings.Repeat("a", 5000), ``, 404, `(5000 bytes): a job id is 16`},
		{"an id with subject wildcards", "GET", "/v1/jobs/a.*.>", ``, 404, `a job id is 16`},
		{"unknown path", "GET", "/v2/anything", ``, 404, "no such endpoint"},
		{"job without kind", "POST", "/v1/jobs", `{}`, 400, `"kind" is required`},
		{"unknown kind", "POST", "/v1/jobs", `{"kind":"mine"}`, 400, `kind "mine"`},
		{"sleep without duration", "POST", "/v1/jobs", `{"kind":"sleep"}`, 400, `"duration" is required for sleep jobs`},
		{"bad duration", "POST", "/v1/jobs", `{"kind":"sleep","duration":"soon"}`, 400, `sleep job: "duration": want a duration such as "50ms", "2s" or "1m", got "soon"`},
		{"duration as number", "POST", "/v1/jobs", `{"kind":"sleep","duration":50}`, 400, `"duration": want a duration such as "50ms", "2s" or "1m", got 50`},
		{"kind as number", "POST", "/v1/jobs", `{"kind":7}`, 400, `"kind": want a string: sleep or factorial, got 7`},
		{"max_attempts as string", "POST", "/v1/jobs", `{"kind":"sleep","duration":"1s","max_attempts":"x"}`, 400, `"max_attempts": want an integer from 1 to 1000, got "x"`},
		{"run_at unparsable", "POST", "/v1/jobs", `{"kind":"sleep","duration":"1s","run_at":"tomorrow"}`, 400, `"run_at": want a time in RFC 3339`},
		{"run_at in the past", "POST", "/v1/jobs", `{"kind":"sleep","duration":"1s","run_at":"2020-01-01T00:00:00Z"}`, 400, `"run_at" 2020-01-01T00:00:00Z is in the past`},
		{"negative delay", "POST", "/v1/jobs", `{"kind":"sleep","duration":"1s","delay":"-5s"}`, 400, `"delay" -5s: want 0 or more`},
		{"run_at and delay", "POST", "/v1/jobs", `{"kind":"sleep","duration":"1s","delay":"5s","run_at":"2030-01-01T00:00:00Z"}`, 400, `give one or the other`},
		{"delay in memory", "POST", "/v1/jobs", `{"kind":"sleep","duration":"1s","delay":"5s"}`, 400, `needs the JetStream store`},
		{"periodic in memory", "PUT", "/v1/periodic/nightly", `{"every":"@daily","kind":"sleep","duration":"1s"}`, 501, `periodic jobs: not taken by this job store (they need the JetStream store)`},
		{"periodic list in memory", "GET", "/v1/periodic", ``, 501, `they need the JetStream store`},
		{"periodic with a query", "GET", "/v1/periodic?x=1", ``, 400, `/v1/periodic takes no parameters`},
		{"periodic: POST", "POST", "/v1/periodic/nightly", `{}`, 405, `allowed: DELETE, GET, PUT`},
		{"queues in memory", "GET", "/v1/queues", ``, 501, `queues: not kept by this job store (they need the JetStream store)`},
		{"queues with a query", "GET", "/v1/queues?x=1", ``, 400, `/v1/queues takes no parameters`},
		{"pause in memory", "POST", "/v1/queues/email/pause", ``, 501, `they need the JetStream store`},
		{"pause: GET", "GET", "/v1/queues/email/pause", ``, 405, `allowed: POST`},
		{"pause: until not a time", "POST", "/v1/queues/email/pause?until=soon", ``, 400, `"until" "soon": want a time to come in RFC 3339`},
		{"pause: until past", "POST", "/v1/queues/email/pause?until=2020-01-01T00:00:00Z", ``, 400, `want a time to come`},
		{"pause: another parameter", "POST", "/v1/queues/email/pause?for=1h", ``, 400, `query parameter "for": want until, once`},
		{"resume with a query", "POST", "/v1/queues/email/resume?x=1", ``, 400, `a resume takes no parameters`},
		{"queue as number", "POST", "/v1/jobs", `{"kind":"factorial","n":3,"queue":7}`, 400, `"queue": want a queue's name: 1 to 64 letters, digits, '-' or '_' (default "default"), got 7`},
		{"queue not a token", "POST", "/v1/jobs", `{"kind":"factorial","n":3,"queue":"a.b"}`, 400, `"queue" "a.b": want 1 to 64 letters, digits, '-' or '_'`},
		{"queue empty", "POST", "/v1/jobs", `{"kind":"factorial","n":3,"queue":""}`, 400, `"queue" "": want 1 to 64`},
		{"priority 0", "POST", "/v1/jobs", `{"kind":"factorial","n":3,"priority":0}`, 400, `"priority" 0: want an integer from 1 (first) to 4 (last); default 2`},
		{"priority 5", "POST", "/v1/jobs", `{"kind":"factorial","n":3,"priority":5}`, 400, `"priority" 5: want an integer from 1`},
		{"priority as text", "POST", "/v1/jobs", `{"kind":"factorial","n":3,"priority":"high"}`, 400, `"priority": want an integer from 1 (first) to 4 (last); default 2, got "high"`},
		{"priority null", "POST", "/v1/jobs", `{"kind":"factorial","n":3,"priority":null}`, 400, `"priority": want an integer`},
		{"max_attempts too many", "POST", "/v1/jobs", `{"kind":"sleep","duration":"1s","max_attempts":5000}`, 400, `"max_attempts" 5000: want 1 to 1000`},
		{"max_attempts zero", "POST", "/v1/jobs", `{"kind":"sleep","duration":"1s","max_attempts":0}`, 400, `"max_attempts" 0: want 1 to 1000`},
		{"max_attempts negative", "POST", "/v1/jobs", `{"kind":"sleep","duration":"1s","max_attempts":-1}`, 400, `"max_attempts" -1: want 1 to 1000`},
		{"max_attempts null", "POST", "/v1/jobs", `{"kind":"sleep","duration":"1s","max_attempts": null }`, 400, `"max_attempts": want an integer from 1 to 1000, got null`},
		{"n as string", "POST", "/v1/jobs", `{"kind":"factorial","n":"5"}`, 400, `factorial job: "n": want an integer, got a JSON string`},
		{"unknown job field", "POST", "/v1/jobs", `{"kind":"factorial","n":5,"x":1}`, 400, `factorial job: unknown field "x"`},
		{"factorial without n", "POST", "/v1/jobs", `{"kind":"factorial"}`, 400, `"n" from 0 to 20`},
		{"timeout too long", "POST", "/v1/jobs", `{"kind":"factorial","n":3,"timeout":"2h"}`, 400, "timeout 2h0m0s"},
		{"mixed fields", "POST", "/v1/jobs", `{"kind":"factorial","n":3,"duration":"1s"}`, 400, `factorial job: unknown field "duration"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := f.do(t, tc.method, tc.path, tc.body)
			msg, _ := a.body["error"].(string)
			if a.code != tc.code || !strings.Contains(msg, tc.says) {
				t.Fatalf("%s %s %.40q: %d %q, want %d saying %q", tc.method, tc.path, tc.body, a.code, msg, tc.code, tc.says)
			}
			if tc.code == 405 && a.header.Get("Allow") == "" {
				t.Fatal("405 without Allow")
			}
		})
	}
	// A "max_attempts" given is the job's bound, 1 to 1000: the answer
	// says only that, not the library's reading of 0 as the kind's default,
	// which the API does not offer.
	for _, n := range []string{"0", "-1", "5000"} {
		a := f.do(t, "POST", "/v1/jobs", `{"kind":"sleep","duration":"1s","max_attempts":`+n+`}`)
		if want := `"max_attempts" ` + n + `: want 1 to 1000`; a.code != 400 || a.body["error"] != want {
			t.Errorf("max_attempts %s: %d %q, want 400 %q", n, a.code, a.body["error"], want)
		}
	}
}

func TestJobLifecycle(t *testing.T) {
	f := newFixture(t)
	a := f.do(t, "POST", "/v1/jobs", `{"kind":"factorial","n":20}`)
	id, _ := a.body["id"].(string)
	if a.code != 202 || id == "" || a.header.Get("Location") != "/v1/jobs/"+id {
		t.Fatalf("POST /v1/jobs: %d %v %v", a.code, a.body, a.header)
	}
	var rec answer
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if rec = f.do(t, "GET", "/v1/jobs/"+id, ""); rec.body["state"] == "succeeded" {
			break
		}
	}
	if rec.body["state"] != "succeeded" || rec.body["result"] != float64(2432902008176640000) || rec.body["kind"] != "factorial" {
		t.Fatalf("job record: %v", rec.body)
	}
	// A job that outlives its timeout is recorded so.
	a = f.do(t, "POST", "/v1/jobs", `{"kind":"sleep","duration":"1m","timeout":"10ms"}`)
	id, _ = a.body["id"].(string)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if rec = f.do(t, "GET", "/v1/jobs/"+id, ""); rec.body["state"] == "timed_out" {
			break
		}
	}
	if rec.body["state"] != "timed_out" || !strings.Contains(rec.body["error"].(string), "timed out") {
		t.Fatalf("timed-out job record: %v", rec.body)
	}
	// DELETE cancels a running job, answers a second cancel the same, and
	// 409 for an ended job, naming its state.
	a = f.do(t, "POST", "/v1/jobs", `{"kind":"sleep","duration":"1m","timeout":"1m"}`)
	id, _ = a.body["id"].(string)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if rec = f.do(t, "GET", "/v1/jobs/"+id, ""); rec.body["state"] == "running" {
			break
		}
	}
	first := f.do(t, "DELETE", "/v1/jobs/"+id, "")
	second := f.do(t, "DELETE", "/v1/jobs/"+id, "")
	if first.code != 200 || first.body["state"] != "canceled" || first.body["canceled_while"] != "running" ||
		second.code != 200 || fmt.Sprint(second.body) != fmt.Sprint(first.body) {
		t.Fatalf("DELETE a running job: %d %v, then %d %v", first.code, first.body, second.code, second.body)
	}
	if ended := f.do(t, "DELETE", "/v1/jobs/"+idOf(t, f), ""); ended.code != 409 || !strings.Contains(ended.body["error"].(string), "has ended: succeeded") {
		t.Fatalf("DELETE an ended job: %d %v", ended.code, ended.body)
	}
	if unknown := f.do(t, "DELETE", "/v1/jobs/00000000000000ff", ""); unknown.code != 404 {
		t.Fatalf("DELETE an unknown job: %d %v", unknown.code, unknown.body)
	}
}

// idOf posts a factorial job and returns its id once it has succeeded.
func idOf(t *testing.T, f *fixture) string {
	t.Helper()
	a := f.do(t, "POST", "/v1/jobs", `{"kind":"factorial","n":3}`)
	id, _ := a.body["id"].(string)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if rec := f.do(t, "GET", "/v1/jobs/"+id, ""); rec.body["state"] == "succeeded" {
			return id
		}
	}
	t.Fatalf("job %s did not succeed", id)
	return ""
}

// TestFullQueueAnswers503WithRetryAfter: load is shed with a status a
// client or a load balancer knows to retry, never queued unseen.
func TestFullQueueAnswers503WithRetryAfter(t *testing.T) {
	f := newFixture(t)
	_ = f.pool.Pause() // nothing runs: the queue of 8 fills
	for range 8 {
		if a := f.do(t, "POST", "/v1/jobs", `{"kind":"sleep","duration":"1s"}`); a.code != 202 {
			t.Fatalf("filling the queue: %d %v", a.code, a.body)
		}
	}
	a := f.do(t, "POST", "/v1/jobs", `{"kind":"sleep","duration":"1s"}`)
	if a.code != 503 || a.header.Get("Retry-After") != "2" || !strings.Contains(a.body["error"].(string), "queue full") {
		t.Fatalf("full queue: %d %v %v", a.code, a.body, a.header)
	}
	// An online request waits for room up to its timeout, then sheds.
	f.api.RequestTimeout = 50 * time.Millisecond
	a = f.do(t, "POST", "/v1/factorial", `{"numbers":[1,2,3]}`)
	if a.code != 503 || a.header.Get("Retry-After") != "2" {
		t.Fatalf("online request on a full queue: %d %v", a.code, a.body)
	}
	_ = f.pool.Resume()
}

func TestShuttingDownAnswers503AndReadinessFails(t *testing.T) {
	f := newFixture(t)
	if a := f.do(t, "GET", "/readyz", ""); a.code != 200 {
		t.Fatalf("readyz before: %d", a.code)
	}
	f.api.SetStopping()
	if a := f.do(t, "GET", "/readyz", ""); a.code != 503 {
		t.Fatalf("readyz while stopping: %d", a.code)
	}
	if a := f.do(t, "GET", "/healthz", ""); a.code != 200 {
		t.Fatalf("healthz while stopping: %d (liveness must hold)", a.code)
	}
	if err := f.pool.Shutdown(context.Background(), crew.Drain); err != nil {
		t.Fatal(err)
	}
	for _, req := range [][2]string{{"/v1/jobs", `{"kind":"factorial","n":1}`}, {"/v1/factorial", `{"numbers":[1]}`}} {
		a := f.do(t, "POST", req[0], req[1])
		if a.code != 503 || a.body["error"] != "shutting down" {
			t.Fatalf("%s after shutdown: %d %v", req[0], a.code, a.body)
		}
	}
}

func TestRequestIDAndMetrics(t *testing.T) {
	f := newFixture(t)
	req, _ := http.NewRequest("GET", f.srv.URL+"/healthz", nil)
	req.Header.Set("X-Request-Id", "abc-123")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-Request-Id") != "abc-123" {
		t.Fatalf("request id not echoed: %q", resp.Header.Get("X-Request-Id"))
	}
	if a := f.do(t, "GET", "/healthz", ""); len(a.header.Get("X-Request-Id")) != 16 {
		t.Fatalf("no request id made: %v", a.header)
	}
	f.do(t, "GET", "/v1/jobs/unknown-id", "")
	if n := testutil.ToFloat64(metric(t, f.reg, "crewd_http_requests_total", "route", "/v1/jobs/{id}", "code", "404")); n != 1 {
		t.Fatalf("404s counted under the route: %v", n)
	}
}

// TestUnknownMethodsShareOneSeries: a method net/http takes but HTTP does
// not register (any token) is counted as _OTHER, so that a client making
// up methods does not make a metric series per request.
func TestUnknownMethodsShareOneSeries(t *testing.T) {
	f := newFixture(t)
	for _, m := range []string{"BREW", "get", "X0123456789ABCDEF", "PUT"} {
		for _, path := range []string{"/v1/jobs", "/nowhere"} {
			req, _ := http.NewRequest(m, f.srv.URL+path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	if n := testutil.ToFloat64(metric(t, f.reg, "crewd_http_requests_total", "route", "/v1/jobs", "method", "_OTHER", "code", "405")); n != 3 {
		t.Fatalf("unknown methods on /v1/jobs under _OTHER: %v, want 3", n)
	}
	if n := testutil.ToFloat64(metric(t, f.reg, "crewd_http_requests_total", "route", "other", "method", "_OTHER", "code", "404")); n != 3 {
		t.Fatalf("unknown methods on an unknown path under _OTHER: %v, want 3", n)
	}
	if n := testutil.ToFloat64(metric(t, f.reg, "crewd_http_requests_total", "route", "/v1/jobs", "method", "PUT", "code", "405")); n != 1 {
		t.Fatalf("PUT keeps its name: %v", n)
	}
	mfs, _ := f.reg.Gather()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "method" && (l.GetValue() == "BREW" || l.GetValue() == "get" || strings.HasPrefix(l.GetValue(), "X0")) {
					t.Fatalf("%s has a series for the client's method %q", mf.GetName(), l.GetValue())
				}
			}
		}
	}
}

func metric(t *testing.T, reg *prometheus.Registry, name string, labels ...string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "x"}, func() float64 { return m.GetCounter().GetValue() })
		}
	}
	t.Fatalf("no %s%v", name, labels)
	return nil
}

// TestReadyHook: /readyz fails with the reason while Ready says the pod
// cannot take work, and recovers with it; liveness holds throughout.
func TestReadyHook(t *testing.T) {
	f := newFixture(t)
	var down atomic.Bool
	f.api.Ready = func() error {
		if down.Load() {
			return errors.New("NATS connection RECONNECTING")
		}
		return nil
	}
	if a := f.do(t, "GET", "/readyz", ""); a.code != 200 {
		t.Fatalf("readyz: %d %v", a.code, a.body)
	}
	down.Store(true)
	if a := f.do(t, "GET", "/readyz", ""); a.code != 503 || a.body["reason"] != "NATS connection RECONNECTING" {
		t.Fatalf("readyz while not ready: %d %v", a.code, a.body)
	}
	if a := f.do(t, "GET", "/healthz", ""); a.code != 200 {
		t.Fatalf("healthz while not ready: %d", a.code)
	}
	down.Store(false)
	if a := f.do(t, "GET", "/readyz", ""); a.code != 200 {
		t.Fatalf("readyz after: %d %v", a.code, a.body)
	}
}

// unavailable is a Runner whose store cannot be reached.
type unavailable struct{}

func (unavailable) Submit(context.Context, jobs.Spec) (jobs.Record, error) {
	return jobs.Record{}, fmt.Errorf("%w: nats: no responders", jobs.ErrUnavailable)
}

func (unavailable) Get(context.Context, string) (jobs.Record, error) {
	return jobs.Record{}, fmt.Errorf("%w: nats: timeout", jobs.ErrUnavailable)
}

// TestUnavailableJobsAnswer503: a job store that cannot be reached is a
// 503 with Retry-After for a new job and for a lookup, never a 404 that
// would tell a client its job is gone.
func TestUnavailableJobsAnswer503(t *testing.T) {
	f := newFixture(t)
	f.api.Jobs = unavailable{}
	for _, req := range [][3]string{{"POST", "/v1/jobs", `{"kind":"factorial","n":1}`}, {"GET", "/v1/jobs/0123456789abcdef", ""}} {
		a := f.do(t, req[0], req[1], req[2])
		if a.code != 503 || a.header.Get("Retry-After") != "2" || !strings.Contains(a.body["error"].(string), "unavailable") {
			t.Fatalf("%s %s: %d %v %v", req[0], req[1], a.code, a.body, a.header)
		}
	}
}
