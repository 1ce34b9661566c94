package chaos

import "syscall"

// sysProcAttr puts the child in its own process group and has the kernel SIGKILL it
// when the thread that forked it dies (see the package doc for the limits).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
