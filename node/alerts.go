package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/txlog/txlog/alert"
	"github.com/txlog/txlog/node/parking"
	"github.com/txlog/txlog/node/peer"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/txid"
	"golang.org/x/sys/unix"
)

// Alerts returns the node's alert manager, whose Events the dashboard shows;
// nil on a node that does not run Raft.
func (n *Node) Alerts() *alert.Manager { return n.alerts }

// newAlerts returns the node's alert manager and its sampler: --alert-*
// settings, TxlogBackupStale's bound (default twice --backup-interval) and,
// with --redis-addr, the episode records that make the cluster page once
// per cluster-wide episode (alert/doc.go).
func newAlerts(n *Node, cfg Config) (*alert.Manager, *alertSampler, error) {
	ac := alertConfig(cfg, n.park)
	sample := newAlertSampler(n)
	if ac.Episodes != nil {
		ac.Reachable = sample.reachable
	}
	m, err := alert.New(ac)
	if err != nil {
		return nil, nil, err
	}
	return m, sample, nil
}

// alertConfig is the alert manager's configuration of a node with cfg
// that parks into park (nil without --redis-addr).
func alertConfig(cfg Config, park parker) alert.Config {
	ac := cfg.Alert
	ac.Node, ac.Logger = cfg.ID, cfg.Logger.With("component", "alert")
	if ac.BackupStale == 0 {
		ac.BackupStale = 2 * backupInterval(cfg)
	}
	if r, ok := park.(*parking.Redis); ok && r != nil {
		ac.Episodes = r.Episodes()
	}
	return ac
}

var _ alert.Episodes = parking.Episodes{}

// backupInterval is --backup-interval with its default.
func backupInterval(cfg Config) time.Duration {
	if cfg.BackupInterval <= 0 {
		return DefaultBackupInterval
	}
	return cfg.BackupInterval
}

// alertSampler builds the alert.Snapshot of this node once a second, off the
// write path: Raft's status and membership, the intake's size and oldest
// entry, the Redis breaker, an fsync probe and the data disk's free space.
type alertSampler struct {
	n           *Node
	noLeaderFor time.Duration

	lastLeader      string
	leaderTerm      uint64
	leaderlessSince time.Time
	changedAt       time.Time
	prevLeader      string

	backups atomic.Pointer[scheduler] // set when scheduled backups start

	probe  *os.File          // <DataDir>/alert.probe, fsynced once a sample
	fsyncs [60]time.Duration // the last minute of probes
	nsync  int
}

func newAlertSampler(n *Node) *alertSampler {
	d := n.cfg.Alert.NoLeaderFor
	if d == 0 {
		d = 5 * time.Second
	}
	return &alertSampler{n: n, noLeaderFor: d}
}

func (a *alertSampler) sample(now time.Time) alert.Snapshot {
	n := a.n
	s := alert.Snapshot{Now: now, Node: n.cfg.ID, DiskFreeRatio: diskFree(n.cfg.DataDir)}
	st := n.raft.Status()
	s.Leader, s.Term = st.LeaderID, st.Term
	if st.State == "leader" {
		// Only a leader a quorum still follows speaks for the cluster: one
		// that was paused or cut off fails here until it steps down.
		vctx, cancel := context.WithTimeout(n.life, verifyTimeout)
		_, err := n.raft.ReadIndex(vctx)
		cancel()
		s.IsLeader = err == nil
	}
	switch {
	case s.Leader == "":
		if a.leaderlessSince.IsZero() {
			a.leaderlessSince = now
		}
		// A leader that came and went between two samples: the leaderless
		// time began when it went, not at the earlier sample.
		if lost := n.raft.LeaderLostAt(); lost.After(a.leaderlessSince) {
			a.leaderlessSince = lost
		}
	default:
		a.leaderlessSince = time.Time{}
		if a.lastLeader != "" && a.lastLeader != s.Leader {
			a.prevLeader, a.changedAt = a.lastLeader, now
		}
		a.lastLeader, a.leaderTerm = s.Leader, st.Term
	}
	s.LeaderTerm = a.leaderTerm
	if s.LeaderTerm == 0 {
		// Restarted and no leader seen yet: name the episode by the term
		// Raft kept, never by a 0 that every restart would share (and
		// whose closed record would silence the next one).
		s.LeaderTerm = st.Term
	}
	if b := a.backups.Load(); b != nil {
		s.BackupLast = b.lastGood()
	}
	s.LeaderlessSince, s.LeaderChangedAt, s.PrevLeader = a.leaderlessSince, a.changedAt, a.prevLeader

	ctx, cancel := context.WithTimeout(n.life, time.Second)
	defer cancel()
	if s.IsLeader || s.Leader == "" {
		if members, err := n.raft.Members(ctx); err == nil {
			for _, m := range members {
				if s.IsLeader && !m.Leader {
					s.Members = append(s.Members, m.ID)
				}
				if m.Unreachable {
					if s.Unreachable == nil {
						s.Unreachable = map[string]time.Duration{}
					}
					s.Unreachable[m.ID] = m.LastContact
				}
			}
			if s.Leader == "" && now.Sub(a.leaderlessSince) > a.noLeaderFor/2 {
				s.LowerVoterUp = a.lowerVoterUp(ctx, members)
			}
		}
	}
	s.Parked, s.ParkedOldest = n.intake.oldest()
	if n.park != nil {
		s.BreakerOpen = n.park.State() == parking.BreakerOpen
	}
	s.FsyncP99 = a.fsyncP99()
	return s
}

