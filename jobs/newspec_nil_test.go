package jobs_test

import (
	"testing"

	"github.com/crew-go/crew/jobs"
)

type nilArgs struct{ N int }

func (nilArgs) Kind() string { return "nil-args" }

// TestNewSpecNil: NewSpec returns an error for arguments it cannot make a
// job of; a nil Args, or a nil pointer to a kind, is one, not a panic.
func TestNewSpecNil(t *testing.T) {
	for name, args := range map[string]jobs.Args{"nil": nil, "nil pointer": (*nilArgs)(nil)} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("NewSpec(%s) panicked: %v", name, p)
				}
			}()
			if _, err := jobs.NewSpec(args); err == nil {
				t.Errorf("NewSpec(%s): no error", name)
			}
		}()
	}
}
