package release_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/release"
	"golang.org/x/mod/modfile"
)

// root is the repository's root, from this module's directory.
const root = ".."

// readmes hold the lines a user copies.
var readmes = []string{"README.md", "prom/README.md", "natsjs/README.md", "jobs/README.md", "service/README.md"}

var (
	goGet     = regexp.MustCompile(`^go get (github\.com/crew-go/\S+)`)
	goInstall = regexp.MustCompile(`^go install (github\.com/crew-go/\S+)@latest`)
)

// goGetLines are the "go get github.com/crew-go/..." lines of the READMEs.
func goGetLines(t *testing.T) []string { return readmeLines(t, goGet) }

// goInstallLines are the packages of the "go install
// github.com/crew-go/...@latest" lines of the READMEs.
func goInstallLines(t *testing.T) []string { return readmeLines(t, goInstall) }

// readmeLines are the first submatches of re in the READMEs' lines.
func readmeLines(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	var mods []string
	for _, r := range readmes {
		f, err := os.Open(filepath.Join(root, r))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if m := re.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil {
				mods = append(mods, m[1])
			}
		}
		f.Close()
	}
	if len(mods) == 0 {
		t.Fatalf("no line matching %s in the READMEs", re)
	}
	return mods
}

// snippet is the first ```go block after the heading of a README.
func snippet(t *testing.T, readme, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, readme))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s: no heading %q", readme, heading)
	}
	s = s[i:]
	j := strings.Index(s, "```go\n")
	k := strings.Index(s[j+6:], "```")
	if j < 0 || k < 0 {
		t.Fatalf("%s: no go block under %q", readme, heading)
	}
	return s[j+6 : j+6+k]
}

// user is an empty module of a user's, outside the repository and any
// workspace, whose go command reads the modules from the proxy only.
type user struct {
	t   *testing.T
	dir string
	env []string
}

func newUser(t *testing.T, proxy string) *user {
	dir := t.TempDir()
	u := &user{t: t, dir: dir, env: append(os.Environ(),
		"GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local",
		"GOPROXY=file://"+proxy+",https://proxy.golang.org",
		"GONOSUMDB=github.com/crew-go/crew", "GOPRIVATE=")}
	u.run("go", "mod", "init", "example.com/user")
	return u
}

