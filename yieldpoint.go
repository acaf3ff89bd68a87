//go:build !crewyield

package crew

// yieldpoint marks a step of the wake-up protocol (workerSet's rules, the
// ring's push and look) after which another goroutine may act. It costs
// nothing here; built with -tags crewyield it yields at random, which
// widens the windows between the steps for the liveness stress test.
func yieldpoint() {}
