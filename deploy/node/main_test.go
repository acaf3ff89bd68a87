package node

import (
	"testing"

	"go.uber.org/goleak"
)

// The test must leave no goroutine behind: not a poller, not a watch, not
// an idle HTTP connection.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
