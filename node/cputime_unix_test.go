//go:build unix

package node

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user and system) the process has used: on a
// shared machine a steadier measure than the time that went by.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
