package api_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// caught is a testing.TB whose Errorf keeps the failure instead of
// failing the test.
type caught struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (c *caught) Errorf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

// TestCheckAnswersCatchesDrift: checkAnswers fails an answer whose body
// its operation's schema refuses, a status the operation does not name,
// a content type it does not name, and an error that is not the Error
// schema on a path no operation has; an answer as described passes.
func TestCheckAnswersCatchesDrift(t *testing.T) {
	for _, tc := range []struct {
		name, path, ctype, body string
		code                    int
		says                    string // "" for an answer that validates
	}{
		{"as described", "/v1/jobs/counts", "application/json", `{"counts":{"queued":1}}`, 200, ""},
		{"a body the schema refuses", "/v1/jobs/counts", "application/json", `{"counts":{"queued":"one"}}`, 200, "doesn't match schema"},
		{"a status not named", "/v1/jobs/counts", "application/json", `{"error":"x"}`, 418, "status is not supported"},
		{"a content type not named", "/v1/jobs/counts", "text/plain", `counts`, 200, `response header Content-Type has unexpected value: "text/plain"`},
		{"an error not an Error", "/v2/none", "application/json", `{"message":"x"}`, 404, `missing property 'error'`},
		{"an error on a path none has", "/v2/none", "application/json", `{"error":"no such endpoint"}`, 404, ""},
	} {
		c := &caught{TB: t}
		srv := httptest.NewServer(checkAnswers(c, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", tc.ctype)
			w.WriteHeader(tc.code)
			_, _ = io.WriteString(w, tc.body)
		})))
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		srv.Close()
		c.mu.Lock()
		errs := strings.Join(c.errs, "\n")
		c.mu.Unlock()
		if tc.says == "" && errs != "" || tc.says != "" && !strings.Contains(errs, tc.says) {
			t.Errorf("%s: checkAnswers said %q, want %q", tc.name, errs, tc.says)
		}
	}
}
