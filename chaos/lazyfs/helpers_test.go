//go:build linux

package lazyfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"
	bolt "go.etcd.io/bbolt"
)

// runHelper runs helper name on the mount point dir, in a process that does
// not serve the mount (TestMain).
func runHelper(name, dir string) error {
	switch name {
	case "mmap":
		return mmapWrite(dir)
	case "mmap-after":
		return mmapAfter(dir)
	case "bolt-write":
		return boltWrite(dir)
	case "bolt-check":
		return boltCheck(dir)
	case "raftwal-write":
		return raftWALWrite(dir)
	case "raftwal-check":
		return raftWALCheck(dir)
	}
	return fmt.Errorf("no helper %q", name)
}

func fsyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// mapPages maps the first three pages of the file at path, read-only and
// shared; unmap unmaps them and closes the file.
func mapPages(path string) (m []byte, unmap func(), err error) {
	r, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	m, err = syscall.Mmap(int(r.Fd()), 0, 3*PageSize, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("mmap: %w", err)
	}
	return m, func() { syscall.Munmap(m); r.Close() }, nil
}

func filled(c byte) []byte { return bytes.Repeat([]byte{c}, PageSize) }

func mmapWrite(dir string) error {
	p := filepath.Join(dir, "m")
	w, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer w.Close()
	if _, err := w.WriteAt(append(append(filled('a'), filled('b')...), filled('c')...), 0); err != nil {
		return err
	}
	if err := w.Sync(); err != nil {
		return err
	}
	if err := fsyncDir(dir); err != nil {
		return err
	}
	m, unmap, err := mapPages(p)
	if err != nil {
		return err
	}
	defer unmap()
	if m[PageSize] != 'b' {
		return fmt.Errorf("mmap page 1 = %q, want b", m[PageSize])
	}
	if _, err := w.WriteAt(filled('C'), 2*PageSize); err != nil {
		return err
	}
	if err := w.Sync(); err != nil {
		return err
	}
	if m[2*PageSize] != 'C' {
		return fmt.Errorf("mmap page 2 = %q after a synced pwrite of C", m[2*PageSize])
	}
	if _, err := w.WriteAt(filled('B'), PageSize); err != nil { // never synced
		return err
	}
	if !bytes.Equal(m[PageSize:2*PageSize], filled('B')) {
		return fmt.Errorf("mmap page 1 = %q… after a pwrite of B, want B: the mapping is not coherent", m[PageSize:PageSize+8])
	}
	return nil
}

func mmapAfter(dir string) error {
	m, unmap, err := mapPages(filepath.Join(dir, "m"))
	if err != nil {
		return err
	}
	defer unmap()
	if got := string([]byte{m[0], m[PageSize], m[2*PageSize]}); got != "abC" {
		return fmt.Errorf("after the power loss the mapping reads %q, want abC (the unsynced B dropped)", got)
	}
	return nil
}

const boltTxs = 50

func boltWrite(dir string) error {
	db, err := bolt.Open(filepath.Join(dir, "db"), 0o600, nil)
	if err != nil {
		return err
	}
	if err := fsyncDir(dir); err != nil {
		return err
	}
	for i := range boltTxs {
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			return b.Put([]byte(strconv.Itoa(i)), bytes.Repeat([]byte{byte(i)}, 3000))
		})
		if err != nil {
			return err
		}
	}
	// An exit without Close, as a killed process makes.
	return nil
}

func boltCheck(dir string) error {
	db, err := bolt.Open(filepath.Join(dir, "db"), 0o600, nil)
	if err != nil {
		return fmt.Errorf("open after the power loss: %w", err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("b"))
		if b == nil {
			return errors.New("bucket b is gone")
		}
		for i := range boltTxs {
			if v := b.Get([]byte(strconv.Itoa(i))); !bytes.Equal(v, bytes.Repeat([]byte{byte(i)}, 3000)) {
				return fmt.Errorf("key %d: %d bytes, want its committed value", i, len(v))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put([]byte("after"), []byte("x")) })
}

const walLogs = 300

func raftWALWrite(dir string) error {
	d := filepath.Join(dir, "wal")
	if err := os.Mkdir(d, 0o755); err != nil {
		return err
	}
	if err := fsyncDir(dir); err != nil {
		return err
	}
	w, err := raftwal.Open(d)
	if err != nil {
		return err
	}
	for i := uint64(1); i <= walLogs; i += 10 {
		var logs []*raft.Log
		for j := i; j < i+10; j++ {
			logs = append(logs, &raft.Log{Index: j, Term: 2, Data: bytes.Repeat([]byte{byte(j)}, 700)})
		}
		if err := w.StoreLogs(logs); err != nil {
			return err
		}
	}
	return w.SetUint64([]byte("CurrentTerm"), 2)
}

func raftWALCheck(dir string) error {
	w, err := raftwal.Open(filepath.Join(dir, "wal"))
	if err != nil {
		return fmt.Errorf("open after the power loss: %w", err)
	}
	defer w.Close()
	last, err := w.LastIndex()
	if err != nil || last != walLogs {
		return fmt.Errorf("LastIndex() = %d, %v; want %d", last, err, walLogs)
	}
	for _, i := range []uint64{1, walLogs / 2, walLogs} {
		var l raft.Log
		if err := w.GetLog(i, &l); err != nil || !bytes.Equal(l.Data, bytes.Repeat([]byte{byte(i)}, 700)) {
			return fmt.Errorf("GetLog(%d) = %v, %d bytes", i, err, len(l.Data))
		}
	}
	if term, err := w.GetUint64([]byte("CurrentTerm")); err != nil || term != 2 {
		return fmt.Errorf("CurrentTerm = %d, %v; want 2", term, err)
	}
	return w.StoreLogs([]*raft.Log{{Index: walLogs + 1, Term: 3, Data: []byte("after")}})
}
