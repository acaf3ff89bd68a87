package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// ants starts its package-level default pool at import, and pond v2 its
// default pool: those goroutines are theirs, not leaks of this suite.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}
