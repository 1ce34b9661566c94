package replication

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/txlog/txlog/dirsync"
)

// Defaults for Config. The timeouts suit a LAN, where a round trip takes well
// under a millisecond: raft sends heartbeats every HeartbeatTimeout/10 (50ms),
// so a follower that hears nothing for 500ms to 1s can be sure the leader is
// gone, and a failover takes about a second instead of raft's default two to
// three.
const (
	DefaultHeartbeatTimeout   = 500 * time.Millisecond
	DefaultElectionTimeout    = 500 * time.Millisecond
	DefaultLeaderLeaseTimeout = 250 * time.Millisecond
	DefaultCommitTimeout      = 5 * time.Millisecond
	DefaultSnapshotInterval   = 2 * time.Second
	DefaultSnapshotThreshold  = 8192
	DefaultTrailingLogs       = 128 << 10
	DefaultMaxAppendEntries   = 512
)

// Snapshots are checkpoints of the store (checkpoint.go): one store commit and
// its fsyncs, whatever the store's size. So raft checks every 2 to 4 s
// (DefaultSnapshotInterval, jittered) whether 8,192 entries came since the
// last one, instead of every 30 to 60 s: a restart reads every entry after the
// last snapshot twice (raft's scan for configuration changes, then the replay
// the store skips), and at 4,000 tx/s a minute of entries made that most of a
// 1M-transaction restart. A snapshot keeps the 128Ki entries before it
// (DefaultTrailingLogs, about 50 MB of log), so a follower that was down for a
// few seconds, even under batch load, still catches up from the log rather
// than from a copy of the whole store.

// snapshotsRetained is how many snapshots the snapshot store keeps.
const snapshotsRetained = 2

// Server is one member of a static bootstrap configuration. Every member is a voter.
type Server struct {
	ID   string // the member's Config.ID
	Addr string // the member's Config.AdvertiseAddr, host:port
}

// StreamLayer is a listener of Raft's incoming connections and a dialer of
// its outgoing ones (peerlink.RaftLayer): Open adapts it to hashicorp/raft's
// StreamLayer.
type StreamLayer interface {
	net.Listener
	// Dial connects to the server at addr within timeout.
	Dial(addr string, timeout time.Duration) (net.Conn, error)
}

