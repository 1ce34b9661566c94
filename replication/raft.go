package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	raftwal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/prometheus/client_golang/prometheus"
	bolt "go.etcd.io/bbolt"

	"github.com/txlog/txlog/dirsync"
)

const (
	// transportTimeout is the I/O deadline of one Raft RPC; InstallSnapshot gets
	// a multiple of it per chunk.
	transportTimeout = 10 * time.Second
	// transportMaxPool is how many idle connections the transport keeps per peer.
	transportMaxPool = 3
	// openTimeout bounds the wait for raft.db's file lock, so that a second Open
	// of a Dir fails instead of hanging.
	openTimeout = time.Second
)

// Raft is one server of the replicated log: a hashicorp/raft node, its log and
// snapshot stores, its transport, and the glue to the state machine.
type Raft struct {
	id     string
	addr   string // advertised Raft address
	raft   *raft.Raft
	fsm    *fsm
	logs   logStore
	obs    *raft.Observer
	feed   *feed
	logger *slog.Logger
	met    raftMetrics // metrics.go

	// Raft's jobs besides the write path (batch.go), each a part type holding
	// r: reads and waits, membership, leader watching.
	readWaits   // reads.go
	membership  // membership.go
	leaderWatch // leader.go

	done      chan struct{} // closed by Close
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	mu      sync.Mutex           // guards the fields below
	barrier *termBarrier         // the barrier of the latest term this server led
	failing map[string]time.Time // followers whose heartbeats fail → last contact
}

// Open starts a Raft server in cfg.Dir, applying committed entries to sm. When
// cfg.Bootstrap is set and the Dir is new, it bootstraps the cluster. Open
// returns once the server runs; it does not wait for a leader. Before Open
// returns, raft restores the latest snapshot into sm, if there is one.
func Open(cfg Config, sm StateMachine) (*Raft, error) {
	return open(cfg, storeMachine{sm})
}

