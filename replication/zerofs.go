package replication

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	rwfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/types"

	"github.com/txlog/txlog/dirsync"
)

// zeroFS is raft-wal's file system with segment files written full of zeros
// before the log appends to them, instead of preallocated with fallocate.
//
// fallocate leaves the file's blocks unwritten: the first write to a block
// changes the file's extent map, and the fsync after it then commits the file
// system's journal besides flushing the data. An append that starts a new 4
// KiB block, which is every append once a batch holds a few entries, pays
// that: on this project's ext4 disk a 3,600-byte append and fsync took about
// 1.5 times as long and 1.6 times the CPU in a fallocated file as in one
// written with zeros beforehand (docs/performance.md, the section on Raft log
// segments written with zeros); a 400-byte one, which mostly lands in a block
// already written, the same in both. PostgreSQL fills its WAL segments with
// zeros for the same reason.
//
// Writing 64 MiB of zeros and syncing them takes about 60 ms here, so it
// happens ahead of time: after each Create, a goroutine fills the next segment
// under a spare name (spareTmp, renamed to spareName once synced) that
// raft-wal's filer ignores (not *.wal), and the next Create renames it into
// place. Without a spare ready (a new log's first segment, or a Create while
// the spare is still being written) Create fills the file itself. A crash
// leaves at most a whole spare, used by the next run, or a spareTmp, which the
// next run removes; raft-wal never sees either. The spare costs one segment's
// size of disk.
//
// A segment raft-wal deletes (the log's head, once a snapshot covers it) is
// kept under recycleName, unless one is kept already, and the next spare is
// written over it instead of into a new file: the same zeros, but into pages
// the page cache holds already. A new file's pages come from free memory,
// which on this project's virtual machines the host takes back within
// seconds; filling 512 MiB of new file took 0.5-0.9 s of system CPU there,
// against 0.05 s over a cached file. The kept segment is never read: its name
// is not *.wal, it becomes a spare only once it is all zeros and synced, and a
// crash while it is being zeroed leaves spareTmp, which the next run removes.
// It costs one more segment's size of disk.
type zeroFS struct {
	*rwfs.FS
	dir string

	mu        sync.Mutex
	preparing bool   // a goroutine is writing the spare
	spare     uint64 // the size of the ready spare file, 0 if none
	recycled  bool   // a deleted segment is kept under recycleName
	closed    bool
	wg        sync.WaitGroup
	onPrepare func(error)
	// syncDir fsyncs a directory: syncDir, or a test's recorder.
	syncDir func(dir string) error
}

const (
	spareName   = "spare.zeros"
	spareTmp    = "spare.zeros.tmp"
	recycleName = "recycle.old"
	zeroChunk   = 1 << 20
)

// newZeroFS returns the file system for a raft-wal log in dir. onPrepare, if
// not nil, is told the outcome of each spare's preparation.
func newZeroFS(dir string, onPrepare func(error)) *zeroFS {
	z := &zeroFS{FS: rwfs.New(), dir: dir, onPrepare: onPrepare, syncDir: dirsync.Sync}
	// A spare from an earlier run is used if it is whole; a temporary one is not.
	os.Remove(filepath.Join(dir, spareTmp))
	if fi, err := os.Stat(filepath.Join(dir, spareName)); err == nil && fi.Mode().IsRegular() {
		z.spare = uint64(fi.Size())
	}
	if fi, err := os.Lstat(filepath.Join(dir, recycleName)); err == nil && fi.Mode().IsRegular() {
		z.recycled = true
	}
	return z
}

// Delete removes the segment file name, or keeps it under recycleName for the
// next spare if no deleted segment is kept yet, and syncs the directory, as
// raft-wal's own Delete does.
func (z *zeroFS) Delete(dir, name string) error {
	if dir != z.dir {
		return fmt.Errorf("zerofs: delete in %s, a file system for %s", dir, z.dir)
	}
	path := filepath.Join(dir, name)
	z.mu.Lock()
	keep := !z.recycled && !z.closed
	if keep {
		if err := os.Rename(path, filepath.Join(dir, recycleName)); err != nil {
			keep = false
		} else {
			z.recycled = true
		}
	}
	z.mu.Unlock()
	if !keep {
		if err := os.Remove(path); err != nil {
			return err
		}
	}
	return z.syncDir(dir)
}

