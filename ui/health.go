package ui

import (
	"sync"
	"time"
)

// NodeInfo is what a node's /v1/stats says about its own health, besides
// its Raft state, so that the page served by any member shows every
// member's: each number is the node's own, read where it is kept.
type NodeInfo struct {
	// Version is the binary's version and VCS revision.
	Version string `json:"version"`
	// StartedAt is when the node's process opened it; UptimeSeconds how
	// long ago that was when the answer was made.
	StartedAt     time.Time `json:"started_at"`
	UptimeSeconds float64   `json:"uptime_seconds"`
	// Parked is how many transactions this node accepted and has not seen
	// resolved (txlog_intake_unresolved); ParkedOldestSeconds the age of the
	// oldest of them, 0 when none.
	Parked              int     `json:"parked"`
	ParkedOldestSeconds float64 `json:"parked_oldest_seconds"`
	// DiskUsedBytes and DiskFreeBytes are of the data directory's file
	// system: used by anyone, and free to an unprivileged user
	// (txlog_disk_free_bytes); both 0 when statfs failed.
	DiskUsedBytes uint64 `json:"disk_used_bytes"`
	DiskFreeBytes uint64 `json:"disk_free_bytes"`
	// FsyncP99Ms is the 99th percentile of the node's fsync probe over the
	// last minute, the value TxlogFsyncSlow compares; 0 when unknown.
	FsyncP99Ms float64 `json:"fsync_p99_ms"`
	// RaftLogBytes and SnapshotBytes are the sizes of the Raft log's files
	// and of the kept snapshots.
	RaftLogBytes  uint64 `json:"raft_log_bytes"`
	SnapshotBytes uint64 `json:"snapshot_bytes"`
}

// Thresholds are the bounds of the node's alert rules that the page colours
// its numbers against, read from the node's alert configuration (the
// --alert-* flags). A zero field is not known here and colours nothing.
type Thresholds struct {
	// ParkedMax is --alert-parked-max (TxlogParkedBacklog). The page also
	// colours a member's lag against it: no rule watches lag, and entries a
	// member has not applied are a backlog of the same kind.
	ParkedMax int `json:"parked_max,omitempty"`
	// ParkedAgeSeconds is --alert-parked-age (TxlogParkedOldest).
	ParkedAgeSeconds float64 `json:"parked_age_seconds,omitempty"`
	// UnreachableForSeconds is --alert-unreachable-for
	// (TxlogMemberUnreachable).
	UnreachableForSeconds float64 `json:"unreachable_for_seconds,omitempty"`
	// FsyncP99Ms is --alert-fsync-p99 (TxlogFsyncSlow).
	FsyncP99Ms float64 `json:"fsync_p99_ms,omitempty"`
	// DiskFreePercent is --alert-disk-free-percent (TxlogDiskFreeLow).
	DiskFreePercent float64 `json:"disk_free_percent,omitempty"`
}

// Alert is one alert firing now on a node: the last event of its kind
// (alert and labels) said "firing".
type Alert struct {
	Alert    string            `json:"alert"`
	Severity string            `json:"severity"`
	Node     string            `json:"node"` // the node whose rules fired it
	Summary  string            `json:"summary"`
	Labels   map[string]string `json:"labels,omitempty"`
	// Since is when its condition began, as its firing event says.
	Since time.Time `json:"since"`
	// FiredAt is when it was sent; zero (omitted) when the event does not
	// say.
	FiredAt time.Time `json:"fired_at,omitzero"`
}

// lastSeen remembers when this node last read each member's stats and the
// applied index they gave, so that a member that stops answering is shown
// with how long it has been silent (not with "ok") and how far behind it
// was left at least.
type lastSeen struct {
	mu    sync.Mutex
	start time.Time         // when the handler was made: the silence of a member never read
	at    map[string]answer // member ID → its last answer
}

// answer is when a member last answered and the applied index it gave.
type answer struct {
	at      time.Time
	applied uint64
}

// saw records that id answered at now with applied index applied.
func (s *lastSeen) saw(id string, now time.Time, applied uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at == nil {
		s.at = map[string]answer{}
	}
	s.at[id] = answer{now, applied}
}

// silent returns id's last answer (zero: never since start) and for how
// long it has been silent at now.
func (s *lastSeen) silent(id string, now time.Time) (answer, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.at[id]
	if last.at.IsZero() {
		return answer{}, now.Sub(s.start)
	}
	return last, now.Sub(last.at)
}
