package auth

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// Tokens are the tokens a file names: a hash, a name and scopes each.
type Tokens struct {
	entries []entry
}

type entry struct {
	hash   [sha256.Size]byte
	caller Caller
}

// Len is how many tokens there are.
func (t *Tokens) Len() int { return len(t.entries) }

// Lookup finds the caller whose token is token. It hashes token and
// compares the hash with every entry's in constant time, whether one
// matched or not, so how long it takes says nothing of the tokens.
func (t *Tokens) Lookup(token string) (Caller, bool) {
	h := sha256.Sum256([]byte(token))
	var found Caller
	matched := 0
	for _, e := range t.entries {
		eq := subtle.ConstantTimeCompare(h[:], e.hash[:])
		if eq == 1 {
			found = e.caller
		}
		matched |= eq
	}
	return found, matched == 1
}

// MaxFileBytes bounds a token file: a file larger is refused, not read.
const MaxFileBytes = 1 << 20

// ParseTokens reads a token file (see the package's doc). An error names
// the line at fault and why, and never quotes a hash.
func ParseTokens(r io.Reader) (*Tokens, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("more than %d bytes", MaxFileBytes)
	}
	t := &Tokens{}
	names := map[string]bool{}
	hashes := map[[sha256.Size]byte]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), MaxFileBytes)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		e, err := parseLine(line)
		switch {
		case err != nil:
			return nil, fmt.Errorf("line %d: %v", n, err)
		case names[e.caller.Name]:
			return nil, fmt.Errorf("line %d: name %s given twice", n, e.caller.Name)
		case hashes[e.hash]:
			return nil, fmt.Errorf("line %d: token %s has the hash of an earlier line's token", n, e.caller.Name)
		}
		names[e.caller.Name], hashes[e.hash] = true, true
		t.entries = append(t.entries, e)
	}
	return t, sc.Err()
}

func parseLine(line string) (entry, error) {
	fields := strings.Fields(line)
	if len(fields) != 3 {
		return entry{}, fmt.Errorf("%d fields: want 3, name sha256:<hex> scopes", len(fields))
	}
	name, hash, list := fields[0], fields[1], fields[2]
	if err := CheckName(name); err != nil {
		return entry{}, err
	}
	digits, ok := strings.CutPrefix(hash, "sha256:")
	if !ok {
		return entry{}, fmt.Errorf("token %s: its hash must read sha256:<64 hex digits> (the file keeps hashes, never tokens)", name)
	}
	var e entry
	if len(digits) != hex.EncodedLen(sha256.Size) {
		return entry{}, fmt.Errorf("token %s: its hash must be 64 hex digits after sha256:", name)
	}
	if _, err := hex.Decode(e.hash[:], []byte(digits)); err != nil {
		return entry{}, fmt.Errorf("token %s: its hash must be 64 hex digits after sha256:", name)
	}
	s, err := parseScopes(list)
	if err != nil {
		return entry{}, fmt.Errorf("token %s: %v", name, err)
	}
	e.caller = Caller{Name: name, scopes: s}
	return e, nil
}

// MaxName bounds a token's name.
const MaxName = 64

// CheckName accepts a token's name: 1 to MaxName letters, digits, '.',
// '-' or '_' (it is logged, recorded as a job's submitter and sent in a
// message header).
func CheckName(name string) error {
	if name == "" || len(name) > MaxName {
		return fmt.Errorf("name %.80q: want 1 to %d letters, digits, '.', '-' or '_'", name, MaxName)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("name %.80q: want 1 to %d letters, digits, '.', '-' or '_'", name, MaxName)
		}
	}
	return nil
}
