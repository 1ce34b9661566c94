package replication

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"
	rwfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// unwrittenBytes returns how many bytes of path's extents the file system
// keeps unwritten (allocated, reading as zeros, converted on the first write),
// from the FIEMAP ioctl. ok is false where the file system does not support it.
func unwrittenBytes(t *testing.T, path string) (n uint64, ok bool) {
	t.Helper()
	const (
		fsIocFiemap       = 0xC020660B
		fiemapFlagSync    = 0x1
		fiemapExtentLast  = 0x1
		fiemapUnwritten   = 0x800
		maxExtents        = 256
		fiemapHeaderBytes = 32
		extentBytes       = 56
	)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var start uint64
	for {
		buf := make([]byte, fiemapHeaderBytes+maxExtents*extentBytes)
		hdr := (*[4]uint64)(unsafe.Pointer(&buf[0]))
		hdr[0], hdr[1] = start, ^uint64(0)-start // fm_start, fm_length
		counts := (*[4]uint32)(unsafe.Pointer(&buf[16]))
		counts[0], counts[2] = fiemapFlagSync, maxExtents // fm_flags, fm_extent_count
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), fsIocFiemap, uintptr(unsafe.Pointer(&buf[0]))); errno != 0 {
			if errors.Is(errno, syscall.EOPNOTSUPP) || errors.Is(errno, syscall.ENOTTY) {
				return 0, false
			}
			t.Fatalf("FIEMAP %s: %v", path, errno)
		}
		mapped := counts[1]
		if mapped == 0 {
			return n, true
		}
		for i := range mapped {
			e := buf[fiemapHeaderBytes+int(i)*extentBytes:]
			logical := *(*uint64)(unsafe.Pointer(&e[0]))
			length := *(*uint64)(unsafe.Pointer(&e[16]))
			flags := *(*uint32)(unsafe.Pointer(&e[40]))
			if flags&fiemapUnwritten != 0 {
				n += length
			}
			start = logical + length
			if flags&fiemapExtentLast != 0 {
				return n, true
			}
		}
	}
}

