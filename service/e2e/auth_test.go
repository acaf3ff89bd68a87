package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// badTokens is a token file holding a token where its hash should be.
func badTokens(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("ops crew_plain-token-not-a-hash jobs:admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTokensAsShipped: the binary makes a token (crewd token new) and
// serves with it: a call without it is refused, with it answered; the job
// records the token's name, the submit writes an audit line, no log line
// holds the token, and pprof is not served unless asked for.
func TestTokensAsShipped(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	out, err := exec.Command(binary, "token", "new", "-name", "e2e", "-scopes", "jobs:read,jobs:submit", "-file", file).Output()
	if err != nil {
		t.Fatalf("crewd token new: %v", err)
	}
	token := strings.TrimSpace(string(out))
	c := start(t, "-api-tokens", file)
	if access, _ := c.logLine("crewd started")["api_access"].(string); !strings.Contains(access, "bearer tokens of "+file+" (1 now)") {
		t.Fatalf("the started line says access %q", access)
	}
	call := func(method, path, body, token string) (int, string) {
		req, _ := http.NewRequest(method, c.http+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := call("POST", "/v1/jobs", `{"kind":"sleep","duration":"10ms"}`, ""); code != 401 {
		t.Fatalf("without a token: %d %s", code, body)
	}
	code, body := call("POST", "/v1/jobs", `{"kind":"sleep","duration":"10ms"}`, token)
	var accepted struct{ ID string }
	if code != 202 || json.Unmarshal([]byte(body), &accepted) != nil {
		t.Fatalf("with the token: %d %s", code, body)
	}
	if code, body := call("DELETE", "/v1/jobs/"+accepted.ID, "", token); code != 403 || !strings.Contains(body, "lacks scope jobs:admin") {
		t.Fatalf("a cancel without jobs:admin: %d %s", code, body)
	}
	code, body = call("GET", "/v1/jobs/"+accepted.ID, "", token)
	if code != 200 || !strings.Contains(body, `"submitter":"e2e"`) {
		t.Fatalf("the job reads %d %s: want submitter e2e", code, body)
	}
	if code, _ := call("GET", "/healthz", "", ""); code != 200 {
		t.Fatalf("/healthz without a token: %d", code)
	}
	resp, err := client.Get(c.admin + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("pprof without -pprof: %d, want 404", resp.StatusCode)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	audited := false
	for _, m := range c.log {
		line, _ := json.Marshal(m)
		if strings.Contains(string(line), token) {
			t.Fatalf("a log line holds the token: %s", line)
		}
		audited = audited || m["msg"] == "audit" && m["who"] == "e2e" && m["job"] == accepted.ID && m["status"] == float64(202)
	}
	if !audited {
		t.Fatal("no audit line for the submit")
	}
}

// TestPprofWhenAskedFor: -pprof serves /debug/pprof/ on the admin port
// only.
func TestPprofWhenAskedFor(t *testing.T) {
	c := start(t, "-pprof", "-nats-url", "off")
	for url, want := range map[string]int{c.admin + "/debug/pprof/": 200, c.http + "/debug/pprof/": 404} {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", url, resp.StatusCode, want)
		}
	}
}
