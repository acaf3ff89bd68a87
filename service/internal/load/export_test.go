package load

import "time"

// SetCountsStill sets how long the wait trusts counts that stay the same,
// and returns a func that puts it back.
func SetCountsStill(d time.Duration) func() {
	before := countsStill
	countsStill = d
	return func() { countsStill = before }
}
