package probe

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeCrewd accepts a job and reports it as states[i] on its i-th read
// (the last one after that); accept is the POST's status.
func fakeCrewd(t *testing.T, accept int, states ...string) *httptest.Server {
	var reads atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/jobs":
			w.WriteHeader(accept)
			if accept == http.StatusAccepted {
				fmt.Fprint(w, `{"id":"j1","state":"queued"}`)
			} else {
				fmt.Fprint(w, `{"error":"no"}`)
			}
		case r.Method == http.MethodGet && r.URL.Path == "/v1/jobs/j1":
			i := min(int(reads.Add(1))-1, len(states)-1)
			fmt.Fprintf(w, `{"id":"j1","state":%q,"error":"boom"}`, states[i])
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func TestProbe(t *testing.T) {
	for _, c := range []struct {
		name   string
		accept int
		states []string
		want   int
		why    string
	}{
		{"succeeds", 202, []string{"queued", "running", "succeeded"}, ExitOK, ""},
		{"fails", 202, []string{"running", "failed"}, ExitFail, "ended failed: boom"},
		{"refused", 400, []string{"queued"}, ExitFail, "400 Bad Request"},
		{"never ends", 202, []string{"running"}, ExitFail, "not succeeded in time (last: state running)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := fakeCrewd(t, c.accept, c.states...)
			var out, errb bytes.Buffer
			got := Run([]string{"-timeout", "2s", s.URL}, &out, &errb)
			if got != c.want || !strings.Contains(errb.String(), c.why) {
				t.Fatalf("exit %d (want %d); stdout %q; stderr %q (want %q)", got, c.want, out.String(), errb.String(), c.why)
			}
		})
	}
}

func TestProbeUsage(t *testing.T) {
	var out, errb bytes.Buffer
	for _, args := range [][]string{{}, {"crewd.svc"}, {"-timeout", "0s", "http://x"}, {"http://a", "http://b"}} {
		if got := Run(args, &out, &errb); got != ExitUsage {
			t.Errorf("Run(%q) = %d, want %d", args, got, ExitUsage)
		}
	}
}

// Nothing listening: the probe tries until its timeout, then fails.
func TestProbeNoServer(t *testing.T) {
	s := httptest.NewServer(http.NotFoundHandler())
	url := s.URL
	s.Close()
	var out, errb bytes.Buffer
	if got := Run([]string{"-timeout", "1500ms", url}, &out, &errb); got != ExitFail || !strings.Contains(errb.String(), "POST") {
		t.Fatalf("exit %d; stderr %q", got, errb.String())
	}
}

// TestProbeSendsItsToken: the probe sends the token of -token-file, or of
// CREW_API_TOKEN, on each request; a crewd that asks for one refuses the
// probe without it at once (a 401 is not waited out).
func TestProbeSendsItsToken(t *testing.T) {
	const token = "crew_probe-token"
	inner := fakeCrewd(t, 202, "succeeded")
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"a token is required"}`)
			return
		}
		inner.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if got := Run([]string{"-timeout", "5s", "-token-file", file, s.URL}, &out, &errb); got != ExitOK {
		t.Fatalf("-token-file: exit %d, %s", got, errb.String())
	}
	t.Setenv("CREW_API_TOKEN", token)
	if got := Run([]string{"-timeout", "5s", s.URL}, &out, &errb); got != ExitOK {
		t.Fatalf("CREW_API_TOKEN: exit %d, %s", got, errb.String())
	}
	t.Setenv("CREW_API_TOKEN", "")
	errb.Reset()
	if got := Run([]string{"-timeout", "5s", s.URL}, &out, &errb); got != ExitFail || !strings.Contains(errb.String(), "401") {
		t.Fatalf("no token: exit %d, %s; want 1 saying 401", got, errb.String())
	}
}
