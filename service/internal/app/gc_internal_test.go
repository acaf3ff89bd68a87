package app

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestTuneGC: the GC percent is raised under a memory limit only (one
// the runtime holds: GOMEMLIMIT=off is none), and never over a GOGC the
// operator set.
func TestTuneGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	limit := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(limit)
	for _, c := range []struct {
		limit int64
		env   map[string]string
		want  int
	}{
		{256 << 20, map[string]string{"GOMEMLIMIT": "256MiB"}, gcPercentUnderLimit},
		{256 << 20, map[string]string{"GOMEMLIMIT": "256MiB", "GOGC": "50"}, 100}, // the runtime read GOGC, not tuneGC
		{math.MaxInt64, map[string]string{"GOMEMLIMIT": "off"}, 100},
		{math.MaxInt64, map[string]string{}, 100},
	} {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(c.limit)
		got := tuneGC(func(k string) string { return c.env[k] })
		if now := debug.SetGCPercent(100); got != c.want || now != c.want {
			t.Errorf("limit %d, env %v: tuneGC %d, GC percent %d, want %d", c.limit, c.env, got, now, c.want)
		}
	}
}
