package auth

import (
	"strings"
	"testing"
)

// FuzzBearer: any header is read without a panic; a token read is one
// that the same header, written canonically, reads again.
func FuzzBearer(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer  a==", "Basic x", "Bearer", "Bearer \x00", "Bearer a=b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		token, ok := Bearer(header)
		if !ok {
			if token != "" {
				t.Fatalf("refused, yet token %q", token)
			}
			return
		}
		if token == "" || len(token) > MaxToken || strings.ContainsAny(token, " \t\r\n\x00") {
			t.Fatalf("Bearer(%q) = %q", header, token)
		}
		if again, ok := Bearer("Bearer " + token); !ok || again != token {
			t.Fatalf("%q read %q, which reads back as %q %v", header, token, again, ok)
		}
	})
}

// FuzzParseTokens: any file is read without a panic; a file taken names
// every token validly, and finds each by no other's hash.
func FuzzParseTokens(f *testing.F) {
	_, line, _ := New("a", "jobs:read,jobs:admin")
	f.Add(line)
	f.Add("# x\n" + line + "\n\nb sha256:" + strings.Repeat("ab", 32) + " jobs:submit\n")
	f.Add("a b c")
	f.Fuzz(func(t *testing.T, file string) {
		tokens, err := ParseTokens(strings.NewReader(file))
		if err != nil {
			return
		}
		for _, e := range tokens.entries {
			if CheckName(e.caller.Name) != nil || e.caller.scopes == 0 {
				t.Fatalf("taken: %+v", e)
			}
		}
		if _, ok := tokens.Lookup(file); ok {
			t.Fatal("the file itself is a token")
		}
	})
}
