package dirsync_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/txlog/txlog/dirsync"
	"github.com/txlog/txlog/dirsync/dirsynctest"
)

// TestMkdirAll creates two levels and checks that each new directory was in
// a fsync of its parent, the outer one first, and that an existing directory
// is fsynced no more.
func TestMkdirAll(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b")
	rec := &dirsynctest.Recorder{}
	if err := dirsync.MkdirAll(dir, 0o700, rec.Sync); err != nil {
		t.Fatal(err)
	}
	rec.WantInOrder(t, [2]string{root, "a"}, [2]string{filepath.Join(root, "a"), "b"})
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("stat %s = %v, %v", dir, fi, err)
	}
	again := &dirsynctest.Recorder{}
	if err := dirsync.MkdirAll(dir, 0o700, again.Sync); err != nil {
		t.Fatal(err)
	}
	if again.Last(root) != nil || again.Last(filepath.Join(root, "a")) != nil {
		t.Fatal("MkdirAll of an existing directory fsynced a parent")
	}
	file := filepath.Join(root, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := dirsync.MkdirAll(file, 0o700, again.Sync); err == nil {
		t.Fatal("MkdirAll over a file: no error")
	}
}

// TestRecorderFails feeds WantInOrder an order the fsyncs did not have, and a
// name no fsync covered, and sees both fail.
func TestRecorderFails(t *testing.T) {
	root := t.TempDir()
	rec := &dirsynctest.Recorder{}
	if err := rec.Sync(root); err != nil { // before x exists
		t.Fatal(err)
	}
	for _, name := range []string{"x", "y"} {
		if err := os.WriteFile(filepath.Join(root, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if name == "x" {
			continue // y's fsync covers both
		}
		if err := rec.Sync(root); err != nil {
			t.Fatal(err)
		}
	}
	rec.WantInOrder(t, [2]string{root, "x"}, [2]string{root, "y"}) // same fsync: in order
	if err := os.WriteFile(filepath.Join(root, "w"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := rec.Sync(root); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		pairs [][2]string
	}{
		{"never covered", [][2]string{{root, "z"}}},
		{"other dir", [][2]string{{filepath.Join(root, "sub"), "x"}}},
		{"out of order", [][2]string{{root, "w"}, {root, "x"}}},
	} {
		ft := &fakeT{TB: t}
		func() {
			defer func() { recover() }()
			rec.WantInOrder(ft, tc.pairs...)
		}()
		if !ft.failed {
			t.Errorf("%s: WantInOrder did not fail", tc.name)
		}
	}
}

// fakeT records a failure instead of ending the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(string, ...any) {
	f.failed = true
	panic("fatal")
}

// TestWriteFile: the file holds the new bytes, no temporary file is left,
// and the directory is synced after the rename; a failed sync is returned.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	var synced []string
	sync := func(d string) error { synced = append(synced, d); return nil }
	for _, data := range []string{"one\n", "two\n"} {
		if err := dirsync.WriteFile(path, []byte(data), 0o644, sync); err != nil {
			t.Fatalf("WriteFile(%q) = %v", data, err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != data {
			t.Fatalf("ReadFile() = %q, %v; want %q", got, err, data)
		}
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("Stat(tmp) = %v, want not exist", err)
	}
	if len(synced) != 2 || synced[0] != dir {
		t.Errorf("synced %v, want %s twice", synced, dir)
	}
	failed := errors.New("sync failed")
	if err := dirsync.WriteFile(path, []byte("x"), 0o644, func(string) error { return failed }); !errors.Is(err, failed) {
		t.Errorf("WriteFile() with a failing sync = %v, want %v", err, failed)
	}
}
