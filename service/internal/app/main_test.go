package app_test

import (
	"testing"

	"github.com/crew-go/crew/service/internal/app"
	"go.uber.org/goleak"
)

// Every test in the package must leave no goroutine behind. The tests
// read crewd's lines for a person (its banner, its stop line) as a
// terminal would show them, but TestNoBannerOffATerminal.
func TestMain(m *testing.M) {
	app.SetTerminal(true)
	goleak.VerifyTestMain(m)
}
