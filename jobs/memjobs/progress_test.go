package memjobs_test

import (
	"testing"
	"time"

	"github.com/crew-go/crew/jobs/jobstest"
)

// TestProgressReadBack: a job's progress is read back through Get while
// it runs, and is gone from its record once it has ended.
func TestProgressReadBack(t *testing.T) {
	r, _ := newRunner(t, 10, time.Hour, map[string]int{})
	jobstest.CheckProgress(t, r)
}
