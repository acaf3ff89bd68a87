package auth

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// TokenVar is the variable crewd's clients (crewd probe, crewload) read
// their token from, when no token file is given: a token on a command
// line would show in every process list.
const TokenVar = "CREW_API_TOKEN"

// ClientToken is the token a client of crewd sends: the first line of
// file when it is given, else TokenVar's value; "" for none (a crewd
// serving without tokens).
func ClientToken(file string, getenv func(string) string) (string, error) {
	if file == "" {
		return strings.TrimSpace(getenv(TokenVar)), nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	token, _, _ := strings.Cut(string(data), "\n")
	if token = strings.TrimSpace(token); token == "" {
		return "", errors.New(file + ": empty")
	}
	if _, ok := Bearer("Bearer " + token); !ok {
		return "", fmt.Errorf("%s: not a token (a token file of crewd's -api-tokens holds hashes, not tokens)", file)
	}
	return token, nil
}

// Transport sends every request with "Authorization: Bearer Token",
// when Token is set, through Base (http.DefaultTransport if nil).
type Transport struct {
	Base  http.RoundTripper
	Token string
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if t.Token == "" {
		return base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+t.Token)
	return base.RoundTrip(req)
}