func open(cfg Config, sm machine) (*Raft, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("replication config: %w", err)
	}
	c := cfg.withDefaults()
	logger := c.Logger.With("component", "replication")
	hlog := newHCLogger(c.Logger)

	// Every directory's name is durable before raft writes anything in it
	// (dirsync.go): raft/ in the data dir, wal/ and snapshots/ in raft/.
	if err := dirsync.MkdirAll(c.Dir, 0o700, c.syncDir); err != nil {
		return nil, fmt.Errorf("open raft dir: %w", err)
	}
	snapDir := filepath.Join(c.Dir, "snapshots")
	if err := dirsync.MkdirAll(snapDir, 0o700, c.syncDir); err != nil {
		return nil, fmt.Errorf("open snapshot store in %s: %w", c.Dir, err)
	}
	logs, err := openLogStore(c, hlog)
	if err != nil {
		return nil, err
	}
	logs = withFaults(c, logs)
	var fsync prometheus.Histogram
	if c.Metrics != nil {
		fsync = fsyncHistogram("raft")
		logs = timedLogStore{logStore: logs, fsync: fsync}
	}
	files, err := raft.NewFileSnapshotStoreWithLogger(c.Dir, snapshotsRetained, hlog)
	if err != nil {
		logs.Close()
		return nil, fmt.Errorf("open snapshot store in %s: %w", c.Dir, err)
	}
	snaps := checkpointStore{SnapshotStore: files, sm: sm, dir: snapDir, syncDir: c.syncDir}
	// A server that forgot what it acknowledged must not start (amnesia.go).
	if err := checkAmnesia(c, sm, logs, snaps); err != nil {
		logs.Close()
		return nil, err
	}
	trans, err := newTransport(c, hlog)
	if err != nil {
		logs.Close()
		return nil, err
	}
	rc := raftConfig(c, hlog)
	fail := func(err error) (*Raft, error) {
		trans.Close()
		logs.Close()
		return nil, err
	}
	if c.Recover {
		// Before anything reads the configuration (recover.go).
		if err := recoverCluster(c, rc, sm, logs, snaps, trans, logger); err != nil {
			return fail(err)
		}
	}
	restore, err := snaps.restoreOnStart(sm.AppliedIndex())
	if err != nil {
		return fail(err)
	}
	if !restore {
		// The state machine kept its state and is at or past the latest
		// snapshot (always, for a checkpoint): restoring it would copy the
		// whole state for nothing, and entries after the snapshot at or below
		// AppliedIndex are skipped.
		rc.NoSnapshotRestoreOnStart = true
		logger.Info("state machine is current to the latest snapshot; not restoring it", "applied", sm.AppliedIndex())
	}

	hasState, err := raft.HasExistingState(logs, logs, snaps)
	if err != nil {
		return fail(fmt.Errorf("check raft state in %s: %w", c.Dir, err))
	}
	if !hasState && len(c.Bootstrap) > 0 {
		if err := raft.BootstrapCluster(rc, logs, logs, snaps, trans, bootstrapConfiguration(c.Bootstrap)); err != nil {
			return fail(fmt.Errorf("bootstrap cluster: %w", err))
		}
		logger.Info("cluster bootstrapped", "servers", len(c.Bootstrap))
	}

	// The cache serves the entries just appended when they are sent to the
	// followers, instead of reading them back from bbolt and decoding them.
	cached, err := raft.NewLogCache(logCacheSize(c), logs)
	if err != nil {
		return fail(fmt.Errorf("log cache: %w", err))
	}
	f := newFSM(sm, c.Fatal)
	rn, err := raft.NewRaft(rc, f, cached, logs, snaps, trans)
	if err != nil {
		return fail(fmt.Errorf("start raft: %w", err))
	}
	r := &Raft{
		id:      c.ID,
		addr:    string(trans.LocalAddr()),
		raft:    rn,
		fsm:     f,
		logs:    logs,
		feed:    newFeed(),
		logger:  logger,
		done:    make(chan struct{}),
		failing: make(map[string]time.Time),
		met: raftMetrics{leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "txlog_raft_leader_changes_total",
			Help: "Times this server learned of a new leader.",
		})},
	}
	r.readWaits.r, r.membership.r, r.leaderWatch.r = r, r, r
	if c.Metrics != nil {
		if err := errors.Join(c.Metrics.Register(fsync), r.registerMetrics(c.Metrics)); err != nil {
			rn.Shutdown().Error()
			return fail(fmt.Errorf("register metrics: %w", err))
		}
	}
	obs := make(chan raft.Observation, 64)
	r.obs = raft.NewObserver(obs, false, observeFilter)
	rn.RegisterObserver(r.obs)
	r.publishLeader() // the state before the observer was registered
	r.wg.Go(func() { r.watch(obs) })
	logger.Info("raft started", "addr", string(trans.LocalAddr()), "existing_state", hasState)
	return r, nil
}

// logStore is the Raft log and stable store: raft-boltdb or raft-wal.
type logStore interface {
	raft.LogStore
	raft.StableStore
	Close() error
}

// Log store kinds (Config.LogStore).
const (
	LogStoreBolt = "boltdb"
	LogStoreWAL  = "wal"
)

