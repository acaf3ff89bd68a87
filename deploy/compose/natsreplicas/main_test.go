package main

import (
	"testing"

	"go.uber.org/goleak"
)

// No test may leave a goroutine behind: not a server's, not a client's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
