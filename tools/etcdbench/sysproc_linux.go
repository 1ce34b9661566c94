package main

import "syscall"

// sysProcAttr makes a member die with etcdbench, so that an interrupted run
// leaves no etcd behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