// Config holds the settings of a Raft. The zero value of each field means "use
// the default"; ID, Dir and BindAddr have none and must be set.
type Config struct {
	// ID is this server's ID in the cluster. It must never change for a Dir. Required.
	ID string
	// Dir holds the Raft state: raft.db (the log and the stable store, a bbolt file
	// that is fsynced on every write) and snapshots/. Created if missing. Required.
	Dir string
	// BindAddr is the host:port the Raft transport listens on. Port 0 picks a free
	// port; Status and Leader then report the port actually bound. Required.
	BindAddr string
	// AdvertiseAddr is the host:port other servers dial to reach this one; a
	// host name is resolved once, by Open. Default: the address bound for
	// BindAddr, which must then not be 0.0.0.0 or [::].
	AdvertiseAddr string
	// Bootstrap is the initial membership of a new cluster. When it is set and Dir
	// holds no Raft state yet, Open bootstraps the cluster with exactly this list.
	// Give every initial member the same list: then all of them may bootstrap
	// safely. A Dir with state ignores it. Default: none; the server waits to be
	// added by a leader's Join.
	Bootstrap []Server
	// HeartbeatTimeout is how long a follower waits without hearing from a leader
	// before it starts an election. Default: DefaultHeartbeatTimeout. Min 5ms.
	HeartbeatTimeout time.Duration
	// ElectionTimeout is how long a candidate waits for votes before it starts
	// another election. Default: DefaultElectionTimeout. Min HeartbeatTimeout.
	ElectionTimeout time.Duration
	// LeaderLeaseTimeout is how long a leader stays leader without hearing from a
	// quorum. Default: DefaultLeaderLeaseTimeout. Min 5ms, max HeartbeatTimeout.
	LeaderLeaseTimeout time.Duration
	// CommitTimeout is how long a leader waits, when idle, before it tells
	// followers about a new commit index. Default: DefaultCommitTimeout. Min 1ms.
	CommitTimeout time.Duration
	// SnapshotInterval is how often Raft checks whether to take a snapshot; it
	// takes one when SnapshotThreshold entries were added since the last one. The
	// check is jittered up to twice the interval. Default: DefaultSnapshotInterval.
	// Min 5ms.
	SnapshotInterval time.Duration
	// SnapshotThreshold is how many log entries, since the last snapshot, make a
	// snapshot worth taking. Default: DefaultSnapshotThreshold.
	SnapshotThreshold uint64
	// TrailingLogs is how many log entries a snapshot leaves behind, so that a
	// follower that is a little behind catches up from the log and not from a
	// snapshot. Default: DefaultTrailingLogs.
	TrailingLogs uint64
	// MaxAppendEntries is the most entries sent in one AppendEntries request, and
	// the most proposals written to the log in one batch. Default:
	// DefaultMaxAppendEntries. Max 1024.
	MaxAppendEntries int
	// NoSync turns off the fsync of raft.db. Only for tests: a crash may then lose
	// or tear entries this server acknowledged. Default: false (fsync on).
	NoSync bool
	// Logger receives the package's logs and raft's. Raft logs at Warn and above
	// unless Logger is enabled for Debug. Default: logs are discarded.
	Logger *slog.Logger
	// Metrics is the registry the package registers its metrics with
	// (metrics.go: txlog_raft_*, txlog_fsync_duration_seconds{log="raft"});
	// nil: no metrics. hashicorp/raft's own go-metrics reach a registry
	// through ExportRaftMetrics instead.
	Metrics prometheus.Registerer
	// Fatal is called, from raft's apply goroutine, when the state machine cannot
	// apply a committed entry. After it the Raft applies nothing more, so the node
	// must stop rather than diverge. Default: log at Error and panic.
	Fatal func(error)
	// LogStore picks the Raft log and stable store: LogStoreWAL
	// (hashicorp/raft-wal: one fdatasync per append) or LogStoreBolt
	// (raft-boltdb: a bbolt commit, two fdatasyncs, per append). A Dir keeps the
	// kind it was created with: opening it with the other kind is an error.
	// Default "": the kind the Dir holds, LogStoreWAL for a new Dir.
	LogStore string
	// SerialLeaderAppend makes the leader write new entries to its own log
	// before it sends them to the followers, as hashicorp/raft does upstream:
	// two fsyncs in series before each commit. Default false: the leader writes
	// in parallel with replicating them (third_party/hashicorp-raft/PATCHES.md),
	// and an entry still commits only once the leader and one follower (of
	// three) have written it; if the leader's write fails after the entries
	// were sent, the process panics.
	SerialLeaderAppend bool
	// AddressProvider maps a server ID to the address to dial, overriding the
	// address in the Raft configuration (for example to route through a
	// fault-injecting proxy). Default: dial the configured address.
	AddressProvider func(id string) (string, error)
	// Stream carries Raft's connections instead of a TCP listener of its
	// own on BindAddr (which is then only a name): node's peer link
	// (peerlink.RaftLayer), which shares one listener with the other kinds
	// of node-to-node traffic. Its Addr is the address raft advertises when
	// AdvertiseAddr is empty. Default nil: listen on BindAddr.
	Stream StreamLayer

	// Recover rewrites the Raft configuration in Dir to this server alone
	// before raft starts, keeping the log's history in the state machine
	// (raft.RecoverCluster; recover.go), so that a server left without a
	// majority runs as a one-node cluster that new members join. Open fails
	// with ErrNoState when Dir holds no Raft state, and with an
	// *AmnesiaError when it lost some. Use it once, on the server with the
	// most complete log. Default false.
	Recover bool

	// syncDir fsyncs a directory after an entry in it was created, renamed or
	// removed (dirsync.go). Default: syncDir. Tests record the calls.
	syncDir func(dir string) error
}

