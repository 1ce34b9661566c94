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
	const n = 2000 // about 10 segments of 64 KiB
	for i := uint64(1); i <= n; i += 10 {
		batch := make([]*raft.Log, 0, 10)
		for j := i; j < i+10; j++ {
			batch = append(batch, entry(j))
		}
		if err := w.StoreLogs(batch); err != nil {
			t.Fatal(err)
		}
	}
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
	check := func(last uint64) {
		t.Helper()
		if got, err := w.LastIndex(); err != nil || got != last {
			t.Fatalf("LastIndex() = %d, %v; want %d", got, err, last)
		}
		for i := uint64(1); i <= last; i++ {
			var l raft.Log
			if err := w.GetLog(i, &l); err != nil {
				t.Fatalf("GetLog(%d): %v", i, err)
			}
			if want := entry(i); !bytes.Equal(l.Data, want.Data) {
				t.Fatalf("GetLog(%d) = %q, want %q", i, l.Data, want.Data)
			}
		}
	}
	check(n)
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
	check(n)
	var _ types.VFS = (*zeroFS)(nil)
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
