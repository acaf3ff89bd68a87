package api

import (
	"encoding/json"
	"fmt"
)

// numbers is the array of a factorial request, counted before it is
// decoded: a body of half a million small numbers is refused by its count,
// without first building a slice of them (several times the body's size).
type numbers struct {
	max int // the most a request may hold
	v   []int
}

// UnmarshalJSON refuses an array of more than max elements, then decodes
// it as a []int would be, with the same errors.
func (l *numbers) UnmarshalJSON(b []byte) error {
	if n := elements(b); n > l.max {
		return &bodyError{fmt.Sprintf("%d numbers: at most %d in one request", n, l.max)}
	}
	return json.Unmarshal(b, &l.v)
}

// elements counts the elements of b if it is a JSON array, else returns 0.
// b is one whole JSON value (the decoder checked it): the commas outside
// strings at the array's own depth separate its elements.
func elements(b []byte) int {
	depth, commas, empty, inString, escaped := 0, 0, true, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		case depth == 0 && c != '[':
			return 0 // not an array
		}
		if depth == 1 && c != ']' {
			empty = false
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 1 {
				commas++
			}
		}
	}
	if empty {
		return 0
	}
	return commas + 1
}

// bodyError is a body refused by what it holds, with the reason to answer.
type bodyError struct{ msg string }

func (e *bodyError) Error() string { return e.msg }
