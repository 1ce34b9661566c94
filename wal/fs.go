package wal

import (
	"io"
	"os"
)

// fileSystem is the part of the operating system that a Log uses. Open uses
// osFS; tests substitute one that fails on demand (raft-wal types/vfs.go).
// Names are paths as given to Open joined with a segment name.
type fileSystem interface {
	// MkdirAll creates dir and its parents if missing.
	MkdirAll(dir string) error
	// ReadDir returns the names of the entries in dir.
	ReadDir(dir string) ([]string, error)
	// ReadFile returns the whole content of name.
	ReadFile(name string) ([]byte, error)
	// Create creates name, which must not exist, for writing.
	Create(name string) (file, error)
	// OpenAppend opens the existing name for writing at its end.
	OpenAppend(name string) (file, error)
	// Truncate cuts name to size bytes.
	Truncate(name string, size int64) error
	// Remove deletes name.
	Remove(name string) error
	// SyncDir fsyncs dir, making creates and removes in it durable.
	SyncDir(dir string) error
}

// file is an open segment file.
type file interface {
	io.Writer
	// Sync makes everything written so far durable.
	Sync() error
	Close() error
}

// osFS is the fileSystem of the operating system.
type osFS struct{}

var _ fileSystem = osFS{}

func (osFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }

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
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}

func (osFS) OpenAppend(name string) (file, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
}

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
