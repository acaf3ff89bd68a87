package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPythonClient: the Python client written against openapi.json
// (service/clients/python) submits a job to a crewd that asks for tokens
// and waits for it to succeed, and shows a bad job's 400 text; skipped
// where there is no python3.
func TestPythonClient(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no python3: .ci/install installs Debian's")
		}
		t.Skip("no python3 on this machine (apt-get install python3): not run")
	}
	file := filepath.Join(t.TempDir(), "tokens")
	out, err := exec.Command(binary, "token", "new", "-name", "py", "-scopes", "jobs:read,jobs:submit", "-file", file).Output()
	if err != nil {
		t.Fatal(err)
	}
	c := start(t, "-api-tokens", file)
	run := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(python, append([]string{"../clients/python/crew_client.py"}, args...)...)
		cmd.Env = append(os.Environ(), "CREW_URL="+c.http, "CREW_API_TOKEN="+strings.TrimSpace(string(out)))
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if exit, ok := err.(*exec.ExitError); ok {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}
	if stdout, stderr, code := run("submit-and-wait", "factorial", `{"n":5}`); code != 0 || !strings.Contains(stdout, `"state": "succeeded"`) || !strings.Contains(stdout, `"result": 120`) {
		t.Fatalf("a job through the Python client: exit %d\n%s%s", code, stdout, stderr)
	}
	if stdout, stderr, code := run("submit-and-wait", "factorial", `{"n":99}`); code != 1 || !strings.Contains(stderr, "crew_client: 400 ") || !strings.Contains(stderr, "20") {
		t.Fatalf("a bad job through the Python client: exit %d\n%s%s", code, stdout, stderr)
	}
}
