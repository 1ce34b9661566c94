package store

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/txlog/txlog/txid"
)

// backupOf returns a backup of a store with a few transactions, a lease and
// a registered node, and the store.
func backupOf(t testing.TB) ([]byte, *DB) {
	t.Helper()
	db := openTest(t)
	applyOK(t, db,
		txEntry(1, txid.ID(100), "k1", put("a", `"1"`)),
		txEntry(2, txid.ID(200), "k2", put("a", `"2"`), put("b", `"3"`)),
		entryAt(3, KindRegisterNode, t0, 0, EncodeNode(NodeInfo{ID: "n1", HTTPAddr: "h", RaftAddr: "r", TxIDNode: 7})),
	)
	if _, err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	h, err := db.Backup(&buf, BackupInfo{ClusterID: "c", NodeID: "n1"})
	if err != nil {
		t.Fatalf("Backup() = %v", err)
	}
	if h.Index != 3 || h.Term != 1 || h.MaxTxID != 200 || h.Nodes["n1"] != 7 || h.NodeID != "n1" {
		t.Fatalf("Backup() header = %+v", h)
	}
	return buf.Bytes(), db
}

func writeFile(t testing.TB, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "b.backup")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBackupInstall installs a backup as a new store file and opens it: the
// same state.
func TestBackupInstall(t *testing.T) {
	b, src := backupOf(t)
	path := writeFile(t, b)
	if _, err := VerifyBackupFile(path, t.TempDir()); err != nil {
		t.Fatalf("VerifyBackupFile() = %v", err)
	}
	dbPath := filepath.Join(t.TempDir(), "state.db")
	h, err := InstallBackup(path, dbPath, func(string) error { return nil })
	if err != nil {
		t.Fatalf("InstallBackup() = %v", err)
	}
	if h.Index != 3 {
		t.Fatalf("InstallBackup() header index %d", h.Index)
	}
	db := openAt(t, dbPath)
	if db.AppliedIndex() != 3 || db.AppliedTerm() != 1 {
		t.Fatalf("restored store at %d/%d", db.AppliedIndex(), db.AppliedTerm())
	}
	got, want := dump(t, db), dump(t, src)
	if len(got) == 0 || !equalDumps(got, want) {
		t.Fatalf("restored store differs:\n got %v\nwant %v", got, want)
	}
	// A duplicate of k2 after the restore is a duplicate.
	res := applyOne(t, db, txEntry(4, txid.ID(201), "k2", put("a", `"2"`), put("b", `"3"`)))
	if !res.Duplicate {
		t.Fatalf("resubmit k2 after restore: %+v, want a duplicate", res)
	}
	// Installing over an existing file is refused.
	if _, err := InstallBackup(path, dbPath, func(string) error { return nil }); err == nil {
		t.Fatal("InstallBackup() over an existing store = nil, want an error")
	}
}

func equalDumps(a, b map[string]map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for name, m := range a {
		n := b[name]
		if len(m) != len(n) {
			return false
		}
		for k, v := range m {
			if n[k] != v {
				return false
			}
		}
	}
	return true
}

// TestBackupBad feeds the reader and the checks bad files: each is refused
// with ErrBadBackup, and an install leaves no store file.
func TestBackupBad(t *testing.T) {
	good, _ := backupOf(t)
	flip := func(at int) []byte {
		b := bytes.Clone(good)
		b[at] ^= 0x01
		return b
	}
	cases := map[string][]byte{
		"empty":            nil,
		"magic":            flip(0),
		"version":          flip(11),
		"header length":    flip(14),
		"header":           flip(20),
		"body start":       flip(len(good) - 32 - 4096 + 100),
		"body middle":      flip(len(good) / 2),
		"checksum":         flip(len(good) - 1),
		"truncated body":   good[:len(good)/2],
		"no checksum":      good[:len(good)-32],
		"short checksum":   good[:len(good)-5],
		"trailing garbage": append(bytes.Clone(good), 'x'),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := ReadBackup(bytes.NewReader(b), io.Discard); !errors.Is(err, ErrBadBackup) {
				t.Fatalf("ReadBackup() = %v, want ErrBadBackup", err)
			}
			path := writeFile(t, b)
			if _, err := VerifyBackupFile(path, t.TempDir()); !errors.Is(err, ErrBadBackup) {
				t.Fatalf("VerifyBackupFile() = %v, want ErrBadBackup", err)
			}
			dir := t.TempDir()
			if _, err := InstallBackup(path, filepath.Join(dir, "state.db"), func(string) error { return nil }); !errors.Is(err, ErrBadBackup) {
				t.Fatalf("InstallBackup() = %v, want ErrBadBackup", err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Fatalf("a refused install left %d files", len(entries))
			}
		})
	}
}

// TestBackupBodyChecked: a body with a sound checksum that is not a sound
// store (or not at the header's index) is refused by the check.
func TestBackupBodyChecked(t *testing.T) {
	good, db := backupOf(t)
	var buf bytes.Buffer
	if _, err := ReadBackup(bytes.NewReader(good), &buf); err != nil {
		t.Fatal(err)
	}
	body := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(body, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	h := BackupHeader{Index: db.AppliedIndex(), Term: db.AppliedTerm()}
	if err := CheckBackupBody(body, h); err != nil {
		t.Fatalf("CheckBackupBody(good) = %v", err)
	}
	h.Index++
	if err := CheckBackupBody(body, h); !errors.Is(err, ErrBadBackup) {
		t.Fatalf("CheckBackupBody(other index) = %v, want ErrBadBackup", err)
	}
	if err := os.WriteFile(body, buf.Bytes()[:buf.Len()/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckBackupBody(body, BackupHeader{Index: 3, Term: 1}); !errors.Is(err, ErrBadBackup) {
		t.Fatalf("CheckBackupBody(truncated) = %v, want ErrBadBackup", err)
	}
}

// FuzzReadBackup: ReadBackup, the decoder of the bytes GET /v1/backup
// sends, never panics, and accepts only what it can read back the same.
func FuzzReadBackup(f *testing.F) {
	good, _ := backupOf(f)
	f.Add(good)
	f.Add(good[:40])
	f.Add([]byte("TXLOGBAK\x00\x00\x00\x01\x00\x00\x00\x02{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var body bytes.Buffer
		h, err := ReadBackup(bytes.NewReader(b), &body)
		if err != nil {
			return
		}
		if int64(body.Len()) != h.BodyBytes {
			t.Fatalf("body of %d bytes, header says %d", body.Len(), h.BodyBytes)
		}
	})
}
