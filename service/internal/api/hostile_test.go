package api_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// rawPost sends the headers of a POST with a body of 100 bytes and only
// its first byte, then reads the answer: a client stalled mid-body.
func rawPost(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, "POST /v1/factorial HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	return conn, bufio.NewReader(conn)
}

func read408(t *testing.T, conn net.Conn, br *bufio.Reader, says string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // a bound, not a wait
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || !resp.Close || !strings.Contains(string(raw), says) {
		t.Fatalf("stalled body: %d close=%v %s", resp.StatusCode, resp.Close, raw)
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("the connection after a 408: %v, want it closed", err)
	}
}

// TestStalledBodyGets408: a POST whose body stops coming is answered 408
// once the request timeout has passed, and its connection closed.
func TestStalledBodyGets408(t *testing.T) {
	f := newFixture(t)
	f.api.RequestTimeout = 100 * time.Millisecond
	conn, br := rawPost(t, f.srv.Listener.Addr().String())
	read408(t, conn, br, `"error":"body not received within the request timeout (100ms)"`)
}

// TestStalledAfterTheValueGets408: a body whose JSON value is whole but
// whose declared length is not sent stalls as any other: 408 at the
// request timeout, not 400 "trailing data"; and a whole value followed by
// more than the body limit of whitespace is 413. (The read of what follows
// the value failed, and that failure is the answer.)
func TestStalledAfterTheValueGets408(t *testing.T) {
	f := newFixture(t)
	f.api.RequestTimeout = 100 * time.Millisecond
	for _, path := range []string{"/v1/factorial", "/v1/jobs"} {
		body := `{"numbers":[3]}`
		if path == "/v1/jobs" {
			body = `{"kind":"factorial","n":3}`
		}
		conn, err := net.Dial("tcp", f.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := io.WriteString(conn, "POST "+path+" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"+body); err != nil {
			t.Fatal(err)
		}
		read408(t, conn, bufio.NewReader(conn), `"error":"body not received within the request timeout (100ms)"`)
	}
	a := f.do(t, "POST", "/v1/factorial", `{"numbers":[3]}`+strings.Repeat(" ", 5000))
	if a.code != 413 {
		t.Fatalf("a whole value and 5000 spaces past a 4096-byte limit: %d %v, want 413", a.code, a.body)
	}
	for _, trailing := range []string{" {}", " x", " 1", "]"} {
		if a := f.do(t, "POST", "/v1/factorial", `{"numbers":[3]}`+trailing); a.code != 400 || !strings.Contains(a.body["error"].(string), "trailing data") {
			t.Fatalf("trailing %q: %d %v", trailing, a.code, a.body)
		}
	}
}

// TestCutBodiesEndsAStalledBody: the stop does not wait for a body that
// is not coming, whatever the request timeout.
func TestCutBodiesEndsAStalledBody(t *testing.T) {
	f := newFixture(t)
	f.api.RequestTimeout = time.Hour
	conn, br := rawPost(t, f.srv.Listener.Addr().String())
	// The handler may not have started reading yet: the cut holds for the
	// reads that start after it too.
	f.api.CutBodies()
	read408(t, conn, br, "body not received before the stop")
}

// TestAnswersCloseTheConnectionFromTheStop: from SetStopping on, every
// answer says Connection: close, so that no keep-alive connection is left
// for the listener's close to cut under a request.
func TestAnswersCloseTheConnectionFromTheStop(t *testing.T) {
	f := newFixture(t)
	if a := f.do(t, "GET", "/healthz", ""); a.header.Get("Connection") == "close" {
		t.Fatal("Connection: close before the stop")
	}
	f.api.SetStopping()
	for _, path := range []string{"/healthz", "/readyz", "/v1/jobs/0123456789abcdef", "/nowhere"} {
		resp, err := http.Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if !resp.Close {
			t.Fatalf("GET %s while stopping: %d %v without Connection: close", path, resp.StatusCode, resp.Header)
		}
	}
}

// TestLiveHook: /healthz fails while Live says the process is of no more
// use (its NATS connection closed for good).
func TestLiveHook(t *testing.T) {
	f := newFixture(t)
	f.api.Live = func() error { return errors.New("NATS connection closed for good") }
	a := f.do(t, "GET", "/healthz", "")
	if a.code != 503 || a.body["reason"] != "NATS connection closed for good" {
		t.Fatalf("healthz: %d %v", a.code, a.body)
	}
}

// TestHugeHeadersGetJSON431: headers past the API's bound get its JSON
// answer, not net/http's plain text (which only headers past 1 MB get).
func TestHugeHeadersGetJSON431(t *testing.T) {
	f := newFixture(t)
	req, _ := http.NewRequest("GET", f.srv.URL+"/healthz", nil)
	req.Header.Set("X-Big", strings.Repeat("b", 70<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 431 || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(raw), `"error":"request line and headers of about`) {
		t.Fatalf("huge headers: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	// The refusal is that request's alone.
	if a := f.do(t, "GET", "/healthz", ""); a.code != 200 {
		t.Fatalf("healthz after huge headers: %d %v", a.code, a.body)
	}
}

// TestDeclaredNonJSONBodyIs415: a body declared as something else than
// JSON (curl -d declares a form) is refused, not parsed as JSON; no
// Content-Type at all is taken as JSON.
func TestDeclaredNonJSONBodyIs415(t *testing.T) {
	f := newFixture(t)
	for ct, want := range map[string]int{
		"text/plain":                        415,
		"application/x-www-form-urlencoded": 415,
		"multipart/form-data; boundary=x":   415,
		"application/json; charset=utf-8":   200,
		"application/problem+json":          200,
		"":                                  200,
		"not a / type;;":                    415,
	} {
		for _, path := range []string{"/v1/factorial", "/v1/jobs"} {
			body := `{"numbers":[3]}`
			if path == "/v1/jobs" {
				body = `{"kind":"factorial","n":3}`
			}
			req, _ := http.NewRequest("POST", f.srv.URL+path, strings.NewReader(body))
			if ct != "" {
				req.Header.Set("Content-Type", ct)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want == 200 && path == "/v1/jobs" {
				want = 202
			}
			if resp.StatusCode != want || want == 415 && !strings.Contains(string(raw), `the body is JSON; send the header \"Content-Type: application/json\"`) {
				t.Fatalf("POST %s as %q: %d %s, want %d", path, ct, resp.StatusCode, raw, want)
			}
			if want == 200 || want == 202 {
				want = 200
			}
			// curl -d's type, whole, not cut mid-word, and what to do.
			if ct == "application/x-www-form-urlencoded" && !strings.Contains(string(raw), `Content-Type \"application/x-www-form-urlencoded\" (curl -d sends a form unless told otherwise)`) {
				t.Fatalf("POST %s as a form: %s", path, raw)
			}
		}
	}
}

// TestIdempotencyKey: POST /v1/jobs under an Idempotency-Key answers the
// same job to the same request (202, Idempotent-Replayed), 422 to another
// request under the key, and 400 to a key that is no key.
func TestIdempotencyKey(t *testing.T) {
	f := newFixture(t)
	post := func(body string, keys ...string) (int, http.Header, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("POST", f.srv.URL+"/v1/jobs", strings.NewReader(body))
		for _, k := range keys {
			req.Header.Add("Idempotency-Key", k)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, resp.Header, m
	}
	code, h, first := post(`{"kind":"factorial","n":5}`, `"8e03978e-40d5-43e8-bc93-6894a57f9324"`)
	if code != 202 || h.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %v %v", code, h, first)
	}
	// Quoted (the draft's structured-field string) or bare: the same key.
	for _, k := range []string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`, `8e03978e-40d5-43e8-bc93-6894a57f9324`} {
		code, h, again := post(`{"n":5,"kind":"factorial"}`, k)
		if code != 202 || again["id"] != first["id"] || h.Get("Idempotent-Replayed") != "true" || h.Get("Location") != "/v1/jobs/"+first["id"].(string) {
			t.Fatalf("again with %s: %d %v %v, want %v", k, code, h, again, first["id"])
		}
	}
	if code, _, m := post(`{"kind":"factorial","n":6}`, "8e03978e-40d5-43e8-bc93-6894a57f9324"); code != 422 || !strings.Contains(m["error"].(string), "idempotency key reused for another request") {
		t.Fatalf("another request under the key: %d %v", code, m)
	}
	for name, keys := range map[string][]string{
		"empty":         {`""`},
		"too long":      {strings.Repeat("k", 256)},
		"not ASCII":     {"clé"},
		"escaped quote": {`"a\"b"`},
		"two keys":      {"a", "b"},
	} {
		if code, _, m := post(`{"kind":"factorial","n":5}`, keys...); code != 400 || !strings.HasPrefix(m["error"].(string), "Idempotency-Key: ") {
			t.Fatalf("%s: %d %v", name, code, m)
		}
	}
}

// TestHostileListQueries: a list query built to hurt (a huge cursor, a
// query string past the headers' bound, wildcards and NULs in the kind,
// thousands of unknown parameters) gets a short JSON answer that names the
// parameter, or an empty list: never an echo of its kilobytes, never a
// subject wildcard matched.
func TestHostileListQueries(t *testing.T) {
	f := newFixture(t)
	id := idOf(t, f)
	for _, tc := range []struct {
		name, query string
		code        int
		says        string
	}{
		{"a 60 KB cursor", "after=" + strings.Repeat("9", 60<<10), 400, `"after" "` + strings.Repeat("9", 40) + `": not a cursor this list gave`},
		{"a query string past the headers' bound", "after=" + strings.Repeat("a", 70<<10), 431, "request line and headers of about"},
		{"a kind of 300 bytes", "kind=" + strings.Repeat("k", 300), 400, `"kind" of 300 bytes: want at most 200`},
		{"5,000 unknown parameters", strings.Repeat("x=1&", 2500) + strings.Repeat("y=&", 2500), 400, `unknown query parameter "x", "y": want only`},
		{"a parameter 1,000 times", strings.Repeat("limit=1&", 1000), 400, `"limit" given 1000 times`},
		{"a NUL in a parameter's name", "st%00ate=failed", 400, `unknown query parameter "st\x00ate"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := f.do(t, "GET", "/v1/jobs?"+tc.query, "")
			msg, _ := a.body["error"].(string)
			if a.code != tc.code || !strings.Contains(msg, tc.says) || len(msg) > 400 {
				t.Fatalf("%d %.300q, want %d saying %q in at most 400 bytes", a.code, msg, tc.code, tc.says)
			}
		})
	}
	for _, kind := range []string{"*", "a.>", ">", "factorial.*", "%00", "factorial%00", "sleep%20", "%2A"} {
		a := f.do(t, "GET", "/v1/jobs?kind="+kind, "")
		if jobs, _ := a.body["jobs"].([]any); a.code != 200 || len(jobs) != 0 {
			t.Fatalf("kind=%s: %d %v, want no job", kind, a.code, a.body)
		}
	}
	if a := f.do(t, "GET", "/v1/jobs?kind=factorial", ""); len(a.body["jobs"].([]any)) != 1 {
		t.Fatalf("kind=factorial after the wildcards: %v, want the job %s", a.body, id)
	}
}

// TestNumbersRefusedByTheirCount: a factorial request with more numbers
// than allowed is refused naming the count, and is refused before the
// numbers are decoded: a body of half a million small numbers costs a few
// times its size, not a slice of them (it cost 9.5 MiB a 1 MiB request,
// so that a hundred such requests held a gigabyte).
func TestNumbersRefusedByTheirCount(t *testing.T) {
	f := newFixture(t)
	many := func(n int) string { return `{"numbers":[` + strings.Repeat("1,", n-1) + `1]}` }
	if a := f.do(t, "POST", "/v1/factorial", many(1024)); a.code != 200 {
		t.Fatalf("1024 numbers: %d %v", a.code, a.body)
	}
	a := f.do(t, "POST", "/v1/factorial", many(1025))
	if a.code != 400 || a.body["error"] != "1025 numbers: at most 1024 in one request" {
		t.Fatalf("1025 numbers: %d %v", a.code, a.body)
	}
	for body, want := range map[string]string{
		`{"numbers":[1,"a"]}`: `"numbers": want an array of integers from 0 to 20, got a JSON string`,
		`{"numbers":{}}`:      `"numbers": want an array of integers from 0 to 20, got a JSON object`,
		`{"numbers":[1.5]}`:   `"numbers": want an array of integers from 0 to 20, got a JSON number 1.5`,
	} {
		if a := f.do(t, "POST", "/v1/factorial", body); a.code != 400 || a.body["error"] != want {
			t.Errorf("%s: %d %v, want 400 %q", body, a.code, a.body, want)
		}
	}

	f.api.MaxBody = 1 << 20
	body := many(500_000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	a = f.do(t, "POST", "/v1/factorial", body)
	runtime.ReadMemStats(&after)
	if a.code != 400 || !strings.HasPrefix(a.body["error"].(string), "500000 numbers") {
		t.Fatalf("500,000 numbers: %d %v", a.code, a.body)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 5*uint64(len(body)) {
		t.Fatalf("a body of %d bytes allocated %d bytes", len(body), got)
	}
}

// TestUIFormsBounded: a form posted to the UI is read as the API reads a
// JSON body: a body that stalls is answered 408 at the request timeout
// (its connection closed), one over the body limit 413, both before the
// UI sees them; a whole form reaches the UI parsed.
func TestUIFormsBounded(t *testing.T) {
	f := newFixture(t)
	f.api.RequestTimeout = 100 * time.Millisecond
	f.api.UI = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ui saw "+r.PostForm.Get("a"))
	})
	f.srv.Config.Handler = checkAnswers(t, f.api.Handler())
	conn, err := net.Dial("tcp", f.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /ui/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\na="); err != nil {
		t.Fatal(err)
	}
	read408(t, conn, bufio.NewReader(conn), "body not received within the request timeout (100ms)")

	post := func(body string) (int, string) {
		resp, err := http.Post(f.srv.URL+"/ui/login", "application/x-www-form-urlencoded", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	if code, body := post("a=" + strings.Repeat("x", 5000)); code != http.StatusRequestEntityTooLarge || strings.Contains(body, "ui saw") {
		t.Fatalf("a form over the body limit: %d %s", code, body)
	}
	if code, body := post("a=b"); code != 200 || body != "ui saw b" {
		t.Fatalf("a form: %d %s", code, body)
	}
}
