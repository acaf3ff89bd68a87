package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
)

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return "unknown (" + runtime.GOARCH + ")"
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func cgroupQuota() string {
	b, err := os.ReadFile("/sys/fs/cgroup/cpu.max")
	if err != nil {
		return ""
	}
	return fmt.Sprintf(", cgroup cpu.max: %s", strings.TrimSpace(string(b)))
}
