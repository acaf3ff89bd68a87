//go:build race

package jsjobs_test

// raceSlowdown: 2 under the race detector (norace_test.go).
const raceSlowdown = 2
