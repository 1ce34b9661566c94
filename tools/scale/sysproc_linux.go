package main

import "syscall"

// sysProcAttr makes a bench die with scale, so that an interrupted run leaves
// no load generator behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
