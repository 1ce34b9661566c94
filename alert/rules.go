package alert

import (
	"fmt"
	"time"
)

// Snapshot is what the rules see of one node, sampled once a second.
type Snapshot struct {
	Now  time.Time
	Node string
	// Leader is the leader's ID as this node knows it; empty while none.
	Leader string
	// IsLeader reports whether this node is the leader, confirmed this
	// sample by a quorum (a read index): a leader that was paused or cut off
	// and has not yet noticed a newer term is not one.
	IsLeader bool
	// Term is this node's Raft term; LeaderTerm the term of the last leader
	// it saw (the episode of a TxlogNoLeader is "no leader after LeaderTerm").
	Term, LeaderTerm uint64
	// LeaderlessSince is when this node last saw a leader (or started);
	// zero while it knows one.
	LeaderlessSince time.Time
	// LowerVoterUp reports whether a voter with a lower ID than this node
	// answered HTTP; the node probes only while it has no leader.
	LowerVoterUp bool
	// LeaderChangedAt is when this node saw the leader change from one
	// member to another (not the first leader it saw); PrevLeader was the
	// one before.
	LeaderChangedAt time.Time
	PrevLeader      string
	// Unreachable maps the members whose heartbeats fail (leader only) to how
	// long ago the leader last heard from them; Members are the other
	// members the leader knows (leader only).
	Unreachable map[string]time.Duration
	Members     []string
	// Parked is how many accepted transactions are unresolved here;
	// ParkedOldest when the oldest of them was accepted (zero if none).
	Parked       int
	ParkedOldest time.Time
	// BreakerOpen reports whether the Redis circuit breaker is open.
	BreakerOpen bool
	// FsyncP99 is the 99th percentile of this node's fsync probe over the
	// last minute; 0 when unknown.
	FsyncP99 time.Duration
	// DiskFreeRatio is the free fraction (0..1) of the data directory's
	// file system; negative when unknown.
	DiskFreeRatio float64
	// BackupLast is when this node last wrote a good scheduled backup (or
	// when its schedule started, if none yet); zero when --backup-dir is
	// not set.
	BackupLast time.Time
}

// Thresholds are the rules' bounds, each with its flag. Zero means the default.
type Thresholds struct {
	NoLeaderFor      time.Duration // --alert-no-leader-for, default 5s
	LeaderChangedFor time.Duration // --alert-leader-changed-for: how long leader_changed stays firing, default 1m
	UnreachableFor   time.Duration // --alert-unreachable-for, default 10s
	ParkedMax        int           // --alert-parked-max, default 1000
	ParkedAge        time.Duration // --alert-parked-age, default 60s
	FsyncP99         time.Duration // --alert-fsync-p99, default 50ms
	FsyncFor         time.Duration // --alert-fsync-for, default 1m
	DiskFreePercent  float64       // --alert-disk-free-percent, default 10
	BackupStale      time.Duration // --alert-backup-stale: TxlogBackupStale past this age of the last good backup; the node sets 2x --backup-interval when 0
}

// WithDefaults returns t with each zero field set to its default (the
// values above), as the Manager compares against them; the dashboard
// colours its numbers against the same bounds.
func (t Thresholds) WithDefaults() Thresholds {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&t.NoLeaderFor, 5*time.Second)
	def(&t.LeaderChangedFor, time.Minute)
	def(&t.UnreachableFor, 10*time.Second)
	def(&t.ParkedAge, 60*time.Second)
	def(&t.FsyncP99, 50*time.Millisecond)
	def(&t.FsyncFor, time.Minute)
	def(&t.BackupStale, 2*time.Hour)
	if t.ParkedMax == 0 {
		t.ParkedMax = 1000
	}
	if t.DiskFreePercent == 0 {
		t.DiskFreePercent = 10
	}
	return t
}

// Alert names (the "alert" field), the same as in deploy/prometheus/alerts.yml.
const (
	NoLeader          = "TxlogNoLeader"
	LeaderChanged     = "TxlogLeaderChanged"
	MemberUnreachable = "TxlogMemberUnreachable"
	ParkedBacklog     = "TxlogParkedBacklog"
	ParkedOld         = "TxlogParkedOldest"
	BreakerOpen       = "TxlogRedisBreakerOpen"
	FsyncSlow         = "TxlogFsyncSlow"
	DiskLow           = "TxlogDiskFreeLow"
	BackupStale       = "TxlogBackupStale"
)

// ClusterRules are the alerts about the cluster, not about the node that
// sends them: the cluster sends each episode once (doc.go). Every other
// alert is about one node and is sent by that node.
var ClusterRules = []string{NoLeader, LeaderChanged, MemberUnreachable}

// Scopes of an Event.
const (
	ScopeCluster = "cluster"
	ScopeNode    = "node"
)

// Severities.
const (
	Critical = "critical"
	Warning  = "warning"
)