func (u *user) run(args ...string) string {
	u.t.Helper()
	out, err := u.try(args...)
	if err != nil {
		u.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (u *user) try(args ...string) (string, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir, cmd.Env = u.dir, u.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// proxyAt builds the proxy at a version of its own, so that a module cache
// shared with earlier runs never serves an older tree under it.
func proxyAt(t *testing.T) (dir, version string) {
	t.Helper()
	dir = t.TempDir()
	version = fmt.Sprintf("v0.1.0-proxytest.%d", time.Now().UnixNano())
	if err := release.BuildProxy(root, dir, version, release.Modules); err != nil {
		t.Fatal(err)
	}
	return dir, version
}

// TestInstallFromAProxy is what a user does once the modules are tagged:
// every go get line of the READMEs, in an empty module, against a module
// proxy built from the tree, then the README's Quick start and natsjs's
// "Use" snippet build. A go.mod with a replace, or one that requires a
// module at a version no proxy has, fails here.
func TestInstallFromAProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads the modules' dependencies: not with -short")
	}
	proxy, version := proxyAt(t)
	u := newUser(t, proxy)
	for _, m := range goGetLines(t) {
		u.run("go", "get", m)
		t.Logf("go get %s: ok", m)
	}
	if out := u.run("go", "list", "-m", "github.com/crew-go/crew"); !strings.Contains(out, version) {
		t.Fatalf("go get resolved crew at %q, not the proxy's %s", out, version)
	}

	quick := snippet(t, "README.md", "## Quick start")
	main := "package main\n\nimport (\n\t\"context\"\n\t\"fmt\"\n\t\"log\"\n\n\t\"github.com/crew-go/crew\"\n)\n\nfunc main() {\n" + quick + "}\n"
	use := snippet(t, "natsjs/README.md", "## Use")
	run := "package main\n\nimport (\n\t\"context\"\n\t\"log/slog\"\n\n\t\"github.com/crew-go/crew\"\n\t\"github.com/crew-go/crew/natsjs\"\n\t\"github.com/nats-io/nats.go\"\n\t\"github.com/nats-io/nats.go/jetstream\"\n)\n\n" +
		"var _ = run\n\nfunc run(ctx context.Context, url string, handle natsjs.Handler, logger *slog.Logger) error {\n" + use + "\treturn nil\n}\n"
	for name, src := range map[string]string{"main.go": main, "use.go": run} {
		if err := os.WriteFile(filepath.Join(u.dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Copied against a server that cannot be reached, the snippet returns
	// the error (it once panicked inside jetstream.New).
	unreachable := "package main\n\nimport (\n\t\"context\"\n\t\"testing\"\n)\n\n" +
		"func TestUseUnreachable(t *testing.T) {\n\tif err := run(context.Background(), \"nats://127.0.0.1:1\", nil, nil); err == nil {\n\t\tt.Fatal(\"no error from an unreachable server\")\n\t}\n}\n"
	if err := os.WriteFile(filepath.Join(u.dir, "use_test.go"), []byte(unreachable), 0o644); err != nil {
		t.Fatal(err)
	}
	// The jobs library's quick start is a whole program: a user's module
	// that registers a kind, runs it on the embedded server and prints
	// its result.
	jobsQuick := filepath.Join(u.dir, "jobsquick")
	if err := os.MkdirAll(jobsQuick, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jobsQuick, "main.go"), []byte(snippet(t, "jobs/README.md", "## Quick start")), 0o644); err != nil {
		t.Fatal(err)
	}
	u.run("go", "mod", "tidy")
	u.run("go", "build", "./...")
	u.run("go", "test", "-run", "TestUseUnreachable", ".")
	if out := u.run("go", "run", "./jobsquick"); !strings.Contains(out, "succeeded HELLO! <nil>") {
		t.Fatalf("the jobs quick start printed %q, want its job succeeded with HELLO!", out)
	}
	t.Logf("the Quick start and natsjs's Use snippet build against crew %s; the snippet returns an unreachable server's error; the jobs quick start runs its job", version)

	// go install pkg@version is a module of its own: -mod=mod does not apply.
	bin := t.TempDir()
	u.env = append(u.env, "GOFLAGS=", "GOBIN="+bin)
	for _, pkg := range goInstallLines(t) {
		u.run("go", "install", pkg+"@"+version)
		name := filepath.Join(bin, filepath.Base(pkg))
		out, err := exec.Command(name, "-h").CombinedOutput()
		if !strings.Contains(string(out), "Usage") {
			t.Fatalf("%s -h: %v\n%s", name, err, out)
		}
		t.Logf("go install %s@%s: ok, and it runs", pkg, version)
	}
}

// TestAGoGetOfAMissingModuleFails: the check above can fail.
func TestAGoGetOfAMissingModuleFails(t *testing.T) {
	if testing.Short() {
		t.Skip("uses the network: not with -short")
	}
	proxy, _ := proxyAt(t)
	u := newUser(t, proxy)
	if out, err := u.try("go", "get", "github.com/crew-go/crew/nosuchmodule"); err == nil {
		t.Fatalf("go get of a module that does not exist succeeded:\n%s", out)
	}
}

// TestPublishedGoModsCarryNoReplace: every module's go.mod requires the
// others at the placeholder and replaces nothing (go.work does, in
// development); SetVersion refuses a replace of ours.
func TestPublishedGoModsCarryNoReplace(t *testing.T) {
	for _, m := range append(append([]release.Module{}, release.Modules...), release.Unpublished...) {
		b, err := os.ReadFile(filepath.Join(root, m.Dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "\nreplace") {
			t.Errorf("%s/go.mod has a replace: ignored in a dependency, it breaks installs", m.Dir)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "github.com/crew-go/crew") && !strings.HasPrefix(line, "module") && !strings.Contains(line, release.Placeholder) {
				t.Errorf("%s/go.mod: %q: want the placeholder %s between releases", m.Dir, strings.TrimSpace(line), release.Placeholder)
			}
		}
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "go.mod")
	os.WriteFile(bad, []byte("module x\n\ngo 1.26\n\nrequire github.com/crew-go/crew "+release.Placeholder+"\n\nreplace github.com/crew-go/crew => ../\n"), 0o644)
	if _, err := release.SetVersion(bad, "v0.1.0"); err == nil {
		t.Fatal("SetVersion accepted a go.mod that replaces one of ours")
	}
}

// TestModulesAreTidy: go mod tidy would change no module's go.mod or
// go.sum, outside the workspace, with the repository's own modules read
// from a proxy built from the tree at the placeholder (go.sum lines for
// those are the one difference allowed: their hashes change with every
// commit, and the workspace needs none). It also holds each module to the
// go directive policy: the library modules (the core, prom, natsjs) declare
// the oldest Go they support, 1.25, the first whose GOMAXPROCS follows the
// container's CPU quota and whose testing/synctest is stable (natsjs
// cannot: its nats-server dependency wants 1.26); the rest, applications
// and tests, declare the Go CI runs, 1.26. Every directive is written in
// the full 1.N.0 form the go command writes since 1.21, so that no tidy
// rewrites it.
func TestModulesAreTidy(t *testing.T) {
	if testing.Short() {
		t.Skip("reads every module's dependencies: not with -short")
	}
	proxy := t.TempDir()
	if err := release.BuildProxy(root, proxy, release.Placeholder, append(append([]release.Module{}, release.Modules...), release.Unpublished...)); err != nil {
		t.Fatal(err)
	}
	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	downloads := filepath.Join(strings.TrimSpace(string(cache)), "cache", "download")
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local",
		"GOPROXY=file://"+proxy+",file://"+downloads+",https://proxy.golang.org",
		"GONOSUMDB=github.com/crew-go/crew", "GOMODCACHE="+t.TempDir())
	want := map[string]string{".": "1.25.0", "prom": "1.25.0", "natsjs": "1.26.0"}
	for _, m := range append(append([]release.Module{}, release.Modules...), release.Unpublished...) {
		cmd := exec.Command("go", "mod", "tidy", "-diff")
		cmd.Dir, cmd.Env = filepath.Join(root, m.Dir), env
		out, _ := cmd.CombinedOutput()
		var bad []string
		for _, line := range strings.Split(string(out), "\n") {
			if (strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-")) && !strings.HasPrefix(line, "+++") && !strings.HasPrefix(line, "---") &&
				!strings.Contains(line, "github.com/crew-go/crew") {
				bad = append(bad, line)
			}
			if strings.HasPrefix(line, "go: ") && !strings.HasPrefix(line, "go: downloading ") {
				bad = append(bad, line)
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s: go mod tidy would change:\n%s", m.Dir, strings.Join(bad, "\n"))
		}
		b, err := os.ReadFile(filepath.Join(root, m.Dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		wantGo := want[m.Dir]
		if wantGo == "" {
			wantGo = "1.26.0"
		}
		if !strings.Contains(string(b), "\ngo "+wantGo+"\n") {
			t.Errorf("%s/go.mod: want \"go %s\" (the go directive policy, above)", m.Dir, wantGo)
		}
	}
}

// TestRequireBlocks: every go.mod has at most two require blocks, its
// direct requirements then its indirect ones, as go mod tidy writes a new
// file (tidy never merges blocks a hand or an older go left apart, so
// TestModulesAreTidy cannot see them).
func TestRequireBlocks(t *testing.T) {
	for _, m := range append(append([]release.Module{}, release.Modules...), release.Unpublished...) {
		b, err := os.ReadFile(filepath.Join(root, m.Dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		if err := requireBlocks(b); err != nil {
			t.Errorf("%s/go.mod: %v", m.Dir, err)
		}
	}
	bad := "module x\n\ngo 1.26.0\n\nrequire (\n\ta v1.0.0\n)\n\nrequire (\n\tb v1.0.0 // indirect\n)\n\nrequire (\n\tc v1.0.0\n)\n"
	if requireBlocks([]byte(bad)) == nil {
		t.Fatal("three require blocks passed")
	}
	mixed := "module x\n\ngo 1.26.0\n\nrequire (\n\ta v1.0.0\n\tb v1.0.0 // indirect\n)\n"
	if requireBlocks([]byte(mixed)) == nil {
		t.Fatal("a direct and an indirect requirement in one block passed")
	}
}

// requireBlocks says what is wrong with a go.mod's require blocks: more
// than two, or a block mixing direct and indirect requirements, or the
// indirect one first.
func requireBlocks(gomod []byte) error {
	f, err := modfile.ParseLax("go.mod", gomod, nil)
	if err != nil {
		return err
	}
	var kinds []bool // per block, in order: indirect?
	for _, st := range f.Syntax.Stmt {
		var lines []*modfile.Line
		switch x := st.(type) {
		case *modfile.LineBlock:
			if len(x.Token) == 0 || x.Token[0] != "require" {
				continue
			}
			lines = x.Line
		case *modfile.Line:
			if len(x.Token) == 0 || x.Token[0] != "require" {
				continue
			}
			lines = []*modfile.Line{x}
		default:
			continue
		}
		indirect := func(l *modfile.Line) bool {
			for _, c := range l.Suffix {
				if strings.Contains(c.Token, "// indirect") {
					return true
				}
			}
			return false
		}
		first := indirect(lines[0])
		for _, l := range lines[1:] {
			if indirect(l) != first {
				return fmt.Errorf("a require block mixes direct and indirect requirements (at %s)", strings.Join(l.Token, " "))
			}
		}
		kinds = append(kinds, first)
	}
	switch {
	case len(kinds) > 2:
		return fmt.Errorf("%d require blocks: want at most two, direct then indirect", len(kinds))
	case len(kinds) == 2 && (kinds[0] || !kinds[1]):
		return fmt.Errorf("require blocks out of order: want direct then indirect")
	}
	return nil
}
