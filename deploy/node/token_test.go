package node

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// apiToken is the token the tests' client sends, read from the
// namespace's crewd-api-tokens Secret once crewd is up (the chart's,
// which makes it; the kustomize test's, which makeTokenSecret made).
var apiToken atomic.Pointer[string]

// bearer sends every request with apiToken, once it is known.
type bearer struct{ base http.RoundTripper }

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	if tok := apiToken.Load(); tok != nil {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+*tok)
	}
	return b.base.RoundTrip(req)
}

// tokenSecret is the Secret of crewd's API tokens, the chart's name for
// release "crewd" and the name the kustomize base mounts.
const tokenSecret = "crewd-api-tokens"

// makeTokenSecret makes the Secret the kustomize base asks for, as its
// operator would (crewd token new's format): the key "tokens" crewd
// mounts, and "token", the token, which the test reads like the chart's.
func makeTokenSecret(ctx context.Context, t *testing.T) {
	t.Helper()
	var b [32]byte
	_, _ = rand.Read(b[:])
	token := "crew_" + base64.RawURLEncoding.EncodeToString(b[:])
	h := sha256.Sum256([]byte(token))
	line := "node-test sha256:" + hex.EncodeToString(h[:]) + " jobs:read,jobs:submit,jobs:admin\n"
	if out, err := kube(ctx, "-n", namespace, "create", "secret", "generic", tokenSecret, "--from-literal=tokens="+line, "--from-literal=token="+token); err != nil {
		t.Fatalf("kubectl create secret %s: %v\n%s", tokenSecret, err, out)
	}
}

// useTokenSecret reads the API's token from the namespace's Secret for
// the tests' client, and checks that the Service refuses a job without a
// token.
func useTokenSecret(ctx context.Context, t *testing.T, svc string) {
	t.Helper()
	enc, err := kube(ctx, "-n", namespace, "get", "secret", tokenSecret, "-o", "jsonpath={.data.token}")
	if err != nil {
		t.Fatalf("the API's token: %v", err)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil || len(raw) == 0 {
		t.Fatalf("the API's token in Secret %s: %q %v", tokenSecret, enc, err)
	}
	token := string(raw)
	apiToken.Store(&token)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, svc+"/v1/jobs", strings.NewReader(`{"kind":"sleep","duration":"1ms"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a job through the Service without a token: %d, want 401", resp.StatusCode)
	}
}
