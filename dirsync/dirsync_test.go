package dirsync_test

import (
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
