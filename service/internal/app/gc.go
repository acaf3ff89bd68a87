package app

import (
	"math"
	"runtime/debug"
)

// gcPercentUnderLimit is the GC percent crewd runs with when a memory
// limit bounds its heap (GOMEMLIMIT: the Kubernetes files set it from the
// container's limit) and GOGC does not say otherwise. Under a limit the
// heap cannot outgrow the container whatever the percent, and the GC works
// harder as it nears the limit; the default percent of 100 then only costs
// CPU, a collection each time the live heap has doubled, which a service
// of short-lived requests and jobs meets often.
const gcPercentUnderLimit = 400

// tuneGC sets the GC percent to gcPercentUnderLimit when the runtime has a
// memory limit (as it read GOMEMLIMIT: "off" is none) and GOGC is not set,
// and returns the percent in force (-1: off).
func tuneGC(getenv func(string) string) int {
	if getenv("GOGC") == "" && debug.SetMemoryLimit(-1) < math.MaxInt64 {
		debug.SetGCPercent(gcPercentUnderLimit)
		return gcPercentUnderLimit
	}
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}
