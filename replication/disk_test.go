package replication

import (
	"os"
	"path/filepath"
	"testing"
)

func TestUsage(t *testing.T) {
	write := func(t *testing.T, path string, n int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		files map[string]int // path under dir → size
		want  DiskUsage
	}{
		{name: "empty dir", want: DiskUsage{}},
		{
			name:  "raft-wal and snapshots",
			files: map[string]int{"wal/00001.wal": 1000, "wal/wal-meta.db": 200, "snapshots/2-10-1/state.bin": 300, "snapshots/2-10-1/meta.json": 40, "other": 5},
			want:  DiskUsage{LogBytes: 1200, SnapshotBytes: 340},
		},
		{
			name:  "raft-boltdb",
			files: map[string]int{"raft.db": 4096},
			want:  DiskUsage{LogBytes: 4096},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for p, n := range tt.files {
				write(t, filepath.Join(dir, p), n)
			}
			got, err := Usage(dir)
			if err != nil || got != tt.want {
				t.Fatalf("Usage() = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	t.Run("missing dir", func(t *testing.T) {
		got, err := Usage(filepath.Join(t.TempDir(), "none"))
		if err != nil || got != (DiskUsage{}) {
			t.Fatalf("Usage(missing) = %+v, %v; want zero, nil", got, err)
		}
	})
}
