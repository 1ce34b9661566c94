package node

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/txlog/txlog/txid"
)

// idAt returns a txid issued at t by node n.
func idAt(t time.Time, n uint64) txid.ID {
	return txid.ID(uint64(t.Sub(txid.Epoch).Milliseconds())<<(txid.SeqBits+txid.NodeBits) | n<<txid.SeqBits)
}

func TestIntakeOldest(t *testing.T) {
	in := newIntake(nil)
	if n, at := in.oldest(); n != 0 || !at.IsZero() {
		t.Fatalf("empty: %d, %v", n, at)
	}
	if a := in.oldestAge(time.Now()); a != 0 {
		t.Fatalf("empty: age %v, want 0", a)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
		id := idAt(base.Add(d), uint64(i+1))
		in.entries[id] = &intakeEntry{id: id}
	}
	if n, at := in.oldest(); n != 3 || !at.Equal(base.Add(time.Second)) {
		t.Fatalf("oldest: %d, %v; want 3, %v", n, at, base.Add(time.Second))
	}
	if a := in.oldestAge(base.Add(61 * time.Second)); a != time.Minute {
		t.Fatalf("age %v, want 1m", a)
	}
	if a := in.oldestAge(base); a != 0 {
		t.Fatalf("age before the oldest was accepted: %v, want 0", a)
	}
}

// TestDiskSpace: txlog_disk_free_bytes and txlog_disk_size_bytes, and their
// ratio the disk rule's.
func TestDiskSpace(t *testing.T) {
	dir := t.TempDir()
	free, size, ok := diskSpace(dir)
	if !ok || size <= 0 || free < 0 || free > size {
		t.Fatalf("diskSpace = %v, %v, %v; want 0 <= free <= size, size > 0", free, size, ok)
	}
	// A shared disk moves between the two statfs calls: within 1%.
	if r := diskFree(dir); r < 0 || r > 1 || math.Abs(r-free/size) > 0.01 {
		t.Fatalf("diskFree = %v, want free/size %v", r, free/size)
	}
	missing := filepath.Join(dir, "missing")
	if _, _, ok := diskSpace(missing); ok {
		t.Fatal("diskSpace of a missing directory: ok")
	}
	if r := diskFree(missing); r != -1 {
		t.Fatalf("diskFree of a missing directory = %v, want -1", r)
	}
}

// TestAlertBackupStaleDefault: --alert-backup-stale defaults to twice
// --backup-interval, and a flag given wins.
func TestAlertBackupStaleDefault(t *testing.T) {
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{[]string{"--backup-dir", "b", "--backup-interval", "10m"}, 20 * time.Minute},
		{[]string{"--backup-dir", "b"}, 2 * DefaultBackupInterval},
		{[]string{"--backup-dir", "b", "--backup-interval", "10m", "--alert-backup-stale", "1h"}, time.Hour},
	} {
		args := append([]string{"--id", "n1", "--data-dir", t.TempDir()}, c.args...)
		cfg, err := ParseConfig(args, func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if got := alertConfig(cfg, nil).BackupStale; got != c.want {
			t.Errorf("%v: BackupStale %s, want %s", c.args, got, c.want)
		}
	}
}
