//go:build crewyield

package crew

import (
	"math/rand/v2"
	"runtime"
)

// yieldpoint, in the build for the widened-window stress test: at random,
// give the thread to another goroutine or hold it for a short while, so
// that steps of the protocol that are a few instructions apart in the
// normal build are interleaved with every other goroutine's steps.
func yieldpoint() {
	switch r := rand.Uint32(); r & 7 {
	case 0, 1:
		runtime.Gosched()
	case 2:
		for i := range r >> 24 {
			_ = i
		}
	}
}
