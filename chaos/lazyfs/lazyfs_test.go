//go:build linux

package lazyfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// helperEnv makes the test binary run one helper (helpers.go) in a process of
// its own, on the directory in its first argument: code that mmaps a file on
// the mount must not run in the process that serves it (a page fault there
// cannot be served while the Go runtime stops the world).
const helperEnv = "LAZYFS_TEST_HELPER"

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		if err := runHelper(h, os.Args[len(os.Args)-1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// needFUSE fails the test when lazyfs cannot mount here. The tests never skip:
// CI installs fuse3 and runs as root (scripts/test.sh).
func needFUSE(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		t.Fatalf("lazyfs cannot mount here: %v (run as root with /dev/fuse, or install fuse3)", err)
	}
}

// mount mounts a new lazyfs under rule and returns it with its mount point.
func mount(t *testing.T, rule DirRule, seed uint64) (*FS, string) {
	t.Helper()
	needFUSE(t)
	dir := t.TempDir()
	f, err := Mount(Config{Backing: filepath.Join(dir, "disk"), Mount: filepath.Join(dir, "mnt"), Dirs: rule, Seed: seed})
	if err != nil {
		t.Fatalf("Mount() = %v", err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	return f, filepath.Join(dir, "mnt")
}

// crash loses power in mode and turns it on again.
func crash(t *testing.T, f *FS, mode LossMode) Loss {
	t.Helper()
	loss, err := f.PowerLoss(mode)
	if err != nil {
		t.Fatalf("PowerLoss(%s) = %v", mode, err)
	}
	f.PowerOn()
	return loss
}

func writeFile(t *testing.T, path string, data []byte, sync bool) {
	t.Helper()
	fd, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if _, err := fd.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := fd.Sync(); err != nil {
			t.Fatalf("fsync %s: %v", path, err)
		}
	}
}

func appendFile(t *testing.T, path string, data []byte) {
	t.Helper()
	fd, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if _, err := fd.Write(data); err != nil {
		t.Fatal(err)
	}
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	if err := fsyncDir(dir); err != nil {
		t.Fatalf("fsync dir %s: %v", dir, err)
	}
}

// checkContent says how the file at path differs from want ("absent" for nil).
func checkContent(path string, want []byte) error {
	got, err := os.ReadFile(path)
	switch {
	case want == nil && errors.Is(err, os.ErrNotExist):
		return nil
	case want == nil && err == nil:
		return fmt.Errorf("%s exists (%d bytes), want it absent", filepath.Base(path), len(got))
	case err != nil:
		return fmt.Errorf("%s: %v, want %d bytes", filepath.Base(path), err, len(want))
	case !bytes.Equal(got, want):
		return fmt.Errorf("%s holds %d bytes %.20q, want %d bytes %.20q", filepath.Base(path), len(got), got, len(want), want)
	}
	return nil
}

func mustContent(t *testing.T, path string, want []byte) {
	t.Helper()
	if err := checkContent(path, want); err != nil {
		t.Error(err)
	}
}

func TestUnsyncedDataDropped(t *testing.T) {
	for _, rule := range []DirRule{DirsPOSIX, DirsJournal} {
		t.Run(string(rule), func(t *testing.T) {
			f, mnt := mount(t, rule, 1)
			synced := bytes.Repeat([]byte("synced "), 1000)
			p := filepath.Join(mnt, "f")
			writeFile(t, p, synced, true)
			syncDir(t, mnt)
			appendFile(t, p, []byte("lost tail"))
			writeFile(t, p, []byte("OVERWRITE"), false)
			writeFile(t, filepath.Join(mnt, "never-synced"), []byte("x"), false)
			loss := crash(t, f, LossAll)
			mustContent(t, p, synced)
			mustContent(t, filepath.Join(mnt, "never-synced"), nil)
			if loss.DirtyPages == 0 || loss.DirOps == 0 || loss.WrittenPages != 0 {
				t.Errorf("PowerLoss() = %+v, want dirty pages and directory changes, none written", loss)
			}
		})
	}
}

// TestChecksCanFail runs the scenario of TestUnsyncedDataDropped without the
// power loss: the same checks must then fail, or they prove nothing.
func TestChecksCanFail(t *testing.T) {
	_, mnt := mount(t, DirsPOSIX, 1)
	p := filepath.Join(mnt, "f")
	writeFile(t, p, []byte("synced"), true)
	syncDir(t, mnt)
	appendFile(t, p, []byte(" tail"))
	writeFile(t, filepath.Join(mnt, "never-synced"), []byte("x"), false)
	if err := checkContent(p, []byte("synced")); err == nil {
		t.Error("checkContent() passed on a file that kept its unsynced tail")
	}
	if err := checkContent(filepath.Join(mnt, "never-synced"), nil); err == nil {
		t.Error("checkContent() passed on a file whose creation was never synced")
	}
	if err := checkTorn(bytes.Repeat([]byte{'a'}, PageSize), bytes.Repeat([]byte{'b'}, PageSize), bytes.Repeat([]byte{'c'}, PageSize), nil); err == nil {
		t.Error("checkTorn() passed on a page that is neither the synced nor the written one")
	}
}

func TestCreatedFileNeedsItsDirectory(t *testing.T) {
	for _, tc := range []struct {
		rule    DirRule
		syncDir bool
		survive bool
	}{
		{DirsPOSIX, false, false},
		{DirsPOSIX, true, true},
		{DirsJournal, false, true},
		{DirsJournal, true, true},
	} {
		t.Run(fmt.Sprintf("%s/dirsync=%v", tc.rule, tc.syncDir), func(t *testing.T) {
			f, mnt := mount(t, tc.rule, 1)
			if err := os.MkdirAll(filepath.Join(mnt, "a", "b"), 0o755); err != nil {
				t.Fatal(err)
			}
			syncDir(t, filepath.Join(mnt, "a"))
			syncDir(t, mnt)
			p := filepath.Join(mnt, "a", "b", "f")
			writeFile(t, p, []byte("data"), true)
			if tc.syncDir {
				syncDir(t, filepath.Join(mnt, "a", "b"))
			}
			crash(t, f, LossAll)
			want := []byte(nil)
			if tc.survive {
				want = []byte("data")
			}
			mustContent(t, p, want)
		})
	}
}

// TestNewDirectoryNeedsItsParent: a directory whose own entries were synced
// but whose name was not is gone under posix, with what it held.
func TestNewDirectoryNeedsItsParent(t *testing.T) {
	f, mnt := mount(t, DirsPOSIX, 1)
	d := filepath.Join(mnt, "raft", "wal")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(d, "seg"), []byte("entries"), true)
	syncDir(t, d)
	syncDir(t, filepath.Join(mnt, "raft"))
	crash(t, f, LossAll)
	if _, err := os.Stat(filepath.Join(mnt, "raft")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("raft/ after the loss: %v, want it absent (the root was never synced)", err)
	}
	// Now with the root synced too.
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(d, "seg"), []byte("entries"), true)
	syncDir(t, d)
	syncDir(t, filepath.Join(mnt, "raft"))
	syncDir(t, mnt)
	crash(t, f, LossAll)
	mustContent(t, filepath.Join(d, "seg"), []byte("entries"))
}

