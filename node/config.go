package node

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/txlog/txlog/store"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/txlog/txlog/alert"
	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/notify"
	"github.com/txlog/txlog/txid"
	"github.com/txlog/txlog/wal"
)

// Peer is one initial member of a statically bootstrapped cluster.
type Peer struct {
	ID       string
	RaftAddr string
	// NodeNumber is the txid node number given to it in --cluster
	// (id=host:port@N); 0 when none is given.
	NodeNumber int
}

// Config holds a node's settings. Zero values mean "use the default".
type Config struct {
	// ID names the node in the cluster. Required.
	ID string
	// DataDir holds the node's state. Default "data/<ID>".
	DataDir string
	// HTTPAddr is the address the HTTP API listens on; port 0 picks a free port,
	// written to <DataDir>/http.addr once listening. Default "127.0.0.1:8080".
	HTTPAddr string
	// AdvertiseHTTPAddr is the HTTP address other nodes use to reach this one.
	// Default: the bound HTTP address.
	AdvertiseHTTPAddr string
	// DebugAddr is the address of a second HTTP listener that serves
	// net/http/pprof under /debug/pprof/ (debug.go); port 0 picks a free port,
	// written to <DataDir>/debug.addr once listening. Its endpoints are
	// unauthenticated: bind it to loopback or a private network. Default "":
	// off.
	DebugAddr string
	// MetricsAddr is the address of a second HTTP listener that serves GET
	// /metrics alone (debug.go), besides the HTTP API's own /metrics; port 0
	// picks a free port, written to <DataDir>/metrics.addr once listening.
	// Needs Metrics to be a registry. Default "": off.
	MetricsAddr string
	// RaftAddr is the peer address: the peer link (package peerlink) listens
	// on it and Raft advertises it; it carries Raft and every other
	// node-to-node call. Default "127.0.0.1:7101".
	RaftAddr string
	// Cluster lists the initial members for a static bootstrap. Mutually exclusive with Join.
	Cluster []Peer
	// RaftDial maps peer IDs to the address this node's Raft dials to reach
	// them, when that differs from the peer's advertised Raft address (a proxy
	// in between, as the chaos verifier's fault proxies). Peers not listed,
	// and the peer link's other kinds of connection (propose streams,
	// internal requests), dial the advertised address. A testing flag
	// (txlogd -help-testing).
	RaftDial map[string]string
	// Join is the HTTP base URL of a member to join through. Mutually exclusive with Cluster.
	Join string
	// Recover (losing a majority: recover.go) makes this node, which
	// holds Raft state, a one-node cluster before Raft starts (--recover);
	// once per data directory. Default false.
	Recover bool
	// RedisAddr is the host:port of the Redis that parks transactions while there
	// is no leader. Empty: parking uses the intake WAL alone.
	RedisAddr string
	// IntakeWAL says when a transaction answered with ack=quorum or ack=all goes
	// into the intake WAL: "parallel" (default) appends it beside the Raft
	// proposal, off the answer's path, and fsyncs it only if it has to be
	// parked; "sync" appends and fsyncs it before
	// proposing; "off" appends it only when it has to be parked. ack=accepted
	// always waits for the append. See docs/durability.md.
	IntakeWAL string
	// IntakeWALSegmentBytes is the size of the intake WAL's segment files
	// (wal.Config.SegmentBytes): a segment is deleted once every record in it
	// is resolved, so smaller segments give disk back sooner and rotate more
	// often. It must hold the largest transaction: at least MaxBodyBytes plus
	// 1 KiB. Default wal.DefaultSegmentBytes (64 MiB).
	IntakeWALSegmentBytes int64
	// Forward is how a follower sends the writes it accepted to the leader:
	// "stream" (default) over one persistent propose stream per leader
	// (peer.Streams), "http" with one POST /v1/internal/propose per group,
	// both on the peer link. A testing flag (txlogd -help-testing).
	Forward string
	// MaxUnresolved bounds the transactions this node has accepted and not seen
	// resolved (in flight or parked); past it, writes get 503 overloaded, so that
	// an ack=accepted flood or a long outage cannot grow the backlog without
	// bound. Default 100,000.
	MaxUnresolved int
	// RaftLog is the Raft log store: "wal" (hashicorp/raft-wal) or "boltdb"
	// (raft-boltdb). A data directory keeps the kind it was created with.
	// Default "": the data directory's kind, "wal" for a new one.
	RaftLog string
	// RaftSerialAppend makes the Raft leader write new entries to its log
	// before sending them to the followers (hashicorp/raft's own order: two
	// fsyncs in series per commit), instead of in parallel with sending them
	// (replication.Config.SerialLeaderAppend). Default false. A testing flag
	// (txlogd -help-testing).
	RaftSerialAppend bool
	// NoHTTPFastPath serves every request through net/http's server, instead
	// of POST /v1/tx and /v1/tx/batch on keep-alive connections through the
	// API's own fast path (fastpath.FastListener; --http-fast-path=false). Default
	// false: the fast path is on. A testing flag (txlogd -help-testing).
	NoHTTPFastPath bool
	// StoreCommitInterval is how long the state machine may keep applied
	// entries in an open bbolt transaction before it commits them: one commit
	// per interval instead of one per applied batch
	// (store.Config.CommitInterval). Each commit is made durable in the
	// background (store/durable.go), so the store file is never torn, by a
	// process or a machine crash; a crash loses at most what was not durable
	// yet, which the node applies again from the Raft log at its next start. A
	// negative value commits every applied batch. Default (0)
	// DefaultStoreCommitInterval (docs/durability.md).
	StoreCommitInterval time.Duration
	// StoreKVFlushRecords is the number of log records after which the store
	// flushes its kv overlay (store.Config.KVFlushRecords); retention drops
	// no record after the last flush. Default (0) the store's, 65,536. A
	// testing flag (txlogd -help-testing).
	StoreKVFlushRecords int
	// NodeNumber is this node's number inside the txids it issues (1..1023),
	// unique in the cluster. A data directory keeps the number it has (the
	// file node.number) and refuses another. Default (0): the cluster assigns
	// one, unique by construction: an initial member of Cluster gets the one
	// bootstrapNumbers gives it, a member that joins gets a free one from the
	// leader (see node/number.go and docs/architecture.md).
	NodeNumber int
	// Alert holds the --alert-* settings (alert.Config: webhooks, format,
	// thresholds); its Node and Logger are the node's. Default: no webhooks,
	// the rules' default thresholds.
	Alert alert.Config
	// WebhookAllow is --webhook-allow: the hosts and ports a transaction's
	// notify url may name (notify.AllowList). Default: none, and a
	// transaction with notify is refused with 400 notify_not_allowed.
	WebhookAllow *notify.AllowList
	// WebhookAllowPrivate is --webhook-allow-private: a callback's host name
	// that WebhookAllow matches may resolve to a private address (10/8,
	// 172.16/12, 192.168/16, fc00::/7, ...: notify.Private); a loopback or
	// link-local one is still reached only when a pattern names its IP.
	// Default false.
	WebhookAllowPrivate bool
	// WebhookSecret keys the X-Txlog-Signature of each callback.
	WebhookSecret string
	// WebhookHorizon is how long after its decision a callback is retried
	// before it is logged and dropped; at least 1h. Default 24h.
	WebhookHorizon time.Duration
	// WebhookMinBackoff and WebhookMaxBackoff bound the backoff between
	// attempts at one callback. Defaults 1s and 5m; testing flags.
	WebhookMinBackoff, WebhookMaxBackoff time.Duration
	// DedupWindow is how long txids and idempotency keys are remembered. Default 24h.
	DedupWindow time.Duration
	// LogRetention is how much of the log the node's store keeps
	// (store.Config.Retention; --log-retention, --retention-respects-consumers).
	// A node's own setting: it changes which old log records the node serves,
	// nothing else. Default: keep everything.
	LogRetention store.Retention
	// MaxBodyBytes limits request bodies. Default 1 MiB.
	MaxBodyBytes int64
	// MaxStreams bounds the log streams and waiting reads the HTTP API
	// serves at once (api.Config.MaxStreams); past it they get 503
	// too_many_streams. Default api.DefaultMaxStreams (1024).
	MaxStreams int
	// ClientStreamInflight bounds the requests in flight on one client
	// stream (api.Config.ClientStreamInflight); past it they get 429
	// stream_full. Default api.DefaultClientStreamInflight (1024).
	ClientStreamInflight int
	// ShutdownTimeout bounds each step of a graceful shutdown. Default 5s.
	ShutdownTimeout time.Duration
	// LogLevel is debug, info, warn or error. Default info.
	LogLevel string
	// Logger receives the node's logs; nil discards them.
	Logger *slog.Logger
	// NoMetrics makes txlogd run without a registry (Metrics nil, no
	// /metrics, raft's go-metrics not exported; --metrics=false), for the A/B
	// of the metrics' cost. Default false. A testing flag (txlogd
	// -help-testing).
	NoMetrics bool
	// TLSCertFile and TLSKeyFile are the client port's certificate and key
	// (--tls-cert-file, --tls-key-file), PEM: with them the HTTP API serves
	// TLS 1.2 and up alone. Re-read when the files change and on SIGHUP.
	// Default "": plain HTTP.
	TLSCertFile, TLSKeyFile string
	// TLSClientCAFile is the CA bundle that signs client certificates
	// (--tls-client-ca-file): with it every client must present one (mutual
	// TLS). Re-read like the certificate. Needs TLSCertFile. Default "":
	// no client certificate asked for.
	TLSClientCAFile string
	// PeerTLSCertFile, PeerTLSKeyFile and PeerTLSCAFile are the peer link's
	// certificate, key and CA bundle (--peer-tls-*): mutual TLS on every
	// node-to-node connection, both ways, each side's certificate signed by
	// that CA. All three or none. Re-read when they change and on SIGHUP.
	PeerTLSCertFile, PeerTLSKeyFile, PeerTLSCAFile string
	// PeerCertAllowedCN, when set, are the only subject common names a
	// peer's certificate may carry (--peer-cert-allowed-cn, comma-separated).
	// Needs peer TLS.
	PeerCertAllowedCN []string
	// PeerTLSMode is how the peer link uses TLS (--peer-tls-mode): PeerTLSOn
	// ("tls", the default with peer certificates) accepts and dials TLS
	// alone; PeerTLSBoth accepts plain and TLS connections and dials TLS
	// first, plain when the peer does not speak it: for the rolling move
	// from plain to TLS (docs/security.md). Without peer certificates: off.
	PeerTLSMode string
	// PeerSecretFile holds the shared secret the peer link authenticates
	// peers with (--peer-secret-file): its first line is sent, any line is
	// accepted (so that a new secret can be added everywhere before the old
	// one goes). Re-read when it changes. Default "": none.
	PeerSecretFile string
	// AuthFile lists the credentials of the HTTP API (--auth-file, package
	// auth): with it every route but /healthz and /readyz needs one.
	// Re-read when it changes. Default "": no auth.
	AuthFile string
	// MetricsOpen and UIOpen serve /metrics (the dashboard, /ui/) without a
	// credential when AuthFile is set (--metrics-open, --ui-open). Default
	// false.
	MetricsOpen, UIOpen bool
	// AllowedOrigins are the origins (scheme://host[:port]) a browser's
	// request may come from besides the node's own (--allowed-origins); a
	// request with another Origin header is refused, 403 forbidden.
	// "*": any.
	AllowedOrigins []string
	// AllowedHosts are the host names a request's Host header may carry
	// besides an IP address, localhost and the host of AdvertiseHTTPAddr
	// (--allowed-hosts); "*": any.
	AllowedHosts []string
	// JoinTokenFile holds the admin token that --join presents to the member
	// it joins through (--join-token-file). Default "": none.
	JoinTokenFile string
	// JoinCAFile is the CA bundle that verifies the HTTPS certificate of the
	// member --join names (--join-ca-file). Default: PeerTLSCAFile, else
	// the system's roots. With peer TLS, the join presents the peer
	// certificate as its client certificate.
	JoinCAFile string
	// Backup and restore (restore.go, backup.go). Restore is a backup file
	// (GET /v1/backup) to seed this node with, as the first node of a new
	// cluster, before it starts (--restore); the data dir must be empty.
	// Default "": none.
	Restore string
	// BackupDir, when set, is where the node writes a verified backup of
	// its own state every BackupInterval (default 1h), keeping the newest
	// BackupKeep (default 24) of its own (--backup-dir, --backup-interval,
	// --backup-keep; backup.go).
	BackupDir      string
	BackupInterval time.Duration
	BackupKeep     int
	// Metrics is the registry the node and the packages it opens (api,
	// replication, store, wal, node/parking: passed down in their Configs) register their
	// metrics with (docs/operations.md, Metrics); nil: no metrics. When it is
	// also a prometheus.Gatherer (a *prometheus.Registry), the HTTP listener
	// and MetricsAddr serve it at GET /metrics. A registry serves one Open.
	Metrics prometheus.Registerer
}

