package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/launcher/launchertest"
	"github.com/txlog/txlog/node"
)

var (
	configExamplePath = filepath.Join("..", "..", "deploy", "txlogd.yaml")
	deployDocPath     = filepath.Join("..", "..", "docs", "deploy.md")
)

// docConfigExample returns the first yaml code block under the heading "##
// The config file" of docs/deploy.md.
func docConfigExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(deployDocPath)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## The config file\n")
	if !ok {
		t.Fatalf("%s has no section The config file", deployDocPath)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "```yaml\n")
	if !ok {
		t.Fatalf("%s: The config file has no yaml block", deployDocPath)
	}
	block, _, ok = strings.Cut(block, "```\n")
	if !ok {
		t.Fatalf("%s: The config file's yaml block does not end", deployDocPath)
	}
	return block
}

// TestConfigFileExample: deploy/txlogd.yaml is the example of docs/deploy.md,
// parses as txlogd's configuration with the values it shows, and a real
// txlogd runs with it, its addresses and directories given as flags (which
// win over the file), its id and the rest from the file.
func TestConfigFileExample(t *testing.T) {
	example, err := os.ReadFile(configExamplePath)
	if err != nil {
		t.Fatal(err)
	}
	if doc := docConfigExample(t); doc != string(example) {
		t.Fatalf("docs/deploy.md's config file example differs from %s: keep them the same", configExamplePath)
	}
	cfg, err := node.ParseConfig([]string{"--config", configExamplePath}, nil)
	if err != nil {
		t.Fatalf("%s: %v", configExamplePath, err)
	}
	if cfg.ID != "n1" || len(cfg.Cluster) != 3 || cfg.RaftAddr != "10.0.0.1:7101" || cfg.BackupKeep != 24 || cfg.BackupInterval != time.Hour || cfg.AllowedHosts[0] != "txlog.internal" {
		t.Fatalf("%s parses as %+v", configExamplePath, cfg)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "txlogd.yaml")
	if err := os.WriteFile(file, example, 0o640); err != nil {
		t.Fatal(err)
	}
	ports, err := launcher.FreePorts("127.0.0.1", 2)
	if err != nil {
		t.Fatal(err)
	}
	httpAddr := "127.0.0.1:" + strconv.Itoa(ports[0])
	raftAddr := "127.0.0.1:" + strconv.Itoa(ports[1])
	dataDir := filepath.Join(dir, "n1")
	launchertest.StartProcess(t, launcher.ProcessConfig{
		ID:      "n1",
		Bin:     txlogdBinary(t),
		DataDir: dataDir,
		Args: []string{"--config", file, "--data-dir", dataDir, "--backup-dir", filepath.Join(dir, "backups"),
			"--http-addr", httpAddr, "--advertise-http-addr", httpAddr, "--raft-addr", raftAddr, "--cluster", "n1=" + raftAddr},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := client.NewClient(client.ClientConfig{Endpoints: []string{"http://" + httpAddr}})
	var st wire.ClusterStatus
	launchertest.WaitFor(ctx, t, "the node from the config file to lead", func() bool {
		st, err = c.Cluster(ctx)
		return err == nil && st.LeaderID != ""
	})
	if err := launcher.CheckNode("n1", st); err != nil {
		t.Fatalf("the node runs with another id than the file's: %v", err)
	}
	res, err := c.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: "k", Value: json.RawMessage(`"v"`)}}}, wire.SubmitOptions{})
	if err != nil || res.Status != wire.StatusCommitted {
		t.Fatalf("submit to the node = %+v, %v", res, err)
	}
}

// TestConfigFileRefusedProcess: a real txlogd given a bad config file
// exits 1 before it opens anything, naming the file, the line and the key.
func TestConfigFileRefusedProcess(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text string
		mode       os.FileMode
		want       string
	}{
		{"unknown key", "id: n1\nhttp-adress: 127.0.0.1:1\n", 0o600, "line 2: http-adress: unknown key"},
		{"world-writable", "id: n1\n", 0o666, "every user may write it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			if err := os.WriteFile(file, []byte(tc.text), tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(file, tc.mode); err != nil { // past the umask
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd := exec.Command(txlogdBinary(t), "--config", file, "--data-dir", filepath.Join(dir, "data"))
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 1 {
				t.Fatalf("txlogd --config %s: %v, want exit status 1", file, err)
			}
			if !strings.Contains(stderr.String(), file) || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("stderr = %q, want %s and %q", stderr.String(), file, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "data")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the data dir exists after a refused config: %v", err)
			}
		})
	}
}