func TestRenameAndUnlink(t *testing.T) {
	for _, tc := range []struct {
		rule    DirRule
		syncDir bool
		renamed bool // the rename and the unlink are durable
	}{
		{DirsPOSIX, false, false},
		{DirsPOSIX, true, true},
		{DirsJournal, false, true}, // the fsync of "other" makes them durable
	} {
		t.Run(fmt.Sprintf("%s/dirsync=%v", tc.rule, tc.syncDir), func(t *testing.T) {
			f, mnt := mount(t, tc.rule, 1)
			tmp, final, gone, other := filepath.Join(mnt, "tmp"), filepath.Join(mnt, "final"), filepath.Join(mnt, "gone"), filepath.Join(mnt, "other")
			writeFile(t, final, []byte("old"), true)
			writeFile(t, tmp, []byte("new"), true)
			writeFile(t, gone, []byte("gone"), true)
			writeFile(t, other, []byte("o"), true)
			syncDir(t, mnt)
			if err := os.Rename(tmp, final); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(gone); err != nil {
				t.Fatal(err)
			}
			writeFile(t, other, []byte("O"), true)
			if tc.syncDir {
				syncDir(t, mnt)
			}
			crash(t, f, LossAll)
			if tc.renamed {
				mustContent(t, final, []byte("new"))
				mustContent(t, tmp, nil)
				mustContent(t, gone, nil)
			} else {
				mustContent(t, final, []byte("old"))
				mustContent(t, tmp, []byte("new"))
				mustContent(t, gone, []byte("gone"))
			}
			mustContent(t, other, []byte("O"))
		})
	}
}

