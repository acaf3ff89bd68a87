package prom_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test in the package must leave no goroutine behind, including the
// HTTP servers and clients of the scrape tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