// openLogStore opens the configured log store in c.Dir: raft.db for raft-boltdb
// (fsync on every append unless NoSync), wal/ for hashicorp/raft-wal (one
// fdatasync per append; it has no NoSync).
func openLogStore(c Config, hlog *hclogger) (logStore, error) {
	if c.syncDir == nil {
		c.syncDir = dirsync.Sync // c comes without defaults from some tests
	}
	// A Dir made with one kind must not be opened with the other: the empty
	// store would look like a new server, and a static bootstrap would run again.
	_, boltErr := os.Stat(filepath.Join(c.Dir, "raft.db"))
	_, walErr := os.Stat(filepath.Join(c.Dir, "wal"))
	if c.LogStore == "" {
		c.LogStore = LogStoreWAL
		if boltErr == nil {
			c.LogStore = LogStoreBolt
		}
	}
	if c.LogStore == LogStoreWAL && boltErr == nil || c.LogStore == LogStoreBolt && walErr == nil {
		return nil, fmt.Errorf("open raft log in %s: it holds the other log store kind than %q", c.Dir, c.LogStore)
	}
	switch c.LogStore {
	case LogStoreWAL:
		dir := filepath.Join(c.Dir, "wal")
		if err := dirsync.MkdirAll(dir, 0o700, c.syncDir); err != nil {
			return nil, fmt.Errorf("open raft log %s: %w", dir, err)
		}
		// raft-wal's Close leaves its meta store open (v0.4.0): own it, so a
		// reopen in the same process does not wait for bbolt's file lock forever.
		meta := &metadb.BoltMetaDB{}
		zfs := newZeroFS(dir, func(err error) {
			if err != nil {
				hlog.Warn("prepare the next raft log segment", "dir", dir, "error", err)
			}
		})
		zfs.syncDir = c.syncDir
		w, err := raftwal.Open(dir, raftwal.WithLogger(hlog), raftwal.WithMetaStore(meta),
			raftwal.WithSegmentFiler(segment.NewFiler(dir, zfs)))
		if err != nil {
			zfs.Close()
			meta.Close()
			return nil, fmt.Errorf("open raft log %s: %w", dir, err)
		}
		// A reopened log has no Create ahead until it rotates: have the spare
		// ready for then (nothing to do if an earlier run left one).
		zfs.prepare(uint64(raftwal.DefaultSegmentSize))
		return walStore{WAL: w, meta: meta, zfs: zfs}, nil
	default:
		boltOpts := *bolt.DefaultOptions
		boltOpts.Timeout = openTimeout
		path := filepath.Join(c.Dir, "raft.db")
		b, err := raftboltdb.New(raftboltdb.Options{Path: path, NoSync: c.NoSync, BoltOptions: &boltOpts})
		if err != nil {
			return nil, fmt.Errorf("open raft log %s: %w", path, err)
		}
		if errors.Is(boltErr, os.ErrNotExist) {
			// bbolt created raft.db in place: make its name durable.
			if err := c.syncDir(c.Dir); err != nil {
				b.Close()
				return nil, fmt.Errorf("open raft log %s: %w", path, err)
			}
		}
		return b, nil
	}
}

// walStore is raft-wal with the meta store it does not close itself.
type walStore struct {
	*raftwal.WAL
	meta *metadb.BoltMetaDB
	zfs  *zeroFS
}

func (w walStore) Close() error {
	return errors.Join(w.WAL.Close(), w.zfs.Close(), w.meta.Close())
}

// logCacheSize is the number of recent entries the log cache holds: a few
// AppendEntries batches' worth.
func logCacheSize(c Config) int { return max(4*c.MaxAppendEntries, 1024) }

// shutdownTimeout bounds Close's wait for raft's goroutines.
const shutdownTimeout = 10 * time.Second

// streamLayer adapts Config.Stream to raft.StreamLayer.
type streamLayer struct {
	StreamLayer
	advertise net.Addr // nil: the listener's address
}

var _ raft.StreamLayer = streamLayer{}

func (s streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return s.StreamLayer.Dial(string(addr), timeout)
}

func (s streamLayer) Addr() net.Addr {
	if s.advertise != nil {
		return s.advertise
	}
	return s.StreamLayer.Addr()
}

func newTransport(c Config, hlog *hclogger) (*raft.NetworkTransport, error) {
	var advertise net.Addr
	if c.AdvertiseAddr != "" {
		a, err := net.ResolveTCPAddr("tcp", c.AdvertiseAddr)
		if err != nil {
			return nil, fmt.Errorf("resolve advertise address %s: %w", c.AdvertiseAddr, err)
		}
		advertise = a
	}
	tc := &raft.NetworkTransportConfig{
		Logger:  hlog,
		MaxPool: transportMaxPool,
		Timeout: transportTimeout,
		// 1 turns off hashicorp/raft's pipelined replication. Its own docs say
		// pipelining gains little with batching (raft PR #541), and its
		// netPipeline can deadlock when the decoder stops on a newer term (the
		// chaos verifier caught a graceful shutdown hanging in it).
		MaxRPCsInFlight: 1,
	}
	if c.AddressProvider != nil {
		tc.ServerAddressProvider = addressProvider(c.AddressProvider)
	}
	if c.Stream != nil {
		tc.Stream = streamLayer{StreamLayer: c.Stream, advertise: advertise}
		return raft.NewNetworkTransportWithConfig(tc), nil
	}
	trans, err := raft.NewTCPTransportWithConfig(c.BindAddr, advertise, tc)
	if err != nil {
		return nil, fmt.Errorf("listen for raft on %s: %w", c.BindAddr, err)
	}
	return trans, nil
}

// addressProvider adapts Config.AddressProvider to raft.
type addressProvider func(id string) (string, error)

func (p addressProvider) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	addr, err := p(string(id))
	return raft.ServerAddress(addr), err
}

