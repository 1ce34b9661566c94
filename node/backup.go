package node

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/dirsync"
	"github.com/txlog/txlog/store"
)

var _ api.BackupBackend = (*Node)(nil)

// Backup writes a backup of this node's store (store.DB.Backup) to w: GET
// /v1/backup. Any member serves one, from its own committed state, while
// writes go on; the header names this node and its cluster ID.
func (n *Node) Backup(_ context.Context, w io.Writer) error {
	_, err := n.db.Backup(w, store.BackupInfo{
		ClusterID: clusterID(n.ident.clusterID()).String(),
		NodeID:    n.cfg.ID,
		Created:   time.Now().UTC().Format(time.RFC3339),
	})
	return err
}

// Scheduled backups (--backup-dir, --backup-interval, --backup-keep): every
// interval the node writes a backup of its own state into the directory,
// under a temporary name, fsyncs it, verifies it whole, renames it to
// txlog-<id>-<UTC time>.backup and fsyncs the directory; then it removes the
// oldest of its backups past the keep count. A crash mid-write leaves only a
// temporary file, which the next round removes: every file with the final
// name is a verified backup. txlog_backup_last_success_timestamp_seconds
// says when the last one was written (0: none since the start).

// Defaults of the scheduled backups.
const (
	DefaultBackupInterval = time.Hour
	DefaultBackupKeep     = 24
)

// backupTempPrefix starts the name of a scheduled backup being written.
const backupTempPrefix = ".tmp-"

// scheduler takes the scheduled backups.
type scheduler struct {
	n       *Node
	dir     string
	keep    int
	last    atomic.Int64 // Unix seconds of the last good backup; 0: none
	written atomic.Int64 // backups written since the start
	started time.Time    // when the schedule started
}

// lastGood returns when the last good backup was written, or when the
// schedule started if none was yet: the age TxlogBackupStale compares.
func (s *scheduler) lastGood() time.Time {
	if l := s.last.Load(); l > 0 {
		return time.Unix(l, 0)
	}
	return s.started
}

// startScheduledBackups starts the scheduled backups when --backup-dir is
// set. Called by Run.
func (n *Node) startScheduledBackups() {
	if n.cfg.BackupDir == "" {
		return
	}
	s := &scheduler{n: n, dir: n.cfg.BackupDir, keep: max(n.cfg.BackupKeep, 1), started: time.Now()}
	if n.sample != nil {
		n.sample.backups.Store(s) // TxlogBackupStale (alerts.go)
	}
	if reg := n.cfg.Metrics; reg != nil {
		g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "txlog_backup_last_success_timestamp_seconds",
			Help: "Unix time of this node's last scheduled backup that was written and verified (--backup-dir); 0 when none since it started.",
		}, func() float64 { return float64(s.last.Load()) })
		if err := reg.Register(g); err != nil {
			n.log.Warn("register the backup metric", "err", err)
		}
	}
	interval := backupInterval(n.cfg)
	n.wg.Go(func() {
		every(n.life, interval, nil, func() bool {
			if err := s.once(); err != nil {
				n.log.Error("scheduled backup failed", "dir", s.dir, "err", err)
			}
			return false
		})
	})
}

// once writes one verified backup and prunes old ones.
func (s *scheduler) once() error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	s.removeTemps()
	now := time.Now().UTC()
	name := fmt.Sprintf("txlog-%s-%s.backup", s.n.cfg.ID, now.Format("20060102T150405.000000000Z"))
	tmp, err := os.CreateTemp(s.dir, backupTempPrefix+s.n.cfg.ID+"-*.backup")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp.Name())
		}
	}()
	err = s.n.Backup(s.n.life, tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	h, err := store.VerifyBackupFile(tmp.Name(), s.dir)
	if err != nil {
		return fmt.Errorf("the backup written fails its check: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(s.dir, name)); err != nil {
		return err
	}
	ok = true
	if err := dirsync.Sync(s.dir); err != nil {
		return err
	}
	s.last.Store(now.Unix())
	s.written.Add(1)
	s.n.log.Info("scheduled backup written", "file", name, "index", h.Index, "bytes", h.BodyBytes)
	return s.prune()
}

// backups returns this node's scheduled backups in the directory, oldest
// first (their names sort by time).
func (s *scheduler) backups() ([]string, error) {
	names, err := filepath.Glob(filepath.Join(s.dir, "txlog-"+globEscape(s.n.cfg.ID)+"-*.backup"))
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// prune removes the oldest backups past the keep count.
func (s *scheduler) prune() error {
	names, err := s.backups()
	if err != nil || len(names) <= s.keep {
		return err
	}
	for _, name := range names[:len(names)-s.keep] {
		if err := os.Remove(name); err != nil {
			return err
		}
	}
	return dirsync.Sync(s.dir)
}

// removeTemps removes what a backup cut short (a crash) left.
func (s *scheduler) removeTemps() {
	names, _ := filepath.Glob(filepath.Join(s.dir, backupTempPrefix+globEscape(s.n.cfg.ID)+"-*.backup"))
	for _, name := range names {
		os.Remove(name)
	}
}

// globEscape escapes the metacharacters of filepath.Match in s.
func globEscape(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}
