package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/crew-go/crew/jobs"
)

// TestPrintJobListsParents: a job's parents are listed, the first
// maxParentsShown of a join of many with their count.
func TestPrintJobListsParents(t *testing.T) {
	line := func(n int) string {
		rec := jobs.Record{ID: "0123456789abcdef", State: jobs.Waiting}
		for i := range n {
			rec.After = append(rec.After, fmt.Sprintf("%016x", i))
		}
		body, _ := json.Marshal(rec)
		var out bytes.Buffer
		if err := printJob(&out, body); err != nil {
			t.Fatal(err)
		}
		for l := range strings.Lines(out.String()) {
			if strings.HasPrefix(l, "after\t") {
				return l
			}
		}
		return ""
	}
	if got := line(2); got != "after\t0000000000000000 0000000000000001\n" {
		t.Errorf("two parents: %q", got)
	}
	got := line(10000)
	if !strings.Contains(got, fmt.Sprintf("%016x", maxParentsShown-1)) || strings.Contains(got, fmt.Sprintf("%016x", maxParentsShown)) || !strings.Contains(got, "(10000 in all") {
		t.Errorf("10,000 parents: %q, want the first %d and the count", got, maxParentsShown)
	}
	if got := line(0); got != "" {
		t.Errorf("no parents: %q, want no line", got)
	}
}
