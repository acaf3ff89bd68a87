package auth

import (
	"fmt"
	"strings"
)

// Scope is what a token allows. Each of crewd's routes asks for one; a
// token holds any of them, none implied by another, so that a reader's
// token cannot cancel a job and a submitter's cannot read another's
// results.
type Scope string

// The scopes.
const (
	// Read: get, list and count jobs, read periodic jobs and queues.
	Read Scope = "jobs:read"
	// Submit: submit a job (POST /v1/jobs) and run an online batch (POST
	// /v1/factorial). A holder runs any registered kind with any arguments.
	Submit Scope = "jobs:submit"
	// Admin: cancel, retry and delete jobs, set and delete periodic jobs,
	// pause and resume queues.
	Admin Scope = "jobs:admin"
)

// Scopes are the scopes there are, in the order they are written.
var Scopes = []Scope{Read, Submit, Admin}

// scopes is a set of scopes, a bit each.
type scopes uint8

func (s scopes) has(sc Scope) bool {
	for i, known := range Scopes {
		if known == sc {
			return s&(1<<i) != 0
		}
	}
	return false
}

func (s scopes) String() string {
	var names []string
	for i, known := range Scopes {
		if s&(1<<i) != 0 {
			names = append(names, string(known))
		}
	}
	return strings.Join(names, ",")
}

// parseScopes reads "jobs:read,jobs:admin": at least one, each known, none
// twice.
func parseScopes(list string) (scopes, error) {
	var s scopes
	for name := range strings.SplitSeq(list, ",") {
		i := scopeIndex(Scope(name))
		switch {
		case i < 0:
			return 0, fmt.Errorf("scope %.40q: want %s", name, scopeNames())
		case s&(1<<i) != 0:
			return 0, fmt.Errorf("scope %s named twice", name)
		}
		s |= 1 << i
	}
	return s, nil
}

func scopeIndex(sc Scope) int {
	for i, known := range Scopes {
		if known == sc {
			return i
		}
	}
	return -1
}

func scopeNames() string {
	names := make([]string, len(Scopes))
	for i, sc := range Scopes {
		names[i] = string(sc)
	}
	return strings.Join(names, ", ")
}
