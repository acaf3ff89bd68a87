package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs/memjobs"
	"github.com/crew-go/crew/service/internal/api"
	"github.com/crew-go/crew/service/internal/auth"
	"github.com/crew-go/crew/service/internal/kinds"
)

// tokenFixture is an API that asks for tokens: one a scope, and one that
// holds every scope, from a token file in a temporary directory.
type tokenFixture struct {
	srv    *httptest.Server
	file   string
	tokens map[string]string // by name: read, submit, admin, all
	log    *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTokenFixture(t *testing.T) *tokenFixture {
	t.Helper()
	f := &tokenFixture{file: filepath.Join(t.TempDir(), "tokens"), tokens: map[string]string{}, log: &syncBuffer{}}
	var lines []string
	for name, scopes := range map[string]string{"read": "jobs:read", "submit": "jobs:submit", "admin": "jobs:admin", "all": "jobs:read,jobs:submit,jobs:admin"} {
		token, line, err := auth.New(name, scopes)
		if err != nil {
			t.Fatal(err)
		}
		f.tokens[name] = token
		lines = append(lines, line)
	}
	if err := os.WriteFile(f.file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := auth.Open(f.file, nil)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := crew.New(crew.WithWorkers(2), crew.WithQueueSize(64))
	if err != nil {
		t.Fatal(err)
	}
	a := &api.API{
		Pool:       pool,
		Jobs:       &memjobs.Runner{Pool: pool, Store: memjobs.NewStore(1000, time.Hour, nil, nil), Kinds: kinds.New(), DefaultTimeout: time.Second, MaxTimeout: time.Minute},
		MaxNumbers: 1024, MaxBody: 4096, RequestTimeout: 5 * time.Second, RetryAfter: time.Second,
		Log:  slog.New(slog.NewJSONHandler(f.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Auth: tokens,
	}
	f.srv = httptest.NewServer(checkAnswers(t, a.Handler()))
	t.Cleanup(func() {
		f.srv.Close()
		_ = pool.Close()
	})
	return f
}

// call sends a request with the Authorization header auth ("" for none).
func (f *tokenFixture) call(t *testing.T, method, path, body, authz string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(raw)
}

// TestEveryRouteAsksForItsScope: every route and method, called with no
// token, a bad one, and a token of each scope: 401 with a challenge
// without a token or with a bad one, 403 naming the scope missing, and
// past both with the scope; the probes ask for nothing.
func TestEveryRouteAsksForItsScope(t *testing.T) {
	f := newTokenFixture(t)
	const jobBody = `{"kind":"sleep","duration":"1ms"}`
	routes := []struct {
		method, path, body string
		scope              auth.Scope // "" for none
	}{
		{"POST", "/v1/factorial", `{"numbers":[3]}`, auth.Submit},
		{"POST", "/v1/jobs", jobBody, auth.Submit},
		{"GET", "/v1/jobs", "", auth.Read},
		{"HEAD", "/v1/jobs", "", auth.Read},
		{"GET", "/v1/jobs/counts", "", auth.Read},
		{"GET", "/v1/jobs/0123456789abcdef", "", auth.Read},
		{"DELETE", "/v1/jobs/0123456789abcdef", "", auth.Admin},
		{"POST", "/v1/jobs/0123456789abcdef/retry", "", auth.Admin},
		{"GET", "/v1/periodic", "", auth.Read},
		{"GET", "/v1/periodic/nightly", "", auth.Read},
		{"PUT", "/v1/periodic/nightly", `{"every":"@every 1h","kind":"sleep","duration":"1ms"}`, auth.Admin},
		{"DELETE", "/v1/periodic/nightly", "", auth.Admin},
		{"GET", "/v1/queues", "", auth.Read},
		{"POST", "/v1/queues/email/pause", "", auth.Admin},
		{"POST", "/v1/queues/email/resume", "", auth.Admin},
		{"GET", "/healthz", "", ""},
		{"GET", "/readyz", "", ""},
	}
	callers := []struct{ name, authz string }{
		{"no token", ""},
		{"another scheme", "Basic " + f.tokens["all"]},
		{"a bad token", "Bearer crew_not-a-token-of-this-file"},
		{"a malformed token", "Bearer " + f.tokens["all"] + "!"},
		{"read", "Bearer " + f.tokens["read"]},
		{"submit", "Bearer " + f.tokens["submit"]},
		{"admin", "Bearer " + f.tokens["admin"]},
		{"all", "bearer " + f.tokens["all"]}, // the scheme is case-insensitive
	}
	for _, r := range routes {
		for _, c := range callers {
			code, h, body := f.call(t, r.method, r.path, r.body, c.authz)
			want := "past"
			switch {
			case r.scope == "":
			case c.authz == "" || strings.HasPrefix(c.name, "a ") || c.name == "another scheme":
				want = "401"
			case c.name != "all" && c.name != strings.TrimPrefix(string(r.scope), "jobs:"):
				want = "403"
			}
			got := fmt.Sprint(code)
			if code != 401 && code != 403 {
				got = "past"
			}
			if got != want {
				t.Errorf("%s %s with %s: %d %s, want %s", r.method, r.path, c.name, code, body, want)
				continue
			}
			challenge := h.Get("WWW-Authenticate")
			switch want {
			case "401":
				if !strings.HasPrefix(challenge, `Bearer realm="crewd"`) || (c.authz != "") != strings.Contains(challenge, `error="invalid_token"`) {
					t.Errorf("%s %s with %s: 401 with WWW-Authenticate %q", r.method, r.path, c.name, challenge)
				}
			case "403":
				if !strings.Contains(challenge, `scope="`+string(r.scope)+`"`) || (r.method != "HEAD" && !strings.Contains(body, "lacks scope "+string(r.scope))) {
					t.Errorf("%s %s with %s: 403 with WWW-Authenticate %q, body %s: want the scope named", r.method, r.path, c.name, challenge, body)
				}
			}
			for _, token := range f.tokens {
				if strings.Contains(body, token) || strings.Contains(fmt.Sprint(h), token) {
					t.Fatalf("%s %s with %s: the answer echoes a token: %s", r.method, r.path, c.name, body)
				}
			}
		}
	}
	// A method a route has not, with a token: 405; without one: 401, so
	// that an unknown caller learns nothing of a route.
	if code, _, _ := f.call(t, "PATCH", "/v1/jobs", "", "Bearer "+f.tokens["read"]); code != 405 {
		t.Errorf("PATCH /v1/jobs with a token: %d, want 405", code)
	}
	if code, _, _ := f.call(t, "PATCH", "/v1/jobs", "", ""); code != 401 {
		t.Errorf("PATCH /v1/jobs without a token: %d, want 401", code)
	}
	for name, token := range f.tokens {
		if strings.Contains(f.log.String(), token) {
			t.Fatalf("the log holds token %s", name)
		}
	}
}

// TestAuditAndSubmitter: a job records the name of the token that
// submitted it; each call that changes jobs, done or refused, writes one
// audit line saying who, what, which job and the outcome, and no line
// holds a token.
func TestAuditAndSubmitter(t *testing.T) {
	f := newTokenFixture(t)
	code, h, body := f.call(t, "POST", "/v1/jobs", `{"kind":"sleep","duration":"900ms"}`, "Bearer "+f.tokens["submit"])
	if code != 202 {
		t.Fatalf("submit: %d %s", code, body)
	}
	id := strings.TrimPrefix(h.Get("Location"), "/v1/jobs/")
	_, _, body = f.call(t, "GET", "/v1/jobs/"+id, "", "Bearer "+f.tokens["read"])
	var rec struct{ Submitter string }
	if err := json.Unmarshal([]byte(body), &rec); err != nil || rec.Submitter != "submit" {
		t.Fatalf("the job reads %s: want submitter \"submit\"", body)
	}
	f.call(t, "DELETE", "/v1/jobs/"+id, "", "Bearer "+f.tokens["read"]) // refused: 403
	f.call(t, "DELETE", "/v1/jobs/"+id, "", "Bearer "+f.tokens["admin"])
	f.call(t, "POST", "/v1/jobs", `{}`, "Bearer nope") // refused: 401
	f.call(t, "GET", "/v1/jobs", "", "Bearer "+f.tokens["read"])
	var audits []map[string]any
	for line := range strings.Lines(f.log.String()) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "audit" {
			audits = append(audits, m)
		}
		for name, token := range f.tokens {
			if strings.Contains(line, token) {
				t.Fatalf("a log line holds token %s: %s", name, line)
			}
		}
	}
	want := []string{
		"submit POST /v1/jobs 202 done " + id,
		"read DELETE /v1/jobs/{id} 403 refused " + id,
		"admin DELETE /v1/jobs/{id} 200 done " + id,
		"- POST /v1/jobs 401 refused <nil>",
	}
	if len(audits) != len(want) {
		t.Fatalf("%d audit lines, want %d (a GET is not audited): %v", len(audits), len(want), audits)
	}
	for i, m := range audits {
		got := fmt.Sprintf("%v %v %v %v %v", m["who"], m["action"], m["status"], m["outcome"], m["job"])
		if got != strings.Trim(want[i], " ") {
			t.Errorf("audit line %d: %q, want %q", i, got, want[i])
		}
	}
}

// TestTokensRotateUnderLoad: while clients call without pause, the token
// file is replaced (as a Secret's volume is) 40 times, a token of its own
// each time beside the one the clients hold: no call fails, and the last
// file's token is taken within about a second, the one before refused.
func TestTokensRotateUnderLoad(t *testing.T) {
	f := newTokenFixture(t)
	base, err := os.ReadFile(f.file)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	calls, failed := 0, []string{}
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, _, body := f.call(t, "GET", "/v1/jobs/counts", "", "Bearer "+f.tokens["read"])
				mu.Lock()
				calls++
				if code != 200 {
					failed = append(failed, fmt.Sprint(code, " ", body))
				}
				mu.Unlock()
			}
		})
	}
	var last, before string
	for i := range 40 {
		token, line, err := auth.New(fmt.Sprintf("rotated-%d", i), "jobs:read")
		if err != nil {
			t.Fatal(err)
		}
		tmp := f.file + ".new"
		if err := os.WriteFile(tmp, append(append([]byte{}, base...), line+"\n"...), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, f.file); err != nil {
			t.Fatal(err)
		}
		before, last = last, token
		time.Sleep(50 * time.Millisecond) // the pace of the rotations, not an assertion
	}
	deadline := time.Now().Add(auth.CheckEvery + 2*time.Second)
	for {
		code, _, _ := f.call(t, "GET", "/v1/jobs/counts", "", "Bearer "+last)
		old, _, _ := f.call(t, "GET", "/v1/jobs/counts", "", "Bearer "+before)
		if code == 200 && old == 401 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the last token answers %d, the one before %d, %v after the last rotation: want 200 and 401", code, old, auth.CheckEvery+2*time.Second)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if len(failed) > 0 || calls < 100 {
		t.Fatalf("%d calls, %d failed during the rotations: %v", calls, len(failed), failed[:min(len(failed), 5)])
	}
	t.Logf("%d calls through 40 rotations, none failed", calls)
}

