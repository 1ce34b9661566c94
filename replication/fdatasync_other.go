//go:build !linux

package replication

import "os"

// fdatasync is f.Sync: other systems get fsync(2) (or its equivalent).
func fdatasync(f *os.File) error { return f.Sync() }
