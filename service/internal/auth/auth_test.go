package auth

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNewTokenIsFoundByItsLine(t *testing.T) {
	token, line, err := New("ci-bot", "jobs:read,jobs:submit")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, TokenPrefix) || len(token) != len(TokenPrefix)+43 || strings.Contains(line, token) {
		t.Fatalf("token %q, line %q", token, line)
	}
	other, otherLine, _ := New("ops", "jobs:admin")
	tokens, err := ParseTokens(strings.NewReader("# crewd's tokens\n\n" + line + "\n  " + otherLine + "  \n"))
	if err != nil || tokens.Len() != 2 {
		t.Fatalf("%v, %d tokens", err, tokens.Len())
	}
	c, ok := tokens.Lookup(token)
	if !ok || c.Name != "ci-bot" || !c.Has(Read) || !c.Has(Submit) || c.Has(Admin) || c.Scopes() != "jobs:read,jobs:submit" {
		t.Fatalf("Lookup: %+v %v", c, ok)
	}
	if c, ok := tokens.Lookup(other); !ok || c.Name != "ops" || c.Has(Read) || !c.Has(Admin) {
		t.Fatalf("Lookup other: %+v %v", c, ok)
	}
	for _, bad := range []string{"", token[:len(token)-1], token + "x", strings.ToUpper(token), "sha256:" + strings.Fields(line)[1]} {
		if c, ok := tokens.Lookup(bad); ok {
			t.Errorf("Lookup(%q) found %+v", bad, c)
		}
	}
	for _, tc := range []struct{ name, scopes, says string }{
		{"", "jobs:read", "name"},
		{"a b", "jobs:read", "name"},
		{strings.Repeat("n", MaxName+1), "jobs:read", "name"},
		{"x", "", "scope"},
		{"x", "jobs:write", `scope "jobs:write": want jobs:read, jobs:submit, jobs:admin`},
		{"x", "jobs:read,jobs:read", "twice"},
	} {
		if _, _, err := New(tc.name, tc.scopes); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("New(%q, %q): %v, want an error saying %q", tc.name, tc.scopes, err, tc.says)
		}
	}
}

