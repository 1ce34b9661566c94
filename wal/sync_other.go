//go:build !linux

package wal

import "os"

// datasync makes f's data durable: fsync(2), where the platform offers no
// fdatasync through the syscall package.
func datasync(f *os.File) error { return f.Sync() }
