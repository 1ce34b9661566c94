package txid

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrCorrupt is returned (wrapped) by OpenGenerator when the high-water mark
// file exists but cannot be trusted: torn, truncated, overwritten or out of
// range. OpenGenerator refuses to guess, since guessing low could reissue IDs.
var ErrCorrupt = errors.New("corrupt high-water mark")

// The high-water mark file holds one record of markSize bytes:
//
//	0          8                  16          20
//	+----------+------------------+-----------+
//	|  magic   |  limit (uint64)  |  CRC-32C  |
//	+----------+------------------+-----------+
//
// magic is "txidhwm1". limit, big-endian, counts milliseconds since Epoch:
// every ID issued while this file was current has fewer milliseconds than
// limit, and limit is at most 1<<42. The CRC-32C (Castagnoli), big-endian,
// covers bytes 0 to 15.
//
// writeMark replaces the file atomically: it writes and fsyncs a temporary
// file next to it, renames it over the old one and fsyncs the directory. A
// crash leaves the old file or the new one; a stray temporary file is ignored
// and overwritten by the next write.
const (
	markMagic = "txidhwm1"
	markSize  = 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeMark returns the file contents for limit.
func encodeMark(limit uint64) []byte {
	b := make([]byte, markSize)
	copy(b, markMagic)
	binary.BigEndian.PutUint64(b[8:16], limit)
	binary.BigEndian.PutUint32(b[16:20], crc32.Checksum(b[:16], castagnoli))
	return b
}

// decodeMark returns the limit in b, or an error wrapping ErrCorrupt.
func decodeMark(b []byte) (uint64, error) {
	if len(b) != markSize {
		return 0, fmt.Errorf("%w: size %d bytes, want %d", ErrCorrupt, len(b), markSize)
	}
	if !bytes.Equal(b[:8], []byte(markMagic)) {
		return 0, fmt.Errorf("%w: magic %q, want %q", ErrCorrupt, b[:8], markMagic)
	}
	if got, want := binary.BigEndian.Uint32(b[16:20]), crc32.Checksum(b[:16], castagnoli); got != want {
		return 0, fmt.Errorf("%w: checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	limit := binary.BigEndian.Uint64(b[8:16])
	if limit > maxMillis+1 {
		return 0, fmt.Errorf("%w: limit %d ms past the last ID millisecond %d", ErrCorrupt, limit, uint64(maxMillis))
	}
	return limit, nil
}

// readMark returns the limit in the file at path; found is false when there
// is no file.
func readMark(path string) (limit uint64, found bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read high-water mark %s: %w", path, err)
	}
	limit, err = decodeMark(b)
	if err != nil {
		return 0, false, fmt.Errorf("read high-water mark %s: %w", path, err)
	}
	return limit, true, nil
}

// markFS is the part of the file system that writeMark uses. OpenGenerator
// uses osMarkFS; tests substitute one that records the order of the writes,
// fsyncs, renames and directory fsyncs.
type markFS interface {
	// Create creates or truncates the file at path for writing.
	Create(path string) (markFile, error)
	// Rename renames oldpath to newpath, replacing it.
	Rename(oldpath, newpath string) error
	// SyncDir fsyncs the directory at dir, making a rename in it durable.
	SyncDir(dir string) error
}

// markFile is a file that markFS.Create opened.
type markFile interface {
	Write(b []byte) (int, error)
	Sync() error
	Close() error
}

// osMarkFS is the markFS of the operating system.
type osMarkFS struct{}

func (osMarkFS) Create(path string) (markFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osMarkFS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

func (osMarkFS) SyncDir(dir string) error {
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

// writeMark durably replaces the file at path with one holding limit: when
// it returns nil, the new file's content (its fsync) and its name (the
// directory's fsync after the rename) are both durable, so a Generator may
// issue IDs below limit. Until then a crash leaves the old file, whose
// limit covers every ID issued so far.
func writeMark(fsys markFS, path string, limit uint64) error {
	tmp := path + ".tmp"
	if err := writeSynced(fsys, tmp, encodeMark(limit)); err != nil {
		return fmt.Errorf("write high-water mark %s: %w", tmp, err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return fmt.Errorf("write high-water mark: %w", err)
	}
	if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("write high-water mark %s: fsync dir: %w", path, err)
	}
	return nil
}

// writeSynced creates or truncates the file at path, writes b and fsyncs it.
func writeSynced(fsys markFS, path string, b []byte) error {
	f, err := fsys.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
