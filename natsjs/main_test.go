package natsjs_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if maybeWorker() || maybeJournalWorker() {
		return
	}
	goleak.VerifyTestMain(m)
}