// TestZeroFSCreate checks that a segment file is size bytes of zeros, all of
// them written (no unwritten extents), while raft-wal's own file system leaves
// its preallocated blocks unwritten: the difference the zero fill is for.
func TestZeroFSCreate(t *testing.T) {
	dir := t.TempDir()
	const size = 4 << 20
	z := newZeroFS(dir, nil)
	defer z.Close()
	f, err := z.Create(dir, "seg-1.wal", size)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	path := filepath.Join(dir, "seg-1.wal")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != size || !bytes.Equal(data, make([]byte, size)) {
		t.Fatalf("segment file of %d bytes, want %d zeros", len(data), size)
	}
	if _, err := f.WriteAt([]byte("entry"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := z.Create(dir, "seg-1.wal", size); !errors.Is(err, os.ErrExist) {
		t.Errorf("Create of an existing segment = %v, want ErrExist", err)
	}

	if fi, err := os.Stat(path); err != nil {
		t.Fatal(err)
	} else if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Blocks*512 < size {
		t.Errorf("%d bytes of the segment allocated, want all %d (no holes)", st.Blocks*512, size)
	}
	n, ok := unwrittenBytes(t, path)
	if !ok {
		t.Log("the file system has no FIEMAP: extents not checked")
		return
	}
	if n != 0 {
		t.Errorf("%d bytes of the zero-filled segment are unwritten extents, want 0", n)
	}
	other := t.TempDir()
	g, err := rwfs.New().Create(other, "seg-1.wal", size)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if n, _ := unwrittenBytes(t, filepath.Join(other, "seg-1.wal")); n == 0 {
		t.Log("raft-wal's own file system left no unwritten extents here (no fallocate?): the check above proves less")
	}
}

// TestZeroFSSpare checks that after a Create the next segment is prepared
// under the spare name, that the next Create takes that very file, and that a
// new run reuses a whole spare and removes a half-written one.
func TestZeroFSSpare(t *testing.T) {
	dir := t.TempDir()
	const size = 1 << 20
	prepared := make(chan error, 4)
	z := newZeroFS(dir, func(err error) { prepared <- err })
	first, err := z.Create(dir, "seg-1.wal", size)
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	if err := <-prepared; err != nil {
		t.Fatalf("preparing the spare: %v", err)
	}
	spare, err := os.Stat(filepath.Join(dir, spareName))
	if err != nil {
		t.Fatalf("no spare after a Create: %v", err)
	}
	if spare.Size() != size {
		t.Fatalf("spare of %d bytes, want %d", spare.Size(), size)
	}
	second, err := z.Create(dir, "seg-2.wal", size)
	if err != nil {
		t.Fatal(err)
	}
	second.Close()
	got, err := os.Stat(filepath.Join(dir, "seg-2.wal"))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(spare, got) {
		t.Error("the second segment is not the spare renamed")
	}
	if err := <-prepared; err != nil {
		t.Fatalf("preparing the next spare: %v", err)
	}
	z.Close()

	// A new run: a whole spare is used, a temporary one removed.
	if err := os.WriteFile(filepath.Join(dir, spareTmp), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	spare, err = os.Stat(filepath.Join(dir, spareName))
	if err != nil {
		t.Fatal(err)
	}
	z = newZeroFS(dir, func(err error) { prepared <- err })
	defer z.Close()
	if _, err := os.Stat(filepath.Join(dir, spareTmp)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary spare is still there: %v", err)
	}
	third, err := z.Create(dir, "seg-3.wal", size)
	if err != nil {
		t.Fatal(err)
	}
	third.Close()
	if got, err := os.Stat(filepath.Join(dir, "seg-3.wal")); err != nil || !os.SameFile(spare, got) {
		t.Errorf("the new run did not use the earlier run's spare (%v)", err)
	}
	<-prepared
}

// TestZeroFSWAL runs raft-wal on zeroFS with small segments: entries survive
// rotations, a reopen and a tail truncation, and the spare is never mistaken
// for a segment.
func TestZeroFSWAL(t *testing.T) {
	dir := t.TempDir()
	open := func() (*raftwal.WAL, func()) {
		meta := &metadb.BoltMetaDB{}
		z := newZeroFS(dir, nil)
		w, err := raftwal.Open(dir, raftwal.WithMetaStore(meta), raftwal.WithSegmentSize(64<<10),
			raftwal.WithSegmentFiler(segment.NewFiler(dir, z)))
		if err != nil {
			t.Fatal(err)
		}
		return w, func() {
			if err := errors.Join(w.Close(), z.Close(), meta.Close()); err != nil {
				t.Fatal(err)
			}
		}
	}
	entry := func(i uint64) *raft.Log {
		return &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry %d %s", i, bytes.Repeat([]byte("x"), 300)))}
	}
	w, closeWAL := open()
	// store appends entries first to last, 10 at a time.
	store := func(first, last uint64) {
		t.Helper()
		for i := first; i <= last; i += 10 {
			batch := make([]*raft.Log, 0, 10)
			for j := i; j < i+10; j++ {
				batch = append(batch, entry(j))
			}
			if err := w.StoreLogs(batch); err != nil {
				t.Fatal(err)
			}
		}
	}
	const n = 2000 // about 10 segments of 64 KiB
	store(1, n)
	closeWAL()

	segs := 0
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".wal" {
			segs++
		}
	}
	if segs < 5 {
		t.Fatalf("%d segments after %d entries, want several rotations", segs, n)
	}
	w, closeWAL = open()
	defer func() { closeWAL() }()
	check := func(first, last uint64) {
		t.Helper()
		if got, err := w.FirstIndex(); err != nil || got != first {
			t.Fatalf("FirstIndex() = %d, %v; want %d", got, err, first)
		}
		if got, err := w.LastIndex(); err != nil || got != last {
			t.Fatalf("LastIndex() = %d, %v; want %d", got, err, last)
		}
		for i := first; i <= last; i++ {
			var l raft.Log
			if err := w.GetLog(i, &l); err != nil {
				t.Fatalf("GetLog(%d): %v", i, err)
			}
			if want := entry(i); !bytes.Equal(l.Data, want.Data) {
				t.Fatalf("GetLog(%d) = %q, want %q", i, l.Data, want.Data)
			}
		}
	}
	check(1, n)
	// Raft truncates a follower's tail when a new leader overrules it.
	if err := w.DeleteRange(n-500, n); err != nil {
		t.Fatal(err)
	}
	for i := uint64(n - 500); i <= n; i++ {
		if err := w.StoreLogs([]*raft.Log{entry(i)}); err != nil {
			t.Fatal(err)
		}
	}
	closeWAL()
	w, closeWAL = open()
	check(1, n)

	// A snapshot truncates the head: whole segments go, one is kept for
	// recycling, and the segments written next are made from it.
	if err := w.DeleteRange(1, n/2); err != nil {
		t.Fatal(err)
	}
	store(n+1, 2*n)
	closeWAL()
	w, closeWAL = open()
	check(n/2+1, 2*n)
	var _ types.VFS = (*zeroFS)(nil)
}

// TestZeroFSRecycle checks that a deleted segment is kept, once, and that the
// next spare is written over it: the same file, all zeros, the right size; and
// that a new run uses a segment an earlier one kept.
func TestZeroFSRecycle(t *testing.T) {
	dir := t.TempDir()
	const size = 1 << 20
	prepared := make(chan error, 8)
	z := newZeroFS(dir, func(err error) { prepared <- err })
	defer func() { z.Close() }()
	// segment creates a segment, waits for the next spare, and fills the
	// segment with n bytes that are not zeros, as raft-wal's appends would.
	segment := func(name string, n int) os.FileInfo {
		t.Helper()
		f, err := z.Create(dir, name, size)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-prepared; err != nil {
			t.Fatalf("preparing the spare after %s: %v", name, err)
		}
		if _, err := f.WriteAt(bytes.Repeat([]byte{0xa5}, n), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	sameFile := func(name string, want os.FileInfo) bool {
		fi, err := os.Stat(filepath.Join(dir, name))
		return err == nil && os.SameFile(fi, want)
	}
	zeros := func(name string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != size {
			t.Fatalf("%s has %d bytes, want %d", name, len(b), size)
		}
		if i := bytes.IndexFunc(b, func(r rune) bool { return r != 0 }); i >= 0 {
			t.Fatalf("%s has a byte that is not zero at %d", name, i)
		}
	}

	first := segment("seg-1.wal", size+4096) // written past its end, as for an entry larger than a segment
	second := segment("seg-2.wal", 1000)
	if err := z.Delete(dir, "seg-1.wal"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "seg-1.wal")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("seg-1.wal is still there after Delete: %v", err)
	}
	if !sameFile(recycleName, first) {
		t.Fatal("the deleted segment is not kept under the recycle name")
	}
	if err := z.Delete(dir, "seg-2.wal"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "seg-2.wal")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("seg-2.wal is still there after Delete: %v", err)
	}
	if !sameFile(recycleName, first) || sameFile(recycleName, second) {
		t.Fatal("a second deleted segment replaced the kept one")
	}

	// The next spare is the kept segment, zeroed.
	segment("seg-3.wal", 1000)
	if !sameFile(spareName, first) {
		t.Fatal("the spare was not written over the kept segment")
	}
	zeros(spareName)
	if _, err := os.Stat(filepath.Join(dir, recycleName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the kept segment is still there once it is the spare: %v", err)
	}

	// A new run uses the segment an earlier one kept.
	third := segment("seg-4.wal", 1000)
	if err := z.Delete(dir, "seg-4.wal"); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	z = newZeroFS(dir, func(err error) { prepared <- err })
	segment("seg-5.wal", 1000)
	if !sameFile(spareName, third) {
		t.Fatal("a new run did not write its spare over the segment kept by the earlier run")
	}
	zeros(spareName)
}

// TestZeroFSSpareAtReopen checks that a raft-wal log reopened without a spare
// (a data dir from before zeroFS, or a spare lost) prepares one, so that its
// next rotation does not write a segment's zeros on the append path.
func TestZeroFSSpareAtReopen(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), LogStore: LogStoreWAL}
	hlog := newHCLogger(slog.New(slog.DiscardHandler))
	spare := filepath.Join(cfg.Dir, "wal", spareName)
	logs, err := openLogStore(cfg, hlog)
	if err != nil {
		t.Fatal(err)
	}
	if err := logs.Close(); err != nil { // waits for the spare
		t.Fatal(err)
	}
	if _, err := os.Stat(spare); err != nil {
		t.Fatalf("no spare after a new log's first segment: %v", err)
	}
	if err := os.Remove(spare); err != nil {
		t.Fatal(err)
	}
	if logs, err = openLogStore(cfg, hlog); err != nil {
		t.Fatal(err)
	}
	if err := logs.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(spare); err != nil || fi.Size() != int64(raftwal.DefaultSegmentSize) {
		t.Fatalf("spare after a reopen: %v, %v; want %d bytes", fi, err, raftwal.DefaultSegmentSize)
	}
}
