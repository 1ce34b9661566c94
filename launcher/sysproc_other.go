//go:build unix && !linux

package launcher

import "syscall"

// SysProcAttr puts the child in its own process group. Outside Linux there is no
// parent-death signal: a child outlives a parent that dies without stopping it.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
