package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
)

// backupBackend serves body as GET /v1/backup, and answers as a follower.
type backupBackend struct {
	*fakeBackend
	body []byte
}

func (b backupBackend) Backup(_ context.Context, w io.Writer) error {
	_, err := w.Write(b.body)
	return err
}

// realBackup returns a backup of a store that holds one transaction.
func realBackup(t *testing.T) []byte {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Config{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx := store.EncodeTx(store.Tx{ID: txid.ID(1 << 30), Ops: []store.Op{{Kind: store.OpPut, Key: "a", Value: []byte(`1`)}}})
	cmd := store.EncodeCommand(store.Command{Kind: store.KindTx, Time: time.Now().UnixNano(), DedupWindow: time.Hour, Payload: tx})
	if _, err := db.Apply([]store.Entry{{Index: 5, Term: 2, Data: cmd}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := db.Backup(&buf, store.BackupInfo{NodeID: "n2"}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func serveBackup(t *testing.T, body []byte) string {
	t.Helper()
	return serve(t, backupBackend{fakeBackend: &fakeBackend{
		ClusterFunc: func(context.Context) (wire.ClusterStatus, error) {
			return wire.ClusterStatus{ID: "n2", State: "follower"}, nil
		},
	}, body: body})
}

// TestBackupCommand saves a backup, checks it with --verify, and refuses a
// stream with a flipped byte without leaving FILE or a temporary file.
func TestBackupCommand(t *testing.T) {
	ctx := testCtx(t)
	good := realBackup(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "x.backup")
	r := runCLI(t, ctx, nil, "backup", "--targets", serveBackup(t, good), file)
	if r.code != 0 || !strings.Contains(r.stdout, `"index": 5`) {
		t.Fatalf("backup = %+v, want exit 0 and index 5", r)
	}
	if got, err := os.ReadFile(file); err != nil || !bytes.Equal(got, good) {
		t.Fatalf("saved file differs from the stream (%v)", err)
	}
	if r := runCLI(t, ctx, nil, "backup", "--verify", file); r.code != 0 || !strings.Contains(r.stdout, `"term": 2`) {
		t.Fatalf("backup --verify = %+v, want exit 0", r)
	}

	bad := bytes.Clone(good)
	bad[len(bad)/2] ^= 0x10
	badFile := filepath.Join(dir, "bad.backup")
	r = runCLI(t, ctx, nil, "backup", "--targets", serveBackup(t, bad), badFile)
	if r.code != 1 || !strings.Contains(r.stderr, "checksum") {
		t.Fatalf("backup of a flipped stream = %+v, want exit 1 naming the checksum", r)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("after a refused backup the dir holds %d entries, want only the good file", len(entries))
	}
	if err := os.WriteFile(badFile, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, ctx, nil, "backup", "--verify", badFile); r.code != 1 || !strings.Contains(r.stderr, "bad backup") {
		t.Fatalf("backup --verify of a flipped file = %+v, want exit 1", r)
	}
	if r := runCLI(t, ctx, nil, "backup"); r.code != 2 {
		t.Fatalf("backup without FILE = %+v, want exit 2", r)
	}
}
