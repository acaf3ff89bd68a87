package app

import (
	"runtime/debug"
	"testing"
)

// TestTuneGC: the GC percent is raised under a memory limit only, and
// never over a GOGC the operator set.
func TestTuneGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	for _, c := range []struct {
		env  map[string]string
		want int
	}{
		{map[string]string{"GOMEMLIMIT": "256MiB"}, gcPercentUnderLimit},
		{map[string]string{"GOMEMLIMIT": "256MiB", "GOGC": "50"}, 100}, // the runtime read GOGC, not tuneGC
		{map[string]string{}, 100},
	} {
		debug.SetGCPercent(100)
		got := tuneGC(func(k string) string { return c.env[k] })
		if now := debug.SetGCPercent(100); got != c.want || now != c.want {
			t.Errorf("env %v: tuneGC %d, GC percent %d, want %d", c.env, got, now, c.want)
		}
	}
}
