package wal

import (
	"io"
	"os"
)

// fileSystem is the part of the operating system that a Log uses. Open uses
// osFS; tests substitute one that fails on demand (raft-wal types/vfs.go).
// Names are paths as given to Open joined with a segment name.
type fileSystem interface {
	// Mkdir creates the directory dir, whose parent must exist. It fails
	// with an error matching fs.ErrExist if dir exists, and fs.ErrNotExist
	// if its parent does not.
	Mkdir(dir string) error
	// ReadDir returns the names of the entries in dir.
	ReadDir(dir string) ([]string, error)
	// ReadFile returns the whole content of name.
	ReadFile(name string) ([]byte, error)
	// Create creates name, which must not exist, for writing.
	Create(name string) (file, error)
	// OpenWrite opens the existing name for writing at given offsets.
	OpenWrite(name string) (file, error)
	// Truncate cuts name to size bytes.
	Truncate(name string, size int64) error
	// Remove deletes name.
	Remove(name string) error
	// SyncDir fsyncs dir, making the creates and removes of its entries
	// durable.
	SyncDir(dir string) error
}

// file is an open segment file. The log writes it at explicit offsets: a
// segment may carry a tail of zeros written ahead of its records.
type file interface {
	io.WriterAt
	// Sync makes everything written so far durable, with the file's size:
	// fdatasync(2) where there is one. It does not wait for other metadata
	// (the modification time), which recovery does not need.
	Sync() error
	// SyncAll is fsync(2): everything written, and all of the file's
	// metadata. Rotation uses it after cutting the zeros off a segment, since
	// recovery must never find a closed segment longer than its records, and
	// fdatasync's duty to a file that shrank is less plain than to one that
	// grew.
	SyncAll() error
	// Truncate changes the file's size.
	Truncate(size int64) error
	Close() error
}

// osFS is the fileSystem of the operating system.
type osFS struct{}

var _ fileSystem = osFS{}

func (osFS) Mkdir(dir string) error { return os.Mkdir(dir, 0o755) }

func (osFS) ReadDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

func (osFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

func (osFS) Create(name string) (file, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) OpenWrite(name string) (file, error) {
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// osFile is a segment file of the operating system, synced with datasync.
type osFile struct{ *os.File }

func (f osFile) Sync() error { return datasync(f.File) }

func (f osFile) SyncAll() error { return f.File.Sync() }

func (osFS) Truncate(name string, size int64) error { return os.Truncate(name, size) }

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
