//go:build !race

package jsjobs_test

// raceSlowdown is how many times longer a bound on a job's latency is
// under the race detector, which slows this package's work severalfold:
// 1 without it.
const raceSlowdown = 1
