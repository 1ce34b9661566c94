package main

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data, and its size when that changed, but not its
// other metadata: what bbolt and most logs call on Linux.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
