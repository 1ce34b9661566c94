package dirsync

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Sync fsyncs the directory dir.
func Sync(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// MkdirAll creates dir and any missing parents with perm, as os.MkdirAll
// does, and fsyncs the parent of each directory it creates with sync, the
// deepest last. A dir that exists already is left as it is: its entry was made
// durable when it was created (by an earlier run of the same code, or by
// whoever made it).
func MkdirAll(dir string, perm os.FileMode, sync func(dir string) error) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("mkdir %s: not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("mkdir %s: %w", dir, err)
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(parent, perm, sync); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("mkdir %s: %w", dir, err)
	}
	return sync(parent)
}

// WriteFile writes data to path durably, replacing what was there in one
// step: a temporary file beside it (path + ".tmp"), its fsync, a rename over
// path and sync of the directory. A crash leaves the old file or the new one,
// never a torn one.
func WriteFile(path string, data []byte, perm os.FileMode, sync func(dir string) error) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return sync(filepath.Dir(path))
}
