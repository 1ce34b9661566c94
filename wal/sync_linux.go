package wal

import (
	"os"
	"syscall"
)

// datasync makes f's data durable with fdatasync(2): the data and the
// metadata needed to read it back (the size), not the timestamps. Since a
// segment's records overwrite zeros written ahead, most syncs then flush
// data blocks only, with no journal commit for the inode.
//
// replication has the same function for the Raft log's segments; this copy
// keeps the wal package on the standard library alone.
func datasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}
