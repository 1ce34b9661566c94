//go:build !linux

package store

// dropPages does nothing where madvise(MADV_DONTNEED) is not available.
func dropPages(addr uintptr, n int64) error { return nil }
