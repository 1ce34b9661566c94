//go:build unix

package auth

import (
	"os"
	"syscall"
)

// inode returns fi's inode number: a file replaced by a rename has
// another, even with the same size and mtime.
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
