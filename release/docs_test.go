package release_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pathLike is what ARCHITECTURE.md writes as a path of the repository: a
// name with a slash in it (a file or a directory), or a file name with
// one of the repository's extensions (a file at the root).
var pathLike = regexp.MustCompile(`[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+/?|[A-Za-z0-9_-]+\.(?:go|md|sh|jq|yaml|json)\b`)

// TestArchitectureNamesOnlyPathsThatExist: every path ARCHITECTURE.md
// names, in its text, its tables and its diagrams, exists in the tree, so
// that the map a newcomer reads first cannot drift from the code unseen.
// Module paths (github.com/...) and HTTP routes are not paths of the tree.
func TestArchitectureNamesOnlyPathsThatExist(t *testing.T) {
	missing := architectureMissing(t, filepath.Join(root, "ARCHITECTURE.md"))
	if len(missing) > 0 {
		t.Fatalf("ARCHITECTURE.md names paths that do not exist: %s", strings.Join(missing, ", "))
	}
}

// TestArchitectureCheckRejectsAMissingPath: the check fails on a map that
// names a file the tree does not have.
func TestArchitectureCheckRejectsAMissingPath(t *testing.T) {
	f := filepath.Join(t.TempDir(), "ARCHITECTURE.md")
	if err := os.WriteFile(f, []byte("The stream is set up in `service/internal/jobs/jsstore/durable.go`, the ring in ring.go.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := architectureMissing(t, f); len(got) != 1 || got[0] != "service/internal/jobs/jsstore/durable.go" {
		t.Fatalf("missing = %v, want the one stale path", got)
	}
}

func architectureMissing(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	seen := map[string]bool{}
	text := string(b)
	for _, loc := range pathLike.FindAllStringIndex(text, -1) {
		p := text[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsRune("/.{$", rune(text[loc[0]-1])) {
			continue // the tail of a route, a subject or a module path
		}
		if strings.HasPrefix(p, "github.com") || strings.HasPrefix(p, "v1/") || seen[p] {
			continue
		}
		seen[p] = true
		if _, err := os.Stat(filepath.Join(root, strings.TrimSuffix(p, "/"))); err != nil {
			missing = append(missing, p)
		}
	}
	return missing
}
