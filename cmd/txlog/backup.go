package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/dirsync"
	"github.com/txlog/txlog/store"
)

// backup saves a backup of a node's state to FILE (GET /v1/backup), or with
// --verify checks FILE offline. The backup is written to a temporary file
// next to FILE, fsynced, verified whole (its checksum, its body as a
// store), and only then renamed to FILE and the directory fsynced: FILE is
// either a verified backup or untouched.
func (c *cli) backup(ctx context.Context, args []string) error {
	cmd := c.command("backup", "[flags] FILE | --verify FILE")
	targets := cmd.targets()
	verify := cmd.Bool("verify", false, "check FILE offline (its checksum and its store) instead of taking a backup")
	node := cmd.String("node", "", "take it from the target with this base URL (default: a follower, else any node that answers)")
	pos, err := cmd.parse(args)
	if err != nil {
		return err
	}
	// One request, but one that reads the whole store: --timeout bounds it
	// when given, else backupTimeout does.
	timeout := new(time.Duration)
	*timeout = backupTimeout
	cmd.Visit(func(f *flag.Flag) {
		if f.Name == "timeout" {
			*timeout = *cmd.timeout
		}
	})
	if len(pos) != 1 {
		return usagef("backup takes one FILE, got %d arguments", len(pos))
	}
	file := pos[0]
	if *verify {
		h, err := store.VerifyBackupFile(file, filepath.Dir(file))
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		return printJSON(c.stdout, backupSummary(file, h))
	}
	cfg, err := cmd.clientConfig(*targets)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	from := *node
	if from == "" {
		if from, err = pickBackupNode(ctx, cfg); err != nil {
			return err
		}
	}
	h, err := fetchBackup(ctx, cfg, strings.TrimRight(from, "/"), file)
	if err != nil {
		return err
	}
	return printJSON(c.stdout, backupSummary(file, h))
}

// backupTimeout bounds a backup without --timeout.
const backupTimeout = 10 * time.Minute

// backupSummary is what backup prints.
func backupSummary(file string, h store.BackupHeader) map[string]any {
	return map[string]any{
		"file": file, "ok": true, "index": h.Index, "term": h.Term, "node_id": h.NodeID,
		"cluster_id": h.ClusterID, "created": h.Created, "body_bytes": h.BodyBytes, "nodes": h.Nodes,
	}
}

// pickBackupNode returns the first target that answers as a follower, else
// the first that answers at all: a backup reads the whole store, which is
// better done away from the leader.
func pickBackupNode(ctx context.Context, cfg client.ClientConfig) (string, error) {
	var first string
	var errs []error
	for _, ep := range cfg.Endpoints {
		one := cfg
		one.Endpoints = []string{ep}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := client.NewClient(one).ClusterFrom(cctx, ep) // its own state, leader or not
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ep, err))
			continue
		}
		if st.State == "follower" {
			return ep, nil
		}
		if first == "" {
			first = ep
		}
	}
	if first != "" {
		return first, nil
	}
	return "", fmt.Errorf("backup: no node answered: %w", errors.Join(errs...))
}

// fetchBackup streams GET base/v1/backup into a temporary file next to file,
// verifies it and renames it to file.
func fetchBackup(ctx context.Context, cfg client.ClientConfig, base, file string) (store.BackupHeader, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/backup", nil)
	if err != nil {
		return store.BackupHeader{}, usagef("backup: %v", err)
	}
	if cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.Token)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg.TLS, Proxy: nil}}
	resp, err := hc.Do(req)
	if err != nil {
		return store.BackupHeader{}, fmt.Errorf("backup from %s: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error.Code != "" {
			return store.BackupHeader{}, fmt.Errorf("backup from %s: %s: %s: %s", base, resp.Status, e.Error.Code, e.Error.Message)
		}
		return store.BackupHeader{}, fmt.Errorf("backup from %s: %s", base, resp.Status)
	}
	dir := filepath.Dir(file)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(file)+".tmp-*")
	if err != nil {
		return store.BackupHeader{}, fmt.Errorf("backup: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp.Name())
		}
	}()
	_, err = io.Copy(tmp, resp.Body)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return store.BackupHeader{}, fmt.Errorf("backup from %s: %w", base, err)
	}
	h, err := store.VerifyBackupFile(tmp.Name(), dir)
	if err != nil {
		return store.BackupHeader{}, fmt.Errorf("backup from %s: the copy received fails its check: %w", base, err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return store.BackupHeader{}, fmt.Errorf("backup: %w", err)
	}
	ok = true
	if err := dirsync.Sync(dir); err != nil {
		return store.BackupHeader{}, fmt.Errorf("backup: %w", err)
	}
	return h, nil
}