// checkTorn says how page got differs from what a torn writeback may leave:
// the synced page or the written one. wrote, when not nil, is set to whether
// it holds the written one.
func checkTorn(synced, written, got []byte, wrote *bool) error {
	switch {
	case bytes.Equal(got, written):
		if wrote != nil {
			*wrote = true
		}
	case bytes.Equal(got, synced):
	default:
		return fmt.Errorf("page holds %.12q…, neither the synced %.12q… nor the written %.12q…", got, synced, written)
	}
	return nil
}

func TestTornWritesASubsetOfPages(t *testing.T) {
	const pages = 64
	f, mnt := mount(t, DirsPOSIX, 7)
	p := filepath.Join(mnt, "seg")
	page := func(c byte, i int) []byte { return bytes.Repeat([]byte{c, byte('0' + i%10)}, PageSize/2) }
	var synced []byte
	for i := range pages {
		synced = append(synced, page('s', i)...)
	}
	writeFile(t, p, synced, true)
	syncDir(t, mnt)
	// Rewrite the even pages, leave the odd ones alone, and append two pages.
	fd, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < pages+2; i++ {
		if i < pages && i%2 == 1 {
			continue
		}
		if _, err := fd.WriteAt(page('w', i), int64(i)*PageSize); err != nil {
			t.Fatal(err)
		}
	}
	fd.Close()
	loss := crash(t, f, LossTorn)
	if loss.WrittenPages == 0 || loss.WrittenPages >= loss.DirtyPages {
		t.Fatalf("PowerLoss(torn) = %+v: want some but not all dirty pages written", loss)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != pages*PageSize && len(got) != (pages+2)*PageSize {
		t.Fatalf("size %d after a torn loss, want %d or %d", len(got), pages*PageSize, (pages+2)*PageSize)
	}
	wrote := 0
	for i := range len(got) / PageSize {
		g := got[i*PageSize : (i+1)*PageSize]
		if i%2 == 1 && i < pages {
			if !bytes.Equal(g, page('s', i)) {
				t.Errorf("page %d, synced and never written again, changed: %.12q…", i, g)
			}
			continue
		}
		synced := page('s', i)
		if i >= pages {
			synced = make([]byte, PageSize) // past the synced size: a hole
		}
		var w bool
		if err := checkTorn(synced, page('w', i), g, &w); err != nil {
			t.Errorf("page %d: %v", i, err)
		}
		if w {
			wrote++
		}
	}
	if wrote == 0 || wrote == pages/2+2 {
		t.Errorf("%d of %d rewritten pages hold the new data, want some but not all", wrote, pages/2+2)
	}
}

// TestTornZeroFilledSegment: a preallocated segment of zeros, synced, then
// records appended without a sync: a torn loss leaves some of them, with holes
// of zeros between, and the synced head intact.
func TestTornZeroFilledSegment(t *testing.T) {
	const size = 4 << 20
	f, mnt := mount(t, DirsJournal, 3)
	p := filepath.Join(mnt, "00001.seg")
	fd, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if err := syscall.Fallocate(int(fd.Fd()), 0, 0, size); err != nil {
		t.Fatalf("fallocate: %v", err)
	}
	head := bytes.Repeat([]byte("H"), 3*PageSize)
	if _, err := fd.WriteAt(head, 0); err != nil {
		t.Fatal(err)
	}
	if err := fd.Sync(); err != nil {
		t.Fatal(err)
	}
	for i := 3; i < 35; i++ {
		if _, err := fd.WriteAt(bytes.Repeat([]byte{'r'}, PageSize), int64(i)*PageSize); err != nil {
			t.Fatal(err)
		}
	}
	loss := crash(t, f, LossTorn)
	if _, err := fd.Write([]byte("x")); !errors.Is(err, syscall.EIO) {
		t.Errorf("write through a handle from before the loss = %v, want EIO", err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != size || !bytes.Equal(got[:len(head)], head) {
		t.Fatalf("size %d, head intact %v; want %d and true", len(got), bytes.Equal(got[:len(head)], head), size)
	}
	var kept []int
	for i := 3; i < 35; i++ {
		if got[i*PageSize] == 'r' {
			kept = append(kept, i)
		}
	}
	if len(kept) == 0 || len(kept) == 32 || loss.WrittenPages != len(kept) {
		t.Errorf("pages of records kept: %v (loss %+v), want some, not all", kept, loss)
	}
	if slices.ContainsFunc(got[35*PageSize:], func(b byte) bool { return b != 0 }) {
		t.Error("bytes past the records are not zero")
	}
}

func TestOffUntilPowerOn(t *testing.T) {
	f, mnt := mount(t, DirsPOSIX, 1)
	if _, err := f.PowerLoss(LossAll); err != nil {
		t.Fatal(err)
	}
	if _, err := f.PowerLoss(LossAll); !errors.Is(err, ErrOff) {
		t.Errorf("PowerLoss() while off = %v, want ErrOff", err)
	}
	if _, err := os.ReadDir(mnt); !errors.Is(err, syscall.EIO) {
		t.Errorf("ReadDir() while off = %v, want EIO", err)
	}
	f.PowerOn()
	writeFile(t, filepath.Join(mnt, "after"), []byte("on"), true)
	mustContent(t, filepath.Join(mnt, "after"), []byte("on"))
}

// TestCloseWritesBack: a clean unmount keeps everything, and the backing
// directory then holds it as plain files.
func TestCloseWritesBack(t *testing.T) {
	needFUSE(t)
	dir := t.TempDir()
	cfg := Config{Backing: filepath.Join(dir, "disk"), Mount: filepath.Join(dir, "mnt")}
	f, err := Mount(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(cfg.Mount, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(cfg.Mount, "d", "f"), []byte("kept"), false)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	mustContent(t, filepath.Join(cfg.Backing, "d", "f"), []byte("kept"))
	if f, err = Mount(cfg); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mustContent(t, filepath.Join(cfg.Mount, "d", "f"), []byte("kept"))
}

// helper runs the named helper of helpers.go in a child process on dir.
func helper(t *testing.T, name, dir string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", dir)
	cmd.Env = append(os.Environ(), helperEnv+"="+name)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper %s: %v\n%s", name, err, strings.TrimSpace(string(out)))
	}
}

// TestMmapCoherent: a read-only shared mapping sees writes made through the
// mount at once, and a process started after a power loss sees only the
// durable bytes.
func TestMmapCoherent(t *testing.T) {
	f, mnt := mount(t, DirsJournal, 1)
	helper(t, "mmap", mnt)
	crash(t, f, LossAll)
	helper(t, "mmap-after", mnt)
}

// TestBolt runs bbolt on the mount: committed transactions survive a power
// loss, in a database opened again by a new process.
func TestBolt(t *testing.T) { survivesLoss(t, DirsPOSIX, 5, "bolt") }

// TestRaftWAL runs raft-wal on the mount: its 64 MiB preallocated segment,
// appends, fdatasync, and its meta database; stored logs survive a power loss.
func TestRaftWAL(t *testing.T) { survivesLoss(t, DirsJournal, 9, "raftwal") }

// survivesLoss runs, for each loss mode, the helpers name-write and then,
// after a power loss, name-check on a new mount under rule.
func survivesLoss(t *testing.T, rule DirRule, seed uint64, name string) {
	for _, mode := range []LossMode{LossAll, LossTorn} {
		t.Run(string(mode), func(t *testing.T) {
			f, mnt := mount(t, rule, seed)
			helper(t, name+"-write", mnt)
			crash(t, f, mode)
			helper(t, name+"-check", mnt)
		})
	}
}

// TestUnlinkedWhileOpen: a file unlinked while open stays readable and
// syncable through its descriptor. After a power loss it is gone when its
// unlink was durable (journal: the file's fsync made it so); under posix,
// with its directory not fsynced after the unlink, its name is back, with the
// data synced through the descriptor.
func TestUnlinkedWhileOpen(t *testing.T) {
	for _, tc := range []struct {
		rule DirRule
		want []byte
	}{
		{DirsPOSIX, []byte("after!")},
		{DirsJournal, nil},
	} {
		t.Run(string(tc.rule), func(t *testing.T) {
			f, mnt := mount(t, tc.rule, 1)
			p := filepath.Join(mnt, "seg")
			writeFile(t, p, []byte("before"), true)
			syncDir(t, mnt)
			fd, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if _, err := fd.WriteAt([]byte("after!"), 0); err != nil {
				t.Fatal(err)
			}
			if err := fd.Sync(); err != nil {
				t.Fatalf("fsync of an unlinked file: %v", err)
			}
			got := make([]byte, 6)
			if _, err := fd.ReadAt(got, 0); err != nil || string(got) != "after!" {
				t.Fatalf("read of an unlinked file = %q, %v; want after!", got, err)
			}
			fd.Close()
			mustContent(t, p, nil)
			crash(t, f, LossAll)
			mustContent(t, p, tc.want)
		})
	}
}

// TestRenameAcrossDirectories: under posix a rename is durable once its
// destination directory is fsynced; an earlier rename of the same file made
// durable later (its own destination fsynced after) does not move it back.
func TestRenameAcrossDirectories(t *testing.T) {
	f, mnt := mount(t, DirsPOSIX, 1)
	for _, d := range []string{"a", "b", "c"} {
		if err := os.Mkdir(filepath.Join(mnt, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	syncDir(t, mnt)
	af, bg, ch := filepath.Join(mnt, "a", "f"), filepath.Join(mnt, "b", "g"), filepath.Join(mnt, "c", "h")
	writeFile(t, af, []byte("moved"), true)
	syncDir(t, filepath.Join(mnt, "a"))
	if err := os.Rename(af, bg); err != nil {
		t.Fatal(err)
	}
	syncDir(t, filepath.Join(mnt, "a")) // the source: not enough
	crash(t, f, LossAll)
	mustContent(t, af, []byte("moved"))
	mustContent(t, bg, nil)

	if err := os.Rename(af, bg); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(bg, ch); err != nil {
		t.Fatal(err)
	}
	syncDir(t, filepath.Join(mnt, "c"))
	syncDir(t, filepath.Join(mnt, "b"))
	crash(t, f, LossAll)
	mustContent(t, af, nil)
	mustContent(t, bg, nil)
	mustContent(t, ch, []byte("moved"))
}