// withDefaults returns a copy of c with each zero field set to its default.
func (c Config) withDefaults() Config {
	setDefault(&c.HeartbeatTimeout, DefaultHeartbeatTimeout)
	setDefault(&c.ElectionTimeout, DefaultElectionTimeout)
	setDefault(&c.LeaderLeaseTimeout, DefaultLeaderLeaseTimeout)
	setDefault(&c.CommitTimeout, DefaultCommitTimeout)
	setDefault(&c.SnapshotInterval, DefaultSnapshotInterval)
	setDefault(&c.SnapshotThreshold, DefaultSnapshotThreshold)
	setDefault(&c.TrailingLogs, DefaultTrailingLogs)
	setDefault(&c.MaxAppendEntries, DefaultMaxAppendEntries)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Fatal == nil {
		logger := c.Logger
		c.Fatal = func(err error) {
			logger.Error("state machine failed, stopping", "err", err)
			panic(err)
		}
	}
	if c.syncDir == nil {
		c.syncDir = dirsync.Sync
	}
	c.Bootstrap = append([]Server(nil), c.Bootstrap...)
	return c
}

func setDefault[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

// Validate reports every setting that is missing or out of bounds. Zero fields
// are checked as their defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.ID == "" {
		bad("ID is required")
	}
	if c.Dir == "" {
		bad("Dir is required")
	}
	switch c.LogStore {
	case "", LogStoreBolt, LogStoreWAL:
	default:
		bad("LogStore %q: want %q or %q", c.LogStore, LogStoreBolt, LogStoreWAL)
	}
	if c.BindAddr == "" {
		bad("BindAddr is required")
	}
	atLeast := func(name string, d, min time.Duration) {
		if d < min {
			bad("%s %v is below the minimum %v", name, d, min)
		}
	}
	atLeast("HeartbeatTimeout", c.HeartbeatTimeout, 5*time.Millisecond)
	atLeast("ElectionTimeout", c.ElectionTimeout, 5*time.Millisecond)
	atLeast("LeaderLeaseTimeout", c.LeaderLeaseTimeout, 5*time.Millisecond)
	atLeast("CommitTimeout", c.CommitTimeout, time.Millisecond)
	atLeast("SnapshotInterval", c.SnapshotInterval, 5*time.Millisecond)
	if c.ElectionTimeout < c.HeartbeatTimeout {
		bad("ElectionTimeout %v is below HeartbeatTimeout %v", c.ElectionTimeout, c.HeartbeatTimeout)
	}
	if c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		bad("LeaderLeaseTimeout %v is above HeartbeatTimeout %v", c.LeaderLeaseTimeout, c.HeartbeatTimeout)
	}
	if c.MaxAppendEntries < 1 || c.MaxAppendEntries > 1024 {
		bad("MaxAppendEntries %d is outside [1, 1024]", c.MaxAppendEntries)
	}
	if len(c.Bootstrap) > 0 {
		errs = append(errs, validateBootstrap(c.ID, c.Bootstrap)...)
	}
	return errors.Join(errs...)
}

func validateBootstrap(self string, servers []Server) []error {
	var errs []error
	ids := make(map[string]bool)
	addrs := make(map[string]bool)
	for i, s := range servers {
		if s.ID == "" || s.Addr == "" {
			errs = append(errs, fmt.Errorf("Bootstrap[%d] needs both ID and Addr", i))
		}
		if ids[s.ID] {
			errs = append(errs, fmt.Errorf("Bootstrap[%d] repeats ID %q", i, s.ID))
		}
		if addrs[s.Addr] {
			errs = append(errs, fmt.Errorf("Bootstrap[%d] repeats Addr %q", i, s.Addr))
		}
		ids[s.ID], addrs[s.Addr] = true, true
	}
	if self != "" && !ids[self] {
		errs = append(errs, fmt.Errorf("Bootstrap does not include ID %q", self))
	}
	return errs
}
