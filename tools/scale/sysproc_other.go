//go:build !linux

package main

import "syscall"

// sysProcAttr has nothing to set where there is no Pdeathsig.
func sysProcAttr() *syscall.SysProcAttr { return nil }
