package probe

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
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
