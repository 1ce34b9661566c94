package launcher

import "syscall"

// SysProcAttr puts the child in its own process group and has the kernel SIGKILL it
// when the thread that forked it dies (see the package doc for the limits).
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
