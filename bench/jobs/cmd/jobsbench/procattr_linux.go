package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent asks the kernel to send sig to cmd's process when the
// benchmark dies, so that a benchmark killed (a CI timeout) leaves no
// server or worker behind.
func dieWithParent(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = sig
}