// Defaults.
const (
	DefaultHTTPAddr        = "127.0.0.1:8080"
	DefaultRaftAddr        = "127.0.0.1:7101"
	DefaultDedupWindow     = 24 * time.Hour
	DefaultMaxBodyBytes    = 1 << 20
	DefaultShutdownTimeout = 5 * time.Second
	DefaultMaxUnresolved   = 100_000
	// DefaultStoreCommitInterval is etcd's default backend batch interval.
	DefaultStoreCommitInterval = 100 * time.Millisecond
)

// intakeRecordSlack is what an intake WAL segment needs besides the largest
// request body: the segment's header and a record's, with room to spare. A
// transaction's binary encoding is shorter than the JSON it came in (field
// names and quotes against a few length bytes).
const intakeRecordSlack = 1024

// Intake WAL modes (Config.IntakeWAL).
const (
	IntakeParallel = "parallel"
	IntakeSync     = "sync"
	IntakeOff      = "off"
)

// Peer TLS modes (Config.PeerTLSMode).
const (
	PeerTLSOff  = "off"
	PeerTLSOn   = "tls"
	PeerTLSBoth = "both"
)

// Forwarding modes (Config.Forward).
const (
	ForwardStream = "stream"
	ForwardHTTP   = "http"
)

// withDefaults returns a copy of c with defaults filled in.
func (c Config) withDefaults() Config {
	if c.DataDir == "" && c.ID != "" {
		c.DataDir = filepath.Join("data", c.ID)
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = DefaultHTTPAddr
	}
	if c.RaftAddr == "" {
		c.RaftAddr = DefaultRaftAddr
	}
	if c.DedupWindow == 0 {
		c.DedupWindow = DefaultDedupWindow
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.MaxUnresolved == 0 {
		c.MaxUnresolved = DefaultMaxUnresolved
	}
	if c.MaxStreams == 0 {
		c.MaxStreams = api.DefaultMaxStreams
	}
	if c.StoreCommitInterval == 0 {
		c.StoreCommitInterval = DefaultStoreCommitInterval
	}
	if c.IntakeWAL == "" {
		c.IntakeWAL = IntakeParallel
	}
	if c.IntakeWALSegmentBytes == 0 {
		c.IntakeWALSegmentBytes = wal.DefaultSegmentBytes
	}
	if c.Forward == "" {
		c.Forward = ForwardStream
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.PeerTLSMode == "" {
		c.PeerTLSMode = PeerTLSOff
		if c.PeerTLSCertFile != "" {
			c.PeerTLSMode = PeerTLSOn
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

var trailingDigits = regexp.MustCompile(`([0-9]+)$`)

// legacyNodeNumber is the txid node number that versions without node.number
// gave a node by default: the trailing digits of id, or else id's 1-based
// position among the sorted cluster IDs, or else 0 (none). It only serves to
// find the number of a data directory such a version made.
func legacyNodeNumber(id string, cluster []Peer) int {
	if m := trailingDigits.FindString(id); m != "" {
		if n, err := strconv.Atoi(m); err == nil && n <= txid.MaxNode {
			return n
		}
	}
	ids := make([]string, 0, len(cluster))
	for _, p := range cluster {
		ids = append(ids, p.ID)
	}
	sort.Strings(ids)
	for i, v := range ids {
		if v == id {
			return i + 1
		}
	}
	return 0
}

// Validate reports every problem with c, each naming the field and the bound.
func (c Config) Validate() error {
	var errs []error
	ac := c.Alert
	ac.Node = "-"
	if err := ac.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.ID == "" {
		errs = append(errs, errors.New("id: required"))
	} else if strings.ContainsAny(c.ID, ",= \t\n") || len(c.ID) > 64 {
		errs = append(errs, fmt.Errorf("id %q: at most 64 characters, no spaces, commas or '='", c.ID))
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		errs = append(errs, fmt.Errorf("http-addr %q: %w", c.HTTPAddr, err))
	}
	if _, _, err := net.SplitHostPort(c.RaftAddr); err != nil {
		errs = append(errs, fmt.Errorf("raft-addr %q: %w", c.RaftAddr, err))
	}
	if c.DebugAddr != "" {
		if _, _, err := net.SplitHostPort(c.DebugAddr); err != nil {
			errs = append(errs, fmt.Errorf("debug-addr %q: %w", c.DebugAddr, err))
		}
	}
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			errs = append(errs, fmt.Errorf("metrics-addr %q: %w", c.MetricsAddr, err))
		}
	}
	if len(c.Cluster) > 0 && c.Join != "" {
		errs = append(errs, errors.New("cluster and join: give one, not both"))
	}
	if len(c.Cluster) > 0 {
		found := false
		seen := map[string]bool{}
		numbered := map[int]string{}
		for _, p := range c.Cluster {
			if seen[p.ID] {
				errs = append(errs, fmt.Errorf("cluster: id %q listed twice", p.ID))
			}
			seen[p.ID] = true
			if p.NodeNumber != 0 {
				if p.NodeNumber < 1 || p.NodeNumber > txid.MaxNode {
					errs = append(errs, fmt.Errorf("cluster: %s: node number %d: want 1..%d", p.ID, p.NodeNumber, txid.MaxNode))
				} else if other, ok := numbered[p.NodeNumber]; ok {
					errs = append(errs, fmt.Errorf("cluster: node number %d given to both %s and %s: each member needs its own", p.NodeNumber, other, p.ID))
				}
				numbered[p.NodeNumber] = p.ID
			}
			if p.ID == c.ID {
				found = true
				if p.RaftAddr != c.RaftAddr {
					errs = append(errs, fmt.Errorf("cluster: %s=%s does not match raft-addr %s", p.ID, p.RaftAddr, c.RaftAddr))
				}
				if p.NodeNumber != 0 && c.NodeNumber != 0 && p.NodeNumber != c.NodeNumber {
					errs = append(errs, fmt.Errorf("cluster: %s has node number %d, node-number says %d", p.ID, p.NodeNumber, c.NodeNumber))
				}
			}
		}
		if !found {
			errs = append(errs, fmt.Errorf("cluster: does not list this node's id %q", c.ID))
		}
	}
	if c.Join != "" {
		if u, err := url.Parse(c.Join); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("join %q: want an http:// or https:// base URL", c.Join))
		}
	}
	if c.RedisAddr != "" {
		if _, _, err := net.SplitHostPort(c.RedisAddr); err != nil {
			errs = append(errs, fmt.Errorf("redis-addr %q: %w", c.RedisAddr, err))
		}
	}
	switch c.RaftLog {
	case "", "boltdb", "wal":
	default:
		errs = append(errs, fmt.Errorf("raft-log %q: want boltdb or wal", c.RaftLog))
	}
	switch c.Forward {
	case ForwardStream, ForwardHTTP:
	default:
		errs = append(errs, fmt.Errorf("forward %q: want stream or http", c.Forward))
	}
	switch c.IntakeWAL {
	case IntakeParallel, IntakeSync, IntakeOff:
	default:
		errs = append(errs, fmt.Errorf("intake-wal %q: want parallel, sync or off", c.IntakeWAL))
	}
	if least := c.MaxBodyBytes + intakeRecordSlack; c.IntakeWALSegmentBytes < least {
		errs = append(errs, fmt.Errorf("intake-wal-segment-bytes %d: at least max-body-bytes + %d (%d), so that any transaction fits a segment",
			c.IntakeWALSegmentBytes, intakeRecordSlack, least))
	}
	if c.StoreKVFlushRecords < 0 {
		errs = append(errs, fmt.Errorf("store-kv-flush-records %d: must not be negative", c.StoreKVFlushRecords))
	}
	if c.MaxUnresolved < 1 {
		errs = append(errs, fmt.Errorf("max-unresolved %d: at least 1", c.MaxUnresolved))
	}
	if c.MaxStreams < 1 {
		errs = append(errs, fmt.Errorf("max-streams %d: at least 1", c.MaxStreams))
	}
	if c.ClientStreamInflight < 0 {
		errs = append(errs, fmt.Errorf("client-stream-inflight %d: must not be negative", c.ClientStreamInflight))
	}
	if c.NodeNumber < 0 || c.NodeNumber > txid.MaxNode {
		errs = append(errs, fmt.Errorf("node-number %d: want 1..%d, or 0 to have the cluster assign one", c.NodeNumber, txid.MaxNode))
	}
	if c.WebhookHorizon != 0 && c.WebhookHorizon < time.Hour {
		errs = append(errs, fmt.Errorf("webhook-horizon %s: at least 1h", c.WebhookHorizon))
	}
	if c.DedupWindow < time.Minute {
		errs = append(errs, fmt.Errorf("dedup-window %s: at least 1m", c.DedupWindow))
	}
	if c.MaxBodyBytes < 1024 {
		errs = append(errs, fmt.Errorf("max-body-bytes %d: at least 1024", c.MaxBodyBytes))
	}
	if c.ShutdownTimeout < 0 {
		errs = append(errs, fmt.Errorf("shutdown-timeout %s: must not be negative", c.ShutdownTimeout))
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.validateSecurity()...)
	return errors.Join(errs...)
}

// validateSecurity checks the TLS and auth settings.
func (c Config) validateSecurity() []error {
	var errs []error
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		errs = append(errs, errors.New("tls-cert-file and tls-key-file: give both or neither"))
	}
	if c.TLSClientCAFile != "" && c.TLSCertFile == "" {
		errs = append(errs, errors.New("tls-client-ca-file: needs tls-cert-file and tls-key-file"))
	}
	peerFiles := 0
	for _, f := range []string{c.PeerTLSCertFile, c.PeerTLSKeyFile, c.PeerTLSCAFile} {
		if f != "" {
			peerFiles++
		}
	}
	if peerFiles != 0 && peerFiles != 3 {
		errs = append(errs, errors.New("peer-tls-cert-file, peer-tls-key-file and peer-tls-ca-file: give all three or none"))
	}
	switch c.PeerTLSMode {
	case "", PeerTLSOff:
		if peerFiles == 3 {
			errs = append(errs, errors.New("peer-tls-mode off: not with peer-tls-cert-file (give tls or both)"))
		}
	case PeerTLSOn, PeerTLSBoth:
		if peerFiles != 3 {
			errs = append(errs, fmt.Errorf("peer-tls-mode %s: needs peer-tls-cert-file, peer-tls-key-file and peer-tls-ca-file", c.PeerTLSMode))
		}
	default:
		errs = append(errs, fmt.Errorf("peer-tls-mode %q: want tls or both", c.PeerTLSMode))
	}
	if len(c.PeerCertAllowedCN) > 0 && peerFiles != 3 {
		errs = append(errs, errors.New("peer-cert-allowed-cn: needs peer TLS (peer-tls-cert-file, peer-tls-key-file, peer-tls-ca-file)"))
	}
	if (c.MetricsOpen || c.UIOpen) && c.AuthFile == "" {
		errs = append(errs, errors.New("metrics-open and ui-open: only with auth-file (without it everything is open)"))
	}
	for _, o := range c.AllowedOrigins {
		if o == "*" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
			errs = append(errs, fmt.Errorf("allowed-origins: %q: want scheme://host[:port] or *", o))
		}
	}
	for _, h := range c.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/ @") {
			errs = append(errs, fmt.Errorf("allowed-hosts: %q: want a host name, host:port or *", h))
		}
	}
	if c.JoinTokenFile != "" && c.Join == "" {
		errs = append(errs, errors.New("join-token-file: only with join"))
	}
	if c.JoinCAFile != "" && c.Join == "" {
		errs = append(errs, errors.New("join-ca-file: only with join"))
	}
	return errs
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// Level returns the configured log level (info when unset or invalid).
func (c Config) Level() slog.Level {
	l, err := parseLevel(c.LogLevel)
	if err != nil {
		return slog.LevelInfo
	}
	return l
}

