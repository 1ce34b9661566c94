package redistest

import "syscall"

// sysProcAttr makes the kernel kill redis-server if the test binary dies
// without running its cleanups (a panic, a -timeout), so no server outlives
// its test. The kernel sends the signal when the OS thread that started the
// child exits; Go ends threads only for goroutines that exit while locked to
// one (runtime.LockOSThread), which Start's callers do not do.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
