package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// TokenPrefix begins every token New makes, so that a secret scanner (or
// a person) knows one when it sees it.
const TokenPrefix = "crew_"

// New makes a token for name with scopes (comma-separated) and the line of
// the token file that admits it. The token is shown once: the file keeps
// only its hash.
func New(name, scopeList string) (token, line string, err error) {
	if err := CheckName(name); err != nil {
		return "", "", err
	}
	s, err := parseScopes(scopeList)
	if err != nil {
		return "", "", err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return token, Line(name, token, s.String()), nil
}

// Line is the token file's line for token, named name, with scopes.
func Line(name, token, scopeList string) string {
	h := sha256.Sum256([]byte(token))
	return fmt.Sprintf("%s sha256:%s %s", name, hex.EncodeToString(h[:]), strings.TrimSpace(scopeList))
}
