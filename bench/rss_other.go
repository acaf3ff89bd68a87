//go:build !linux

package bench

// peakRSS is not measured off Linux.
func peakRSS() uint64 { return 0 }