// TestParseTokensRefuses: each bad line is named with why, and a line
// holding a token where its hash should be is refused without quoting it.
func TestParseTokensRefuses(t *testing.T) {
	token, line, _ := New("a", "jobs:read")
	hash := strings.Fields(line)[1]
	for _, tc := range []struct{ file, says string }{
		{"a " + token + " jobs:read", "line 1: token a: its hash must read sha256:"},
		{"a sha256:abc jobs:read", "64 hex digits"},
		{"a " + hash + "00 jobs:read", "64 hex digits"},
		{"a " + hash, "2 fields: want 3"},
		{"a " + hash + " jobs:read extra", "4 fields"},
		{"a " + hash + " jobs:root", `scope "jobs:root"`},
		{"a " + hash + " jobs:read\nb " + hash + " jobs:admin", "line 2: token b has the hash of an earlier line's token"},
		{line + "\n# c\n" + strings.Replace(line, hash, "sha256:"+strings.Repeat("0", 64), 1), "line 3: name a given twice"},
		{"é " + hash + " jobs:read", "name"},
		{strings.Repeat("#", MaxFileBytes+1), "more than"},
	} {
		_, err := ParseTokens(strings.NewReader(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%.60q: %v, want an error saying %q", tc.file, err, tc.says)
		}
		if err != nil && strings.Contains(err.Error(), token) {
			t.Errorf("the error quotes the token: %v", err)
		}
	}
	if tokens, err := ParseTokens(strings.NewReader("")); err != nil || tokens.Len() != 0 {
		t.Errorf("an empty file: %v, %d tokens; want none, no error (every call refused)", err, tokens.Len())
	}
}

func TestBearer(t *testing.T) {
	for _, tc := range []struct {
		header, token string
	}{
		{"Bearer abc", "abc"},
		{"bearer abc", "abc"},
		{"BEARER   abc", "abc"},
		{"Bearer a-b.c_d~e+f/g==", "a-b.c_d~e+f/g=="},
		{"Bearer", ""},
		{"Bearer ", ""},
		{"Bearer ==", ""},
		{"Bearer a=b", ""},
		{"Bearer a b", ""},
		{"Bearer a\tb", ""},
		{"Basic abc", ""},
		{"Bearerabc", ""},
		{"Bearer " + strings.Repeat("a", MaxToken), strings.Repeat("a", MaxToken)},
		{"Bearer " + strings.Repeat("a", MaxToken+1), ""},
		{"Bearer é", ""},
	} {
		got, ok := Bearer(tc.header)
		if got != tc.token || ok != (tc.token != "") {
			t.Errorf("Bearer(%.40q) = %q, %v; want %q", tc.header, got, ok, tc.token)
		}
	}
}

// clock is a test's time, moved by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// replace writes content to path by a rename, as a Secret's volume does.
func replace(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestFileIsReadAgain: a changed file is taken once CheckEvery passed, not
// before; a file changed into a bad one, or removed, leaves the tokens read
// before in use and says so once; fixed, it is taken.
func TestFileIsReadAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	a, lineA, _ := New("a", "jobs:read")
	b, lineB, _ := New("b", "jobs:admin")
	replace(t, path, lineA+"\n")
	var logs bytes.Buffer
	c := &clock{now: time.Unix(1e9, 0)}
	f, err := open(path, slog.New(slog.NewTextHandler(&logs, nil)), c.Now)
	if err != nil {
		t.Fatal(err)
	}
	has := func(token string) bool { _, ok := f.Tokens().Lookup(token); return ok }
	if !has(a) || has(b) {
		t.Fatal("first read")
	}
	replace(t, path, lineB+"\n")
	c.add(CheckEvery - time.Millisecond)
	if !has(a) || has(b) {
		t.Fatal("read again before CheckEvery passed")
	}
	c.add(time.Millisecond)
	if has(a) || !has(b) {
		t.Fatal("not read again once CheckEvery passed: a rotation needs a restart")
	}
	replace(t, path, "b sha256:nothex jobs:admin\n")
	for range 3 {
		c.add(CheckEvery)
		if !has(b) {
			t.Fatal("a bad file replaced the good tokens: every client locked out")
		}
	}
	if n := strings.Count(logs.String(), "changed and cannot be used"); n != 1 {
		t.Fatalf("the bad file said %d times, want once: %s", n, logs.String())
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	c.add(CheckEvery)
	if !has(b) || !strings.Contains(logs.String(), "cannot be read") {
		t.Fatalf("removed: %v, %s", has(b), logs.String())
	}
	replace(t, path, lineA+"\n"+lineB+"\n")
	c.add(CheckEvery)
	if !has(a) || !has(b) {
		t.Fatal("the fixed file was not taken")
	}
	if strings.Contains(logs.String(), a) || strings.Contains(logs.String(), b) {
		t.Fatal("the log holds a token")
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing"), nil); err == nil {
		t.Fatal("a missing file at start: no error")
	}
}

func TestCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := Command(args, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	code, out, _ := run("new", "-name", "ci", "-scopes", "jobs:read,jobs:submit", "-file", path)
	token := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(token, TokenPrefix) || strings.Count(out, "\n") != 1 {
		t.Fatalf("token new -file: %d %q", code, out)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the token file: %v, mode %v; want 0600", err, st.Mode())
	}
	if code, out, _ := run("new", "-name", "ops", "-scopes", "jobs:admin", "-file", path); code != 0 || out == "" {
		t.Fatalf("a second token: %d", code)
	}
	f, err := Open(path, nil)
	if err != nil || f.Tokens().Len() != 2 {
		t.Fatalf("the file made: %v", err)
	}
	if c, ok := f.Tokens().Lookup(token); !ok || c.Name != "ci" || c.Scopes() != "jobs:read,jobs:submit" {
		t.Fatalf("the printed token: %+v %v", c, ok)
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), token) {
		t.Fatal("the file holds the token, not its hash")
	}
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"new", "-name", "ci", "-scopes", "jobs:read", "-file", path}, 1, "a token named ci is there already"},
		{[]string{"new", "-name", "x", "-scopes", "jobs:all"}, 2, `scope "jobs:all"`},
		{[]string{"new", "-scopes", "jobs:read"}, 2, "name"},
		{[]string{"new", "-name", "x", "-scopes", "jobs:read", "extra"}, 2, "unexpected argument"},
		{[]string{"old"}, 2, "usage: crewd token new"},
		{nil, 2, "usage"},
	} {
		code, out, errOut := run(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.says) || out != "" {
			t.Errorf("token %q: %d, %q, %q; want %d saying %q", tc.args, code, out, errOut, tc.code, tc.says)
		}
	}
	code, out, _ = run("new", "-name", "x", "-scopes", "jobs:read")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[1], "x sha256:") {
		t.Fatalf("without -file: %d %q", code, out)
	}
}