// TestForeignRequestsRefused: a browser's request from another site (its
// Origin or Sec-Fetch-Site says so) is refused on every /v1/ route, with or
// without tokens; without tokens on loopback, so is a request to a name
// that is not this machine's (DNS rebinding). Probes, and clients that are
// not browsers, are answered.
func TestForeignRequestsRefused(t *testing.T) {
	pool, err := crew.New(crew.WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	a := &api.API{Pool: pool, Jobs: &memjobs.Runner{Pool: pool, Store: memjobs.NewStore(100, time.Hour, nil, nil), Kinds: kinds.New(), DefaultTimeout: time.Second, MaxTimeout: time.Minute},
		MaxNumbers: 16, MaxBody: 4096, RequestTimeout: time.Second, RetryAfter: time.Second, LocalOnly: true}
	h := checkAnswers(t, a.Handler())
	for _, tc := range []struct {
		name, method, path, host string
		header                   map[string]string
		want                     int
	}{
		{"a client", "GET", "/v1/jobs/counts", "127.0.0.1:8080", nil, 200},
		{"localhost", "GET", "/v1/jobs/counts", "localhost:8080", nil, 200},
		{"[::1]", "GET", "/v1/jobs/counts", "[::1]:8080", nil, 200},
		{"the same origin", "GET", "/v1/jobs/counts", "localhost:8080", map[string]string{"Origin": "http://localhost:8080", "Sec-Fetch-Site": "same-origin"}, 200},
		{"another origin", "POST", "/v1/jobs", "127.0.0.1:8080", map[string]string{"Origin": "https://evil.example"}, 403},
		{"a null origin", "POST", "/v1/jobs", "127.0.0.1:8080", map[string]string{"Origin": "null"}, 403},
		{"cross-site", "POST", "/v1/jobs", "127.0.0.1:8080", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"same-site", "DELETE", "/v1/jobs/0123456789abcdef", "127.0.0.1:8080", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"a rebound name", "GET", "/v1/jobs", "evil.example:8080", nil, 403},
		{"a rebound name, same origin", "GET", "/v1/jobs", "evil.example:8080", map[string]string{"Origin": "http://evil.example:8080"}, 403},
		{"a probe by any name", "GET", "/healthz", "10.0.0.7:8080", nil, 200},
	} {
		req := httptest.NewRequest(tc.method, "http://"+tc.host+tc.path, strings.NewReader(`{"kind":"sleep","duration":"1ms"}`))
		req.Host = tc.host
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s: %s %s (Host %s): %d %s, want %d", tc.name, tc.method, tc.path, tc.host, rec.Code, rec.Body, tc.want)
		}
	}
}