// ParseConfig reads a node's configuration from command-line args (without the
// program name) and from environment variables: each flag --foo-bar may also be
// given as TXLOG_FOO_BAR; a flag on the command line wins. lookup is usually
// os.LookupEnv; tests pass their own. The result is validated, with defaults filled.
func ParseConfig(args []string, lookup func(string) (string, bool)) (Config, error) {
	var c Config
	var cluster, raftDial string
	fs := flag.NewFlagSet("txlogd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.ID, "id", "", "node id (required)")
	fs.StringVar(&c.DataDir, "data-dir", "", "data directory (default data/<id>)")
	fs.StringVar(&c.HTTPAddr, "http-addr", DefaultHTTPAddr, "HTTP listen address (port 0: pick one)")
	fs.StringVar(&c.AdvertiseHTTPAddr, "advertise-http-addr", "", "HTTP address other nodes use (default: the bound address)")
	fs.StringVar(&c.RaftAddr, "raft-addr", DefaultRaftAddr, "peer address: the peer link (Raft, propose streams, node-to-node requests) listens on it and Raft advertises it")
	fs.StringVar(&c.DebugAddr, "debug-addr", "", "serve net/http/pprof on this separate, unauthenticated listener; never expose it publicly (port 0: pick one; empty: off)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "also serve GET /metrics on this separate listener (port 0: pick one; empty: only on the HTTP listener)")
	fs.StringVar(&cluster, "cluster", "", "static bootstrap: id=raftaddr[@nodenumber],... (the same list on every initial member)")
	fs.StringVar(&raftDial, "raft-dial", "", "dial these peers at other addresses: id=host:port,... (fault-injection proxies)")
	fs.StringVar(&c.Join, "join", "", "HTTP base URL of a member to join through")
	// Losing a majority (recover.go).
	fs.BoolVar(&c.Recover, "recover", false, "after losing a majority: make this node, with its raft state, a one-node cluster that new members --join (once; the lost members must never come back with their old data: docs/operations.md)")
	fs.StringVar(&c.RedisAddr, "redis-addr", "", "Redis host:port for parking during failover (empty: WAL-only parking)")
	fs.StringVar(&c.IntakeWAL, "intake-wal", IntakeParallel, "when ack=quorum|all writes enter the intake WAL: parallel, sync or off (see docs/durability.md)")
	fs.Int64Var(&c.IntakeWALSegmentBytes, "intake-wal-segment-bytes", wal.DefaultSegmentBytes, "size of the intake WAL's segment files; at least max-body-bytes + 1024")
	fs.StringVar(&c.Forward, "forward", ForwardStream, "how a follower sends accepted writes to the leader: stream (one persistent connection) or http (a POST per group)")
	fs.IntVar(&c.MaxUnresolved, "max-unresolved", DefaultMaxUnresolved, "accepted, unresolved transactions this node holds before it answers 503 overloaded")
	fs.StringVar(&c.RaftLog, "raft-log", "", "raft log store: wal (hashicorp/raft-wal) or boltdb (raft-boltdb); default: the data dir's kind, wal for a new one")
	fs.BoolFunc("http-fast-path", "serve POST /v1/tx and /v1/tx/batch on keep-alive connections without net/http's server (default true; false: every request through net/http)", func(v string) error {
		on, err := strconv.ParseBool(v)
		c.NoHTTPFastPath = !on
		return err
	})
	fs.BoolFunc("metrics", "keep a metrics registry and serve GET /metrics (default true; false: no metrics at all, for the A/B of their cost)", func(v string) error {
		on, err := strconv.ParseBool(v)
		c.NoMetrics = !on
		return err
	})
	fs.BoolVar(&c.RaftSerialAppend, "raft-serial-append", false, "the raft leader writes new entries to its log before sending them to followers (hashicorp/raft's order), instead of in parallel")
	fs.DurationVar(&c.StoreCommitInterval, "store-commit-interval", DefaultStoreCommitInterval, "how long the state machine keeps applied entries before one commit of them all, made durable in the background (0: a commit per applied batch)")
	fs.IntVar(&c.NodeNumber, "node-number", 0, "txid node number 1..1023, unique in the cluster (default: the cluster assigns one; a data dir keeps its number)")
	fs.Func("webhook-allow", "hosts and ports a transaction's notify url may name: comma-separated host or host:port patterns (e.g. hooks.example.com,10.0.0.5:8080,[fd00::5]:9000); no port: the scheme's default (80, 443); * in a name matches within one label (*.example.com), as a port any port; an IP address has no wildcard; loopback, link-local and private addresses are reached only through a pattern that names the IP; empty: notify is refused", func(v string) error {
		l, err := notify.ParseAllowList(v)
		c.WebhookAllow = l
		return err
	})
	fs.BoolVar(&c.WebhookAllowPrivate, "webhook-allow-private", false, "a notify url's host name that --webhook-allow matches may resolve to a private address (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7); never to a loopback or link-local one")
	fs.StringVar(&c.WebhookSecret, "webhook-secret", "", "HMAC-SHA256 key of the X-Txlog-Signature header of each callback")
	fs.DurationVar(&c.WebhookHorizon, "webhook-horizon", notify.DefaultHorizon, "how long a callback is retried after its transaction is decided before it is dropped (at least 1h)")
	fs.DurationVar(&c.WebhookMinBackoff, "webhook-min-backoff", notify.DefaultMinBackoff, "first backoff between attempts at a callback")
	fs.DurationVar(&c.WebhookMaxBackoff, "webhook-max-backoff", notify.DefaultMaxBackoff, "cap of the backoff between attempts at a callback")
	fs.DurationVar(&c.DedupWindow, "dedup-window", DefaultDedupWindow, "how long txids and idempotency keys are remembered")
	fs.IntVar(&c.StoreKVFlushRecords, "store-kv-flush-records", 0, "log records after which the store flushes its kv overlay (0: the store's default, 65536)")
	fs.Func("log-retention", "drop log records beyond N entries (Raft indexes) below the applied index, older than a duration before the newest leader time, or either: N, DURATION or N,DURATION, e.g. 1000000,24h; live keys keep their values, and records a dedup record may point at stay (default off: keep everything)", func(s string) error {
		r, err := store.ParseRetention(s)
		c.LogRetention.Entries, c.LogRetention.Age = r.Entries, r.Age
		return err
	})
	fs.BoolVar(&c.LogRetention.RespectConsumers, "retention-respects-consumers", false, "log retention keeps every record at or after the lowest committed offset of the consumer groups")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", DefaultMaxBodyBytes, "largest accepted request body")
	fs.IntVar(&c.MaxStreams, "max-streams", api.DefaultMaxStreams, "log streams (GET /v1/log/stream) and waiting reads (?wait=) served at once; past it: 503 too_many_streams")
	fs.IntVar(&c.ClientStreamInflight, "client-stream-inflight", api.DefaultClientStreamInflight, "requests in flight on one client stream (GET /v1/tx/stream); past it: 429 stream_full")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", DefaultShutdownTimeout, "bound on each graceful-shutdown step")
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", "", "client port's TLS certificate (PEM); with tls-key-file the HTTP API serves TLS 1.2+ alone; re-read when it changes and on SIGHUP")
	fs.StringVar(&c.TLSKeyFile, "tls-key-file", "", "client port's TLS key (PEM)")
	fs.StringVar(&c.TLSClientCAFile, "tls-client-ca-file", "", "CA bundle of client certificates: with it every client must present one it signed (mutual TLS)")
	fs.StringVar(&c.PeerTLSCertFile, "peer-tls-cert-file", "", "peer link's certificate (PEM): mutual TLS between nodes, with peer-tls-key-file and peer-tls-ca-file")
	fs.StringVar(&c.PeerTLSKeyFile, "peer-tls-key-file", "", "peer link's key (PEM)")
	fs.StringVar(&c.PeerTLSCAFile, "peer-tls-ca-file", "", "CA bundle that signs every peer's certificate")
	fs.Func("peer-cert-allowed-cn", "the only common names a peer's certificate may carry, comma-separated (default: any the CA signed)", func(v string) error {
		c.PeerCertAllowedCN = splitList(v)
		return nil
	})
	fs.StringVar(&c.PeerTLSMode, "peer-tls-mode", "", "tls (accept and dial TLS alone; the default with peer certificates) or both (accept plain and TLS, dial TLS first: for the rolling move from plain to TLS)")
	fs.StringVar(&c.PeerSecretFile, "peer-secret-file", "", "file of the shared secret that authenticates peers (first line sent, any line accepted); re-read when it changes")
	fs.StringVar(&c.AuthFile, "auth-file", "", "credentials of the HTTP API, one a line (sha256:<hex> or cert:<CN>, role, name, prefix=...): every route but /healthz and /readyz needs one; re-read when it changes")
	fs.BoolVar(&c.MetricsOpen, "metrics-open", false, "with auth-file, serve /metrics without a credential")
	fs.BoolVar(&c.UIOpen, "ui-open", false, "with auth-file, serve the dashboard (/ui/) without a credential")
	fs.Func("allowed-origins", "origins (scheme://host[:port]) a browser's request may come from besides the node's own, comma-separated; * for any", func(v string) error {
		c.AllowedOrigins = splitList(v)
		return nil
	})
	fs.Func("allowed-hosts", "host names the Host header may carry besides an IP address, localhost and the advertised host, comma-separated; * for any", func(v string) error {
		c.AllowedHosts = splitList(v)
		return nil
	})
	fs.StringVar(&c.JoinTokenFile, "join-token-file", "", "file holding the admin token --join presents")
	fs.StringVar(&c.JoinCAFile, "join-ca-file", "", "CA bundle that verifies the HTTPS certificate of the member --join names (default: peer-tls-ca-file, else the system's)")
	// Backup and restore (restore.go).
	fs.StringVar(&c.Restore, "restore", "", "seed a new one-node cluster from this backup file (txlog backup): the data dir must be empty; leave out --cluster and --join, and start again without it")
	fs.StringVar(&c.BackupDir, "backup-dir", "", "write a verified backup of this node's state into this directory every --backup-interval (empty: off)")
	fs.DurationVar(&c.BackupInterval, "backup-interval", DefaultBackupInterval, "how often --backup-dir gets a backup")
	fs.IntVar(&c.BackupKeep, "backup-keep", DefaultBackupKeep, "how many of its backups this node keeps in --backup-dir; older ones are removed")

	var helpTesting bool
	alert.RegisterFlags(fs, &c.Alert)
	fs.BoolVar(&helpTesting, "help-testing", false, "list the flags for tests and A/B measurements (not for production)")

	if err := fs.Parse(args); err != nil {
		return Config{}, fmt.Errorf("parse flags: %w\n%s", err, usage(fs))
	}
	if helpTesting {
		return Config{}, fmt.Errorf("parse flags: %w\n%s", flag.ErrHelp, testingUsage(fs))
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected arguments %q\n%s", fs.Args(), usage(fs))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || lookup == nil || f.Name == "help-testing" {
			return
		}
		env := EnvName(f.Name)
		if v, ok := lookup(env); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", env, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	peers, err := ParseCluster(cluster)
	if err != nil {
		return Config{}, err
	}
	c.Cluster = peers
	if c.StoreCommitInterval == 0 {
		c.StoreCommitInterval = -1 // the flag's 0: a commit per applied batch
	}
	dial, err := ParseCluster(raftDial)
	if err != nil {
		return Config{}, fmt.Errorf("raft-dial: %w", err)
	}
	for _, p := range dial {
		if p.NodeNumber != 0 {
			return Config{}, fmt.Errorf("raft-dial %q: want id=host:port entries, without @", raftDial)
		}
		if c.RaftDial == nil {
			c.RaftDial = map[string]string{}
		}
		c.RaftDial[p.ID] = p.RaftAddr
	}
	c = c.withDefaults()
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// EnvName returns the environment variable for a flag name: http-addr → TXLOG_HTTP_ADDR.
func EnvName(flagName string) string {
	return "TXLOG_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// ParseCluster parses "n1=127.0.0.1:7101,n2=127.0.0.1:7102"; an entry may give
// the member's txid node number after an @: "n1=127.0.0.1:7101@5".
func ParseCluster(s string) ([]Peer, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var peers []Peer
	for _, part := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("cluster %q: entry %q: want id=host:port", s, part)
		}
		p := Peer{ID: id, RaftAddr: addr}
		if a, num, ok := strings.Cut(addr, "@"); ok {
			v, err := strconv.Atoi(num)
			if err != nil || v < 1 || v > txid.MaxNode {
				return nil, fmt.Errorf("cluster %q: entry %q: node number %q: want 1..%d", s, part, num, txid.MaxNode)
			}
			p.RaftAddr, p.NodeNumber = a, v
		}
		if _, _, err := net.SplitHostPort(p.RaftAddr); err != nil {
			return nil, fmt.Errorf("cluster %q: entry %q: %w", s, part, err)
		}
		peers = append(peers, p)
	}
	return peers, nil
}

// testingFlags are the flags that tests and A/B measurements use and an
// operator does not: ParseConfig accepts them (and their TXLOG_* variables) like
// any other, but `txlogd -h` does not list them; `txlogd -help-testing` does.
//   - raft-dial: chaos's fault-injection proxies sit between the nodes.
//   - raft-serial-append: hashicorp/raft's own append order, for the A/B of the
//     parallel leader append and the test that mixes both orders.
//   - http-fast-path: false serves everything through net/http, for the A/B of
//     the fast path and as a way around it should it misbehave.
//   - webhook-min-backoff, webhook-max-backoff: a short backoff, so that a
//     test of a failing callback receiver sees the retries in seconds.
//   - forward: http forwards with one POST per group instead of the propose
//     stream, for the A/B and the test that runs both.
//   - metrics: false runs without metrics, for the A/B of their cost.
var testingFlags = map[string]bool{
	"metrics":                true,
	"raft-dial":              true,
	"raft-serial-append":     true,
	"http-fast-path":         true,
	"forward":                true,
	"store-kv-flush-records": true,
	"webhook-min-backoff":    true,
	"webhook-max-backoff":    true,
}

// usage lists the flags an operator sets, all but testingFlags, under the
// headings of flagGroups (usage.go).
func usage(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString("usage: txlogd --id ID [flags]\n")
	printGroups(&b, fs, func(name string) bool { return !testingFlags[name] })
	b.WriteString("\nevery flag may also be set as TXLOG_<FLAG> (e.g. TXLOG_HTTP_ADDR)\n")
	return b.String()
}

// testingUsage lists testingFlags alone, under a heading that says what they are.
func testingUsage(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString("testing only — not for production: flags for tests and A/B measurements\n")
	printDefaults(&b, fs, func(name string) bool { return testingFlags[name] })
	b.WriteString("each may also be set as TXLOG_<FLAG> (e.g. TXLOG_RAFT_DIAL)\n")
	return b.String()
}

// printDefaults writes flag.PrintDefaults's listing of the flags of fs that keep
// says to keep, with their defaults as registered.
func printDefaults(w io.Writer, fs *flag.FlagSet, keep func(name string) bool) {
	sub := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	fs.VisitAll(func(f *flag.Flag) {
		if keep(f.Name) {
			sub.Var(f.Value, f.Name, f.Usage)
			sub.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	sub.SetOutput(w)
	sub.PrintDefaults()
}
