package store

import (
	"golang.org/x/sys/unix"
)

// dropPages tells the kernel that the process no longer needs the pages of
// the memory map at [addr, addr+n): they leave its resident set and are read
// back from the page cache (a minor fault) when touched again. The map is a
// shared, read-only map of the database file, so no data changes.
func dropPages(addr uintptr, n int64) error {
	if n <= 0 {
		return nil
	}
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, addr, uintptr(n), unix.MADV_DONTNEED)
	if errno != 0 {
		return errno
	}
	return nil
}
