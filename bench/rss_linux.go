//go:build linux

package bench

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// peakRSS is the process's peak resident set: VmHWM from /proc/self/status,
// or getrusage's maxrss when that is not readable.
func peakRSS() uint64 {
	if f, err := os.Open("/proc/self/status"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
				kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				if err == nil {
					return kb * 1024
				}
			}
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		return uint64(ru.Maxrss) * 1024 // kilobytes on Linux
	}
	return 0
}
