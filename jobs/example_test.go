package jobs_test

import (
	"fmt"

	"github.com/crew-go/crew/jobs"
)

// The waits before a job's next run after its attempt-th run failed: from
// the least (half off at random) to the most.
func ExampleBackoff() {
	least := func(int64) int64 { return 0 }
	most := func(n int64) int64 { return n - 1 }
	for _, attempt := range []int{1, 2, 3, 12, 13, 25} {
		fmt.Printf("after failure %d: %v to %v\n", attempt,
			jobs.Backoff(attempt, least), jobs.Backoff(attempt, most))
	}
	// Output:
	// after failure 1: 500ms to 1s
	// after failure 2: 1s to 2s
	// after failure 3: 2s to 4s
	// after failure 12: 17m4s to 34m8s
	// after failure 13: 30m0s to 1h0m0s
	// after failure 25: 30m0s to 1h0m0s
}
