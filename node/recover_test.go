package node

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txlog/txlog/replication"
)

func TestParseConfigRecover(t *testing.T) {
	c, err := ParseConfig([]string{"--id=n1", "--recover"}, nil)
	if err != nil || !c.Recover {
		t.Fatalf("ParseConfig(--recover) = %+v, %v; want Recover", c.Recover, err)
	}
	c, err = ParseConfig([]string{"--id=n1"}, func(k string) (string, bool) { return "true", k == "TXLOG_RECOVER" })
	if err != nil || !c.Recover {
		t.Fatalf("ParseConfig(TXLOG_RECOVER=true) = %+v, %v; want Recover", c.Recover, err)
	}
}

// recoverNode is a Node with just what beginRecover uses, its data dir in
// t.TempDir(), holding cluster id old when old is not empty.
func recoverNode(t *testing.T, old string) *Node {
	t.Helper()
	dir := t.TempDir()
	if old != "" {
		if err := os.WriteFile(filepath.Join(dir, clusterIDFile), []byte(old+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.DiscardHandler)
	ident, err := openIdentity("n1", dir, log, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return &Node{cfg: Config{ID: "n1", DataDir: dir, Recover: true}, log: log, ident: ident}
}

func TestBeginRecover(t *testing.T) {
	const old = "00112233445566778899aabbccddeeff"
	t.Run("no raft state", func(t *testing.T) {
		n := recoverNode(t, old)
		var rcfg replication.Config
		if _, err := n.beginRecover(false, &rcfg); !errors.Is(err, errNothingToRecover) || rcfg.Recover {
			t.Fatalf("beginRecover(no state) = %v, Recover %v; want errNothingToRecover", err, rcfg.Recover)
		}
		if _, err := os.Stat(filepath.Join(n.cfg.DataDir, recoveredFile)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("marker after a refusal: %v, want none", err)
		}
	})
	t.Run("with join", func(t *testing.T) {
		n := recoverNode(t, old)
		n.cfg.Join = "http://127.0.0.1:1"
		var rcfg replication.Config
		if _, err := n.beginRecover(true, &rcfg); err == nil || !strings.Contains(err.Error(), "recover and join") {
			t.Fatalf("beginRecover(with join) = %v, want a refusal", err)
		}
	})
	t.Run("once", func(t *testing.T) {
		n := recoverNode(t, old)
		var rcfg replication.Config
		finish, err := n.beginRecover(true, &rcfg)
		if err != nil || !rcfg.Recover {
			t.Fatalf("beginRecover = %v, Recover %v; want nil, true", err, rcfg.Recover)
		}
		id := clusterID(n.ident.clusterID()).String()
		if id == old || id == "" {
			t.Fatalf("cluster id after beginRecover = %q, want a new one", id)
		}
		if got, err := readIDFile(filepath.Join(n.cfg.DataDir, clusterIDFile)); err != nil || got.String() != id {
			t.Fatalf("cluster.id = %v, %v; want %s", got, err, id)
		}
		m, err := readRecoveryMarker(n.cfg.DataDir)
		if err != nil || m.State != recoveryStarted || m.From != old || m.To != id {
			t.Fatalf("marker = %+v, %v; want started from %s to %s", m, err, old, id)
		}

		// A stop before Raft recovered: --recover again takes the same ID.
		n2 := recoverNode(t, "")
		n2.cfg.DataDir = n.cfg.DataDir
		if n2.ident, err = openIdentity("n1", n.cfg.DataDir, n.log, func(string) error { return nil }); err != nil {
			t.Fatal(err)
		}
		finish, err = n2.beginRecover(true, &rcfg)
		if err != nil || clusterID(n2.ident.clusterID()).String() != id {
			t.Fatalf("beginRecover after a stop = %v, id %s; want nil, %s", err, clusterID(n2.ident.clusterID()), id)
		}

		if err := finish(nil); err != nil {
			t.Fatalf("finish(nil) = %v", err)
		}
		if m, err := readRecoveryMarker(n.cfg.DataDir); err != nil || m.State != recoveryDone {
			t.Fatalf("marker after finish = %+v, %v; want done", m, err)
		}
		_, err = n2.beginRecover(true, &replication.Config{})
		if err == nil || !strings.Contains(err.Error(), "recovered the cluster already") {
			t.Fatalf("second beginRecover = %v, want a refusal", err)
		}
	})
	for _, tt := range []struct {
		name string
		old  string
	}{{"refused by raft", old}, {"refused by raft, no id before", ""}} {
		t.Run(tt.name, func(t *testing.T) {
			n := recoverNode(t, tt.old)
			var rcfg replication.Config
			finish, err := n.beginRecover(true, &rcfg)
			if err != nil {
				t.Fatal(err)
			}
			// Open's error passes on, never as an *AmnesiaError, and
			// the old ID is back: nothing was recovered.
			ae := &replication.AmnesiaError{ID: "n1", Missing: "raft log"}
			if err := finish(ae); err == nil || errors.As(err, new(*replication.AmnesiaError)) {
				t.Fatalf("finish(AmnesiaError) = %v, want an error that is not one", err)
			}
			if got := clusterID(n.ident.clusterID()).String(); got != tt.old {
				t.Fatalf("cluster id after a refused recovery = %q, want %q", got, tt.old)
			}
			if got, err := readIDFile(filepath.Join(n.cfg.DataDir, clusterIDFile)); err != nil || got.String() != tt.old {
				t.Fatalf("cluster.id after a refused recovery = %v, %v; want %q", got, err, tt.old)
			}
			if _, err := os.Stat(filepath.Join(n.cfg.DataDir, recoveredFile)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("marker after a refused recovery: %v, want none", err)
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		n := recoverNode(t, old)
		n.cfg.Recover = false
		var rcfg replication.Config
		finish, err := n.beginRecover(false, &rcfg)
		if err != nil || rcfg.Recover {
			t.Fatalf("beginRecover without --recover = %v, Recover %v", err, rcfg.Recover)
		}
		want := errors.New("x")
		if got := finish(want); got != want {
			t.Fatalf("finish(err) = %v, want it unchanged", got)
		}
	})
}

func TestReadRecoveryMarker(t *testing.T) {
	const id = "00112233445566778899aabbccddeeff"
	for _, tt := range []struct {
		name, content, wantErr string
	}{
		{"done", `{"state":"done","from_cluster_id":"","cluster_id":"` + id + `","at":"2026-01-01T00:00:00Z"}`, ""},
		{"bad state", `{"state":"maybe","from_cluster_id":"","cluster_id":"` + id + `","at":"2026-01-01T00:00:00Z"}`, "state"},
		{"no id", `{"state":"done","from_cluster_id":"","cluster_id":"","at":"2026-01-01T00:00:00Z"}`, "cluster_id"},
		{"bad from", `{"state":"done","from_cluster_id":"xyz","cluster_id":"` + id + `","at":"2026-01-01T00:00:00Z"}`, "from_cluster_id"},
		{"unknown field", `{"state":"done","cluster_id":"` + id + `","extra":1}`, "unknown field"},
		{"not json", `done`, "invalid"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, recoveredFile), []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := readRecoveryMarker(dir)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("readRecoveryMarker(%s) = %v, want %q", tt.content, err, tt.wantErr)
			}
		})
	}
}
