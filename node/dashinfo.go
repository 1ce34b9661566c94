package node

import (
	"maps"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/txlog/txlog/alert"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/ui"
)

// dashInfo gathers this node's ui.NodeInfo for its /v1/stats, where each
// number is kept: the data disk (statfs), the Raft directory's files
// (replication.Usage), and the backlog and fsync p99 of the alert sampler's
// last snapshot (keep), so that the page shows the values the rules compare
// (and /v1/stats never walks the intake under its lock; only before the
// first snapshot, or on a node without alerts, does it read the intake).
type dashInfo struct {
	version    string
	started    time.Time
	dataDir    string
	intake     *intake
	thresholds ui.Thresholds
	last       atomic.Pointer[alert.Snapshot] // the alert sampler's last; nil until its first
}

func newDashInfo(n *Node) *dashInfo {
	return &dashInfo{version: buildVersion(), started: time.Now(), dataDir: n.cfg.DataDir, intake: n.intake, thresholds: thresholds(n.cfg.Alert.Thresholds)}
}

// thresholds converts the alert rules' bounds for the page: the flags'
// values, and for a zero field the default the rules use
// (alert.Thresholds.WithDefaults), so that the page colours against what
// fires (--alert-disk-free-percent has no flag default, yet the rule
// compares against 10%).
func thresholds(t alert.Thresholds) ui.Thresholds {
	t = t.WithDefaults()
	return ui.Thresholds{
		ParkedMax:             t.ParkedMax,
		ParkedAgeSeconds:      t.ParkedAge.Seconds(),
		UnreachableForSeconds: t.UnreachableFor.Seconds(),
		FsyncP99Ms:            float64(t.FsyncP99) / float64(time.Millisecond),
		DiskFreePercent:       t.DiskFreePercent,
	}
}

// keep returns sample, which also keeps each snapshot for the page. It
// runs on the alert manager's goroutine; the kept snapshot is never
// changed.
func (di *dashInfo) keep(sample alert.Sampler) alert.Sampler {
	return func(now time.Time) alert.Snapshot {
		s := sample(now)
		kept := s
		di.last.Store(&kept)
		return s
	}
}

// read returns the node's ui.NodeInfo now. Any goroutine; it stats the
// data directory's file system and the Raft directory's files, a few
// system calls.
func (di *dashInfo) read() ui.NodeInfo {
	now := time.Now()
	info := ui.NodeInfo{
		Version:       di.version,
		StartedAt:     di.started.UTC(),
		UptimeSeconds: now.Sub(di.started).Seconds(),
	}
	var oldest time.Time
	switch s := di.last.Load(); {
	case s != nil:
		info.Parked, oldest = s.Parked, s.ParkedOldest
		info.FsyncP99Ms = float64(s.FsyncP99) / float64(time.Millisecond)
	case di.intake != nil:
		info.Parked, oldest = di.intake.oldest()
	}
	if !oldest.IsZero() {
		info.ParkedOldestSeconds = max(now.Sub(oldest), 0).Seconds()
	}
	var st unix.Statfs_t
	if err := unix.Statfs(di.dataDir, &st); err == nil {
		bs := uint64(st.Bsize)
		info.DiskUsedBytes = (st.Blocks - st.Bfree) * bs
		info.DiskFreeBytes = st.Bavail * bs
	}
	if u, err := replication.Usage(filepath.Join(di.dataDir, "raft")); err == nil {
		info.RaftLogBytes, info.SnapshotBytes = u.LogBytes, u.SnapshotBytes
	}
	return info
}

// buildVersion is the main module's version and VCS revision from the
// binary's build info ("(devel)" for a plain go build), as txlogd --version
// reads them: "v1.2.3 (abc1234)".
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v == "" {
		v = "unknown"
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(len(s.Value), 12)]
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ", modified"
			}
		}
	}
	if rev != "" {
		v += " (" + rev + dirty + ")"
	}
	return v
}

// firing returns the alerts whose last event in evs (oldest first) says
// firing, in the order they fired.
func firing(evs []alert.Event) []ui.Alert {
	type last struct {
		e   alert.Event
		seq int
	}
	byKey := map[string]last{}
	for i, e := range evs {
		byKey[alertKey(e)] = last{e, i}
	}
	keys := slices.SortedFunc(maps.Keys(byKey), func(a, b string) int { return byKey[a].seq - byKey[b].seq })
	out := []ui.Alert{}
	for _, k := range keys {
		e := byKey[k].e
		if e.Status != alert.Firing {
			continue
		}
		out = append(out, ui.Alert{Alert: e.Alert, Severity: e.Severity, Node: e.Node, Summary: e.Summary, Labels: e.Labels, Since: e.Since, FiredAt: e.FiredAt})
	}
	return out
}

// alertKey names an alert by its name and labels, as the alert manager
// keys them: a resolved event ends the firing one of the same key.
func alertKey(e alert.Event) string {
	var b strings.Builder
	b.WriteString(e.Alert)
	for _, k := range slices.Sorted(maps.Keys(e.Labels)) {
		b.WriteString("," + k + "=" + e.Labels[k])
	}
	return b.String()
}