// finding is one alert a rule sees as true now.
type finding struct {
	name     string
	severity string
	summary  string
	labels   map[string]string
	// since is when the condition became true, when the rule knows it.
	since time.Time
	// hold is how long the condition must stay true before it fires (the
	// Manager counts it); 0 fires at once.
	hold time.Duration
	// episode names this occurrence of a cluster-wide alert the same way on
	// every node that sees it (empty for node alerts); tomb says its record
	// is kept after it resolves, so that a late copy of the same episode is
	// not sent (episodes named by a term never come back).
	episode string
	tomb    bool
}

// rule is one pure rule: the findings true in s.
type rule func(s Snapshot, t Thresholds) []finding

// rules are every rule, in the order docs/operations.md lists them.
var rules = []rule{noLeader, leaderChanged, memberUnreachable, parked, breakerOpen, fsyncSlow, diskLow, backupStale}

func noLeader(s Snapshot, t Thresholds) []finding {
	if s.Leader != "" || s.LeaderlessSince.IsZero() || s.LowerVoterUp {
		return nil
	}
	if s.Now.Sub(s.LeaderlessSince) <= t.NoLeaderFor {
		return nil
	}
	return []finding{{name: NoLeader, severity: Critical, since: s.LeaderlessSince, episode: fmt.Sprintf("after-term-%d", s.LeaderTerm), tomb: true,
		summary: fmt.Sprintf("no raft leader seen by %s for %s", s.Node, s.Now.Sub(s.LeaderlessSince).Round(time.Second))}}
}

func leaderChanged(s Snapshot, t Thresholds) []finding {
	if !s.IsLeader || s.LeaderChangedAt.IsZero() || s.Now.Sub(s.LeaderChangedAt) >= t.LeaderChangedFor {
		return nil
	}
	return []finding{{name: LeaderChanged, severity: Warning, since: s.LeaderChangedAt, episode: fmt.Sprintf("term-%d", s.Term), tomb: true,
		labels:  map[string]string{"previous": s.PrevLeader, "leader": s.Leader},
		summary: fmt.Sprintf("raft leader changed from %s to %s", s.PrevLeader, s.Leader)}}
}

// unreachableFinding is TxlogMemberUnreachable about member id, without
// its summary and since.
func unreachableFinding(id string) finding {
	return finding{name: MemberUnreachable, severity: Critical, episode: "member-" + id, labels: map[string]string{"member": id}}
}

func memberUnreachable(s Snapshot, t Thresholds) []finding {
	if !s.IsLeader {
		return nil
	}
	var out []finding
	for id, ago := range s.Unreachable {
		if ago <= t.UnreachableFor {
			continue
		}
		f := unreachableFinding(id)
		f.since = s.Now.Add(-ago)
		f.summary = fmt.Sprintf("member %s unreachable from the leader for %s", id, ago.Round(time.Second))
		out = append(out, f)
	}
	return out
}

func parked(s Snapshot, t Thresholds) []finding {
	var out []finding
	if s.Parked > t.ParkedMax {
		out = append(out, finding{name: ParkedBacklog, severity: Warning,
			summary: fmt.Sprintf("%d unresolved transactions on %s (bound %d)", s.Parked, s.Node, t.ParkedMax)})
	}
	if !s.ParkedOldest.IsZero() && s.Now.Sub(s.ParkedOldest) > t.ParkedAge {
		out = append(out, finding{name: ParkedOld, severity: Warning, since: s.ParkedOldest.Add(t.ParkedAge),
			summary: fmt.Sprintf("oldest unresolved transaction on %s is %s old", s.Node, s.Now.Sub(s.ParkedOldest).Round(time.Second))})
	}
	return out
}

func breakerOpen(s Snapshot, _ Thresholds) []finding {
	if !s.BreakerOpen {
		return nil
	}
	return []finding{{name: BreakerOpen, severity: Warning, summary: fmt.Sprintf("redis circuit breaker open on %s", s.Node)}}
}

func fsyncSlow(s Snapshot, t Thresholds) []finding {
	if s.FsyncP99 <= t.FsyncP99 {
		return nil
	}
	return []finding{{name: FsyncSlow, severity: Warning, hold: t.FsyncFor,
		summary: fmt.Sprintf("fsync p99 on %s is %s (bound %s)", s.Node, s.FsyncP99, t.FsyncP99)}}
}

func diskLow(s Snapshot, t Thresholds) []finding {
	if s.DiskFreeRatio < 0 || s.DiskFreeRatio*100 >= t.DiskFreePercent {
		return nil
	}
	return []finding{{name: DiskLow, severity: Critical,
		summary: fmt.Sprintf("%.1f%% of the data disk free on %s (bound %g%%)", s.DiskFreeRatio*100, s.Node, t.DiskFreePercent)}}
}

func backupStale(s Snapshot, t Thresholds) []finding {
	if s.BackupLast.IsZero() || s.Now.Sub(s.BackupLast) <= t.BackupStale {
		return nil
	}
	return []finding{{name: BackupStale, severity: Warning, since: s.BackupLast.Add(t.BackupStale),
		summary: fmt.Sprintf("last good backup on %s is %s old (bound %s)", s.Node, s.Now.Sub(s.BackupLast).Round(time.Second), t.BackupStale)}}
}