func raftConfig(c Config, hlog *hclogger) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.ID)
	rc.HeartbeatTimeout = c.HeartbeatTimeout
	rc.ElectionTimeout = c.ElectionTimeout
	rc.LeaderLeaseTimeout = c.LeaderLeaseTimeout
	rc.CommitTimeout = c.CommitTimeout
	rc.SnapshotInterval = c.SnapshotInterval
	rc.SnapshotThreshold = c.SnapshotThreshold
	rc.TrailingLogs = c.TrailingLogs
	rc.MaxAppendEntries = c.MaxAppendEntries
	rc.BatchApplyCh = true
	rc.ParallelLeaderAppend = !c.SerialLeaderAppend
	rc.Logger = hlog
	return rc
}

func bootstrapConfiguration(servers []Server) raft.Configuration {
	var conf raft.Configuration
	for _, s := range servers {
		conf.Servers = append(conf.Servers, raft.Server{
			Suffrage: raft.Voter,
			ID:       raft.ServerID(s.ID),
			Address:  raft.ServerAddress(s.Addr),
		})
	}
	return conf
}

// Close shuts the server down and closes its stores. It does not hand
// leadership over; call TransferLeadership first for that. When Close returns,
// raft makes no more calls into the state machine. It is safe to call twice.
func (r *Raft) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		close(r.done) // under mu: startBarrier adds to wg only before this
		r.mu.Unlock()
		r.raft.DeregisterObserver(r.obs)
		// Shutdown waits for raft's goroutines and closes the transport. Bound the
		// wait: should a raft goroutine never return, the process must still stop
		// (the caller exits); the log and the store stay consistent, because the
		// raft log's bbolt commits are atomic.
		errc := make(chan error, 1)
		go func() { errc <- r.raft.Shutdown().Error() }()
		var err error
		select {
		case err = <-errc:
		case <-time.After(shutdownTimeout):
			r.logger.Error("raft shutdown hangs; giving up on it", "after", shutdownTimeout)
			r.closeErr = fmt.Errorf("raft shutdown: %w after %v", ErrTimeout, shutdownTimeout)
			return
		}
		r.wg.Wait()
		if cerr := r.logs.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close raft log: %w", cerr))
		}
		r.feed.close()
		r.closeErr = err
		r.logger.Info("raft stopped")
	})
	return r.closeErr
}

// await waits for a raft future, for ctx and for Close, whichever comes first,
// and returns the future's raw error (see awaitMany).
func (r *Raft) await(ctx context.Context, f raft.Future) error {
	return r.awaitMany(ctx, []raft.Future{f})[0]
}

// Status is a snapshot of a server's Raft state.
type Status struct {
	ID           string
	Addr         string // this server's advertised Raft address
	State        string // "leader", "follower", "candidate" or "shutdown"
	Term         uint64
	CommitIndex  uint64    // the highest index known to be committed
	AppliedIndex uint64    // the index this server's state machine is current to (current)
	LastIndex    uint64    // the last index in this server's log or snapshot
	LeaderID     string    // empty while no leader is known
	LeaderAddr   string    // the leader's Raft address
	LastContact  time.Time // when a follower last heard from the leader; zero if never, and meaningless on the leader
}

// Status returns this server's Raft state.
func (r *Raft) Status() Status {
	addr, id := r.raft.LeaderWithID()
	commit := r.raft.CommitIndex()
	applied, _ := r.fsm.watch()
	return Status{
		ID:           r.id,
		Addr:         r.addr,
		State:        strings.ToLower(r.raft.State().String()),
		Term:         r.raft.CurrentTerm(),
		CommitIndex:  commit,
		AppliedIndex: r.current(applied, commit),
		LastIndex:    r.raft.LastIndex(),
		LeaderID:     string(id),
		LeaderAddr:   string(addr),
		LastContact:  r.raft.LastContact(),
	}
}

// Leader returns the current leader's ID and Raft address, or empty strings
// while no leader is known.
func (r *Raft) Leader() (id, addr string) {
	a, i := r.raft.LeaderWithID()
	return string(i), string(a)
}

// Addr returns the Raft address this server advertises.
func (r *Raft) Addr() string { return r.addr }

// IsLeader reports whether this server is the leader.
func (r *Raft) IsLeader() bool {
	return r.raft.State() == raft.Leader
}
