package clustertest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// token is the API token of this run's crewds, every scope; tokenFile
// writes the token file they read (crewd's format: name sha256:<hex>
// scopes) and returns its path, for compose (CREW_API_TOKENS_FILE).
var token = func() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return "crew_" + base64.RawURLEncoding.EncodeToString(b[:])
}()

func tokenFile(t *testing.T) string {
	t.Helper()
	h := sha256.Sum256([]byte(token))
	path := filepath.Join(t.TempDir(), "tokens")
	line := "clustertest sha256:" + hex.EncodeToString(h[:]) + " jobs:read,jobs:submit,jobs:admin\n"
	if err := os.WriteFile(path, []byte(line), 0o644); err != nil { // crewd's user reads it
		t.Fatal(err)
	}
	return path
}

// bearer sends every request with the token.
type bearer struct{ base http.RoundTripper }

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+token)
	return b.base.RoundTrip(req)
}
