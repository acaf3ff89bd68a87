//go:build !linux

package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent does nothing where the kernel has no parent-death signal.
func dieWithParent(*exec.Cmd, syscall.Signal) {}