// Create creates the segment file name in dir, size bytes of zeros: the spare
// if one of that size is ready, else a file it fills itself. Then it starts
// preparing the next spare.
func (z *zeroFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	if dir != z.dir {
		return nil, fmt.Errorf("zerofs: create in %s, a file system for %s", dir, z.dir)
	}
	path := filepath.Join(dir, name)
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("zerofs: create %s: %w", path, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	f, err := z.takeSpare(path, size)
	if err != nil {
		return nil, err
	}
	if f == nil {
		if f, err = createZeros(path, size); err != nil {
			return nil, err
		}
	}
	z.prepare(size)
	return &zeroFile{File: f, dir: dir, syncDir: z.syncDir}, nil
}

// takeSpare renames the spare to path and opens it, if a spare of size bytes
// is ready; else it returns nil.
func (z *zeroFS) takeSpare(path string, size uint64) (*os.File, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.preparing || z.spare != size || size == 0 {
		return nil, nil
	}
	z.spare = 0
	if err := os.Rename(filepath.Join(z.dir, spareName), path); err != nil {
		return nil, nil // gone or unusable: fill a new file instead
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		os.Remove(path) // so that raft-wal may create the segment again
		return nil, err
	}
	return f, nil
}

// createZeros creates path with size bytes of zeros, synced.
func createZeros(path string, size uint64) (*os.File, error) {
	return openZeros(path, size, os.O_CREATE|os.O_EXCL)
}

// openZeros opens path with flag added to O_RDWR and makes it size bytes of
// zeros, synced: cut or extended to size, then written over. When filling it
// fails, it removes path.
func openZeros(path string, size uint64, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|flag, 0o644)
	if err != nil {
		return nil, err
	}
	err = f.Truncate(int64(size))
	if err == nil {
		err = writeZeros(f, size)
	}
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("zerofs: fill %s: %w", path, err)
	}
	return f, nil
}

// writeZeros writes size bytes of zeros to f from its start and syncs it.
func writeZeros(f *os.File, size uint64) error {
	zeros := make([]byte, min(size, zeroChunk))
	for off := uint64(0); off < size; off += uint64(len(zeros)) {
		n := min(uint64(len(zeros)), size-off)
		if _, err := f.WriteAt(zeros[:n], int64(off)); err != nil {
			return err
		}
	}
	return f.Sync()
}

// prepare starts writing a spare of size bytes unless one is ready or being
// written.
func (z *zeroFS) prepare(size uint64) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.closed || z.preparing || z.spare == size || size == 0 {
		return
	}
	z.preparing = true
	z.wg.Add(1)
	go func() {
		defer z.wg.Done()
		err := z.writeSpare(size)
		z.mu.Lock()
		z.preparing = false
		if err == nil {
			z.spare = size
		}
		z.mu.Unlock()
		if z.onPrepare != nil {
			z.onPrepare(err)
		}
	}()
}

// writeSpare writes spareTmp full of zeros, syncs it and renames it to
// spareName. The directory is synced when a segment made from it is first
// synced (zeroFile.Sync), as for a segment it creates itself.
func (z *zeroFS) writeSpare(size uint64) error {
	tmp := filepath.Join(z.dir, spareTmp)
	os.Remove(tmp)
	f, err := z.takeRecycled(tmp, size)
	if err != nil {
		return err
	}
	if f == nil {
		if f, err = createZeros(tmp, size); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, filepath.Join(z.dir, spareName))
}

// takeRecycled renames the kept segment, if there is one, to path and writes
// size bytes of zeros over it, synced; else it returns nil.
func (z *zeroFS) takeRecycled(path string, size uint64) (*os.File, error) {
	z.mu.Lock()
	if !z.recycled {
		z.mu.Unlock()
		return nil, nil
	}
	z.recycled = false
	err := os.Rename(filepath.Join(z.dir, recycleName), path)
	z.mu.Unlock()
	if err != nil {
		return nil, nil // gone or unusable: fill a new file instead
	}
	// A deleted segment of another size is cut or extended. A spareTmp left by
	// a failed open is removed by the next writeSpare or run.
	return openZeros(path, size, 0)
}

// Close waits for a spare being written.
func (z *zeroFS) Close() error {
	z.mu.Lock()
	z.closed = true
	z.mu.Unlock()
	z.wg.Wait()
	return nil
}

// zeroFile is a segment file. Its first Sync also syncs the directory, so the
// new name survives a crash once raft-wal relies on the file's contents: what
// raft-wal's own file does.
//
// Sync is fdatasync(2), where raft-wal's own file calls fsync(2). The file's
// size and blocks were made durable when its zeros were (writeZeros), so an
// append changes only data and timestamps, and fdatasync makes the data
// durable without writing the inode for its new modification time: on ext4
// without a journal, what this project's machines have, fsync writes the inode
// block and waits for it before the cache flush whenever the time has moved
// (docs/performance.md, the section on Raft log segments written with zeros).
// A write past the end of the file (an entry larger than a segment) changes the
// size, which fdatasync writes too. PostgreSQL syncs its zero-filled WAL
// segments the same way. A segment raft-wal reopens (the tail, after a restart)
// is raft-wal's own *os.File and keeps fsync: it may come from an older data
// dir, where raft-wal created it with fallocate.
type zeroFile struct {
	*os.File
	dir     string
	syncDir func(dir string) error
	synced  atomic.Bool
}

func (f *zeroFile) Sync() error {
	if err := fdatasync(f.File); err != nil {
		return err
	}
	if !f.synced.Load() {
		if err := f.syncDir(f.dir); err != nil {
			return err
		}
		f.synced.Store(true)
	}
	return nil
}