// lowerVoterUp reports whether a voter with a lower ID than this node
// answers on the peer link: then that one sends "no leader" (alert/doc.go).
func (a *alertSampler) lowerVoterUp(ctx context.Context, members []replication.Member) bool {
	for _, m := range members {
		if m.Suffrage != "voter" || strings.Compare(m.ID, a.n.cfg.ID) >= 0 {
			continue
		}
		addr := m.Addr
		actx, cancel := context.WithTimeout(ctx, lowerVoterTimeout)
		_, err := a.n.peers.client.Cluster(actx, addr)
		cancel()
		if _, noAnswer := errors.AsType[*peer.TransportError](err); !noAnswer {
			return true // it answered, whatever it said
		}
	}
	return false
}

// reachable reports whether member id answers on the peer link now.
func (a *alertSampler) reachable(ctx context.Context, id string) bool {
	members, err := a.n.raft.Members(ctx)
	if err != nil {
		return false
	}
	for _, m := range members {
		if m.ID == id {
			_, err := a.n.peers.client.Cluster(ctx, m.Addr)
			_, noAnswer := errors.AsType[*peer.TransportError](err)
			return !noAnswer // it answered, whatever it said
		}
	}
	return false
}

// lowerVoterTimeout bounds the question to a lower voter; verifyTimeout
// the leader's read index.
const (
	lowerVoterTimeout = 500 * time.Millisecond
	verifyTimeout     = 500 * time.Millisecond
)

// fsyncP99 times one fsync of a small probe file and returns the 99th
// percentile of the last minute of them. A probe, not the WALs' own
// timings: it costs one 512-byte write and fsync a second and touches no
// write path.
func (a *alertSampler) fsyncP99() time.Duration {
	if a.probe == nil {
		f, err := os.OpenFile(filepath.Join(a.n.cfg.DataDir, "alert.probe"), os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return 0
		}
		a.probe = f
	}
	var buf [512]byte
	start := time.Now()
	if _, err := a.probe.WriteAt(buf[:], 0); err != nil {
		return 0
	}
	if err := a.probe.Sync(); err != nil {
		return 0
	}
	a.fsyncs[a.nsync%len(a.fsyncs)] = time.Since(start)
	a.nsync++
	got := slices.Clone(a.fsyncs[:min(a.nsync, len(a.fsyncs))])
	slices.Sort(got)
	return got[(len(got)*99+99)/100-1]
}

func (a *alertSampler) close() {
	if a.probe != nil {
		a.probe.Close()
	}
}

// diskFree returns the free fraction of dir's file system, -1 if unknown:
// txlog_disk_free_bytes / txlog_disk_size_bytes.
func diskFree(dir string) float64 {
	free, size, ok := diskSpace(dir)
	if !ok || size == 0 {
		return -1
	}
	return free / size
}

// diskSpace returns the bytes available to an unprivileged user on dir's
// file system and its total size; ok is false when statfs fails.
func diskSpace(dir string) (free, size float64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, false
	}
	return float64(st.Bavail) * float64(st.Bsize), float64(st.Blocks) * float64(st.Bsize), true
}

// oldestAge returns how long ago the oldest unresolved transaction here was
// accepted, 0 when none: txlog_intake_oldest_age_seconds, what
// TxlogParkedOldest compares with --alert-parked-age.
func (in *intake) oldestAge(now time.Time) time.Duration {
	if _, t := in.oldest(); !t.IsZero() {
		return max(now.Sub(t), 0)
	}
	return 0
}

// oldest returns how many transactions are unresolved here and when the
// oldest of them was accepted (its txid's time). It walks the entries once,
// under the intake's lock: once a second, for the alert sampler.
func (in *intake) oldest() (int, time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	var min txid.ID
	for id := range in.entries {
		if min == 0 || id < min {
			min = id
		}
	}
	if min == 0 {
		return 0, time.Time{}
	}
	return len(in.entries), min.Time()
}
