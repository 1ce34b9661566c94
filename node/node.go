package node

import (
	"context"
	"errors"
	"fmt"
	"github.com/txlog/txlog/auth"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/txlog/txlog/alert"
	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/fastpath"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/dirsync"
	"github.com/txlog/txlog/node/parking"
	"github.com/txlog/txlog/node/peer"
	"github.com/txlog/txlog/peerlink"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/tlsfiles"
	"github.com/txlog/txlog/wal"
)

// Node is one running txlog node. It opens, runs and closes the parts it is
// made of, and answers the API by handing each call to the part that does it.
// The writes and cluster calls of api.Backend are Node's (backend.go); the
// reads, api.LeaseBackend and api.ConsumerBackend come from the parts it
// embeds:
//
//   - writes (write.go): the write path, SubmitBatch, with the intake
//     (intake.go) of accepted, unresolved transactions and its WAL; a pending
//     command's state is in state.go.
//   - props (propose.go): proposals, here when this node leads, else through
//     the leader (forward.go, node/peer); acks (ackall.go): ack=all's checks.
//   - replay (replay.go): the parked transactions, and Redis's.
//   - lookups (lookup.go, embedded): Tx, TxByIdempotencyKey, Get, Log and
//     api.LogFollower.
//   - leases (lease.go, embedded): api.LeaseBackend; consumers (consumer.go,
//     embedded): api.ConsumerBackend.
//   - cbs (notify.go): the callback deliverer, on the leader.
//   - peers (peers.go): the node registry, peer URLs and HTTP clients.
//   - mem (number.go, register.go): the txid node number, registration, join;
//     rm (removed.go): removal.
//   - side (debug.go): the debug and metrics listeners; dash (dashboard.go),
//     alerts and sample (alerts.go): the dashboard and the alert rules.
type Node struct {
	cfg  Config
	log  *slog.Logger
	db   *store.DB
	raft *replication.Raft
	api  *api.Server
	link *peerlink.Link // the peer link on the Raft address (link.go)

	// peerSec is the link's TLS material and secrets (peertls.go); nil: none.
	peerSec *peerSecurity

	ln net.Listener
	// peerSrv serves the internal router on the peer link (KindHTTP);
	// streamSrv the propose streams (KindStream). link.go.
	peerSrv   *http.Server
	streamSrv *peer.StreamServer
	fast      *fastpath.FastListener // nil with Config.NoHTTPFastPath
	clientTLS *tlsfiles.Files        // nil without Config.TLSCertFile (clienttls.go)
	authFile  *auth.File             // nil without Config.AuthFile (auth.go)
	joinCfg   client.ClientConfig    // the --join client's settings (joinclient.go)
	srv       *http.Server
	httpAddr  string      // advertised HTTP address, host:port
	side      sideServers // debug.go

	peers  *peers
	intake *intake
	park   parker // nil without --redis-addr
	// refused is set when replication refused to start Raft because its
	// directory holds less than the store applied (refused.go); raft is nil
	// then, and the node serves only refusals.
	refused *replication.AmnesiaError

	met    *nodeMetrics // metrics.go
	writes *writer
	props  *proposer
	checks *frameChecker // the leader's checks of forwarded frames
	acks   *ackAll
	replay *replayer
	*lookups
	*leases
	*consumers
	cbs    *callbacks
	mem    *membership
	ident  *identity // the cluster ID (identity.go)
	rm     *removal
	dash   *dashboard     // GET /ui/, /v1/stats, /v1/events (dashboard.go)
	alerts *alert.Manager // nil on a node that does not run Raft (alerts.go)
	sample *alertSampler

	// life ends when Close begins: the background loops stop, and the
	// proposals they make (registration, replay, drain) give up at once
	// instead of running out their own timeouts.
	life      context.Context
	endLife   context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Open opens a node's parts in order: the data directory, the txid generator, the
// store, Raft and the HTTP listener. It does not serve yet; call Run.
// A node with an empty data directory and --cluster peers first waits for
// them (identity.go), until they all answer or ctx ends.
func Open(ctx context.Context, cfg Config) (*Node, error) { return open(ctx, cfg, dirsync.Sync) }

// open is Open with the directory fsync as a parameter, which tests record
// (dirsync_test.go).
//
// The data directory's entries. Each part makes the names it creates durable
// in their directory (the store: state.db, state.db.meta; replication:
// raft/ and everything under it; wal: wal/; txid: txid.hwm). Open makes the
// data directory's own name durable in its parent when it creates it, and
// fsyncs the data directory once more after every part is open, before the
// node serves anything: whatever a part created in it is then durable
// whichever part forgot to. http.addr, debug.addr and metrics.addr, written by Run, are
// informational (they tell tests and tools the bound ports) and are not
// fsynced: a node that restarts writes them again. A node that waits for its
// peers before Raft starts (awaitBootstrap, awaitJoinID) writes http.addr
// already then, as its client port answers 503 meanwhile. cluster.id,
// cluster.candidate and cluster.round are durable before Raft starts
// (identity.go).
func open(ctx context.Context, cfg Config, syncDir func(string) error) (*Node, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Node{
		cfg: cfg,
		log: cfg.Logger.With("component", "node"),
	}
	n.life, n.endLife = context.WithCancel(context.Background())
	if err := dirsync.MkdirAll(cfg.DataDir, 0o755, syncDir); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", cfg.DataDir, err)
	}
	if cfg.Restore != "" { // restore.go
		if err := restoreBackup(cfg, syncDir); err != nil {
			return nil, err
		}
	}
	ok := false
	defer func() {
		if !ok {
			n.closeParts()
		}
	}()

	var err error
	n.db, err = openStore(cfg)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	n.mem = &membership{cfg: cfg, log: n.log, db: n.db, life: n.life}
	if err := n.mem.openNumber(); err != nil { // the txid generator, once the number is known (number.go)
		return nil, err
	}
	w, err := wal.Open(filepath.Join(cfg.DataDir, "wal"), wal.Config{SegmentBytes: cfg.IntakeWALSegmentBytes, Logger: cfg.Logger, Metrics: cfg.Metrics})
	if err != nil {
		return nil, fmt.Errorf("open intake wal: %w", err)
	}
	n.intake = newIntake(w)
	if count, err := n.intake.recover(); err != nil {
		return nil, err
	} else if count > 0 {
		n.log.Info("intake wal has transactions to replay", "count", count)
	}
	if cfg.RedisAddr != "" {
		r, err := parking.Open(context.Background(), parking.Config{Addr: cfg.RedisAddr, Consumer: cfg.ID, Logger: cfg.Logger, Metrics: cfg.Metrics})
		if err != nil {
			return nil, fmt.Errorf("open redis parking: %w", err)
		}
		n.park = r
	}
	var bootstrap []replication.Server
	for _, p := range cfg.Cluster {
		bootstrap = append(bootstrap, replication.Server{ID: p.ID, Addr: p.RaftAddr})
	}
	// The cluster ID (identity.go): a data dir with no state decides it
	// before Raft starts.
	if n.ident, err = openIdentity(cfg.ID, cfg.DataDir, n.log, syncDir); err != nil {
		return nil, err
	}
	rcfg := replication.Config{
		ID:              cfg.ID,
		Dir:             filepath.Join(cfg.DataDir, "raft"),
		BindAddr:        cfg.RaftAddr,
		Bootstrap:       bootstrap,
		Logger:          cfg.Logger,
		Metrics:         cfg.Metrics,
		AddressProvider: dialer(cfg.RaftDial),
		LogStore:        cfg.RaftLog,

		SerialLeaderAppend: cfg.RaftSerialAppend,
	}
	hadState, err := replication.HasState(rcfg)
	if err != nil {
		return nil, fmt.Errorf("open raft: %w", err)
	}
	fresh := !hadState && n.db.AppliedIndex() == 0
	n.ident.hasState.Store(!fresh)
	n.ident.joining = fresh && len(bootstrap) == 0 && cfg.Join == ""
	if fresh && len(bootstrap) > 0 {
		if err := n.ident.ensureCandidate(); err != nil { // before the link answers probes with it
			return nil, err
		}
	}
	finishRecover, err := n.beginRecover(hadState, &rcfg) // --recover (recover.go)
	if err != nil {
		return nil, err
	}
	// The peer link listens on the Raft address and carries Raft, the
	// propose streams and the node-to-node requests (link.go); it answers
	// bootstrap probes from here on, before this node asks its own peers.
	if n.link, n.peerSec, err = openLink(cfg, n.ident); err != nil {
		return nil, err
	}
	rcfg.Stream = n.link.Raft()
	n.ln, err = net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("listen http %s: %w", cfg.HTTPAddr, err)
	}
	if n.ln, err = n.listenClientTLS(n.ln); err != nil {
		return nil, err
	}
	if fresh && len(bootstrap) > 0 && n.ident.clusterID() == [16]byte{} {
		if err := n.awaitBootstrap(ctx); err != nil {
			return nil, err
		}
	}
	if cfg.Join != "" {
		if n.joinCfg, err = joinClientConfig(cfg); err != nil {
			return nil, err
		}
	}
	if fresh && cfg.Join != "" && n.ident.clusterID() == [16]byte{} {
		if err := n.awaitJoinID(ctx); err != nil {
			return nil, err
		}
	}
	n.raft, err = replication.Open(rcfg, n.db)
	err = finishRecover(err)
	if ae, ok := errors.AsType[*replication.AmnesiaError](err); ok {
		n.raft, n.refused = nil, ae
		n.log.Error("raft state lost: not starting raft; this node answers 503 raft_state_lost until it is recovered",
			append(ae.LogAttrs(), "err", ae)...)
	} else if err != nil {
		return nil, fmt.Errorf("open raft: %w", err)
	}
	if n.raft != nil && (hadState || len(bootstrap) > 0) {
		n.ident.hasState.Store(true)
		if hadState {
			if err := n.ident.deriveLegacy(n.raft); err != nil {
				return nil, err
			}
		}
	}
	// Whatever the parts created in the data dir is durable before the node
	// serves (dirsync.go).
	if err := syncDir(cfg.DataDir); err != nil {
		return nil, err
	}
	n.peers = newPeers(cfg.ID, n.db, n.raft, n.link)
	n.peers.joinCfg = n.joinCfg

	n.httpAddr = n.ln.Addr().String()
	if cfg.AdvertiseHTTPAddr != "" {
		n.httpAddr = cfg.AdvertiseHTTPAddr
	}
	n.side = sideServers{dataDir: cfg.DataDir, log: n.log, wg: &n.wg}
	if n.side.debug, err = openDebug(cfg); err != nil {
		return nil, err
	}
	if n.side.metrics, err = openMetrics(cfg, metricsHandler(cfg.Metrics)); err != nil {
		return nil, err
	}
	n.met = newNodeMetrics()
	n.wire()
	if cfg.Metrics != nil {
		if err := registerMetrics(n, cfg.Metrics); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	if n.refused == nil {
		if n.alerts, n.sample, err = newAlerts(n, cfg); err != nil { // alerts.go
			return nil, err
		}
	}
	var backend api.Backend = n
	if n.refused != nil {
		backend = newRefusedBackend(n.refused)
	}
	n.dash = newDashboard(n.raft, n.peers, n.log)
	n.dash.info = newDashInfo(n) // dashinfo.go
	if n.authFile, err = openAuth(cfg, cfg.Metrics, cfg.Logger); err != nil {
		return nil, err
	}
	n.api = api.NewServer(api.Config{
		Auth:           authenticator(n.authFile),
		Audit:          n.audit,
		MetricsOpen:    cfg.MetricsOpen,
		UIOpen:         cfg.UIOpen,
		AllowedOrigins: cfg.AllowedOrigins,
		AllowedHosts:   cfg.AllowedHosts,
		AdvertiseHost:  hostOf(n.httpAddr),
		Dashboard:      n.dash.handler(cfg.ID, n.alerts),
		MaxBodyBytes:   cfg.MaxBodyBytes,
		MaxStreams:     cfg.MaxStreams,
		// The client streams (GET /v1/tx/stream): their bound, and the idle
		// timeout of the connection they took over.
		ClientStreamInflight: cfg.ClientStreamInflight, ClientStreamIdleTimeout: httpIdleTimeout,
		NotifyAllow:    cfg.WebhookAllow,
		Logger:         cfg.Logger,
		Metrics:        cfg.Metrics,
		MetricsHandler: metricsHandler(cfg.Metrics),
	}, backend)
	n.srv = &http.Server{
		Handler:           n.api,
		ReadHeaderTimeout: httpReadHeaderTimeout,
		ReadTimeout:       httpReadTimeout,
		IdleTimeout:       httpIdleTimeout,
		MaxHeaderBytes:    httpMaxHeaderBytes,
	}
	n.srv.RegisterOnShutdown(n.api.EndLogStreams) // they never go idle
	n.serveClientTLS(n.srv)
	n.peerSrv = newPeerServer(n.api)
	n.streamSrv = peer.NewStreamServer(cfg.Logger)
	if !cfg.NoHTTPFastPath {
		n.fast = fastpath.NewFastListener(n.api, n.ln, fastpath.FastConfig{
			IdleTimeout:       n.srv.IdleTimeout,
			ReadHeaderTimeout: n.srv.ReadHeaderTimeout,
			HandshakeTimeout:  clientHandshakeTimeout,
		})
	}
	ok = true
	return n, nil
}

// awaitBootstrap waits, before Raft starts, until every --cluster peer has
// answered that a fresh bootstrap may run (identity.awaitBootstrap), and
// persists the cluster ID. Meanwhile the client port answers 503 not_ready
// with the peers not heard from (waiting.go).
func (n *Node) awaitBootstrap(ctx context.Context) error {
	if len(n.cfg.Cluster) > 1 {
		if err := writeFileAtomic(filepath.Join(n.cfg.DataDir, "http.addr"), []byte(n.ln.Addr().String()+"\n")); err != nil {
			return err
		}
		ws := serveWaiting(n.ln, n.ident.waitingFor)
		defer ws.handOff()
	}
	return n.ident.awaitBootstrap(ctx, n.cfg.Cluster, n.link.Probe)
}

// awaitJoinID takes, before Raft starts, the ID of the cluster behind --join
// from its GET /v1/cluster (any member answers it), so that this node
// presents it from its first peer link connection: the leader's Raft, which
// reaches it as soon as the join is in the configuration (as staging), is let
// in at once, not only after the join's answer. The answer must carry the
// same ID (membership.joined). It asks every probeInterval until ctx ends;
// meanwhile the client port answers 503 not_ready.
func (n *Node) awaitJoinID(ctx context.Context) error {
	if err := writeFileAtomic(filepath.Join(n.cfg.DataDir, "http.addr"), []byte(n.ln.Addr().String()+"\n")); err != nil {
		return err
	}
	why := "waiting for the cluster behind --join " + n.cfg.Join + " to answer GET /v1/cluster with its cluster id"
	ws := serveWaiting(n.ln, func() string { return why })
	defer ws.handOff()
	c := client.NewClient(n.joinCfg) // as peers.joinClient; peers opens after Raft
	started := time.Now()
	lastLog := started
	for {
		cctx, cancel := context.WithTimeout(ctx, probeTimeout)
		st, err := c.ClusterFrom(cctx, n.cfg.Join)
		cancel()
		if err == nil && st.ClusterID == "" {
			err = errors.New("no cluster_id in its answer")
		}
		if err == nil {
			id, err := parseClusterID(st.ClusterID)
			if err != nil {
				return fmt.Errorf("join via %s: GET /v1/cluster: %w", n.cfg.Join, err)
			}
			return n.ident.set(id, "GET /v1/cluster of "+n.cfg.Join)
		}
		if time.Since(lastLog) >= waitLogEvery {
			lastLog = time.Now()
			n.log.Warn("waiting for the cluster behind --join to tell its cluster id", "via", n.cfg.Join, "err", err, "waited", time.Since(started).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the cluster id of %s: %w", n.cfg.Join, context.Cause(ctx))
		case <-time.After(probeInterval):
		}
	}
}

// wire builds the parts that run on the open ones (see Node).
func (n *Node) wire() {
	cfg := n.cfg
	fwd := newForwarder(cfg, n.peers.client, n.peers.streams)
	n.props = &proposer{self: cfg.ID, dedupWindow: cfg.DedupWindow, db: n.db, raft: n.raft, peers: n.peers, log: n.log, fwd: fwd}
	n.checks = newFrameChecker(cfg, n.raft, n.db)
	n.acks = &ackAll{self: cfg.ID, raft: n.raft, peers: n.peers}
	n.writes = &writer{met: n.met, maxUnresolved: cfg.MaxUnresolved, intakeWAL: cfg.IntakeWAL, mem: n.mem, db: n.db, intake: n.intake, park: n.park, props: n.props, acks: n.acks, log: n.log, wg: &n.wg}
	n.replay = &replayer{met: n.met, raft: n.raft, mem: n.mem, intake: n.intake, park: n.park, props: n.props, log: n.log, life: n.life}
	n.lookups = &lookups{self: cfg.ID, db: n.db, raft: n.raft, intake: n.intake, peers: n.peers, mem: n.mem}
	n.leases = &leases{mem: n.mem, peers: n.peers, props: n.props, look: n.lookups, db: n.db, raft: n.raft}
	n.consumers = &consumers{look: n.lookups, db: n.db}
	n.cbs = &callbacks{cfg: cfg, log: n.log, db: n.db, raft: n.raft, life: n.life}
	n.mem.raft, n.mem.peers, n.mem.props, n.mem.httpAddr, n.mem.ident = n.raft, n.peers, n.props, n.httpAddr, n.ident
	n.rm = &removal{raft: n.raft, mem: n.mem, peers: n.peers, intake: n.intake, replay: n.replay, log: n.log, httpAddr: n.httpAddr, shutdownTimeout: cfg.ShutdownTimeout, life: n.life}
}

// The client listener's deadlines and header limit (docs/api.md, HTTP), the
// same whichever of net/http and the fast path (api/fastpath) reads a request.
const (
	// httpReadHeaderTimeout bounds a request's header: from the accept for a
	// connection's first request, from its first byte for a later one.
	httpReadHeaderTimeout = 10 * time.Second
	// httpReadTimeout bounds the reading of a whole request, header and
	// body, where no handler bounds the body itself (readBody sets
	// api.Config.BodyTimeout): the rest of a body a handler left unread,
	// which net/http reads after the answer.
	httpReadTimeout = httpReadHeaderTimeout + api.DefaultBodyTimeout
	// httpIdleTimeout bounds the wait for a keep-alive connection's next
	// request.
	httpIdleTimeout = 2 * time.Minute
	// httpMaxHeaderBytes bounds a request's header (net/http answers 431
	// past it); the API's requests have a few hundred bytes.
	httpMaxHeaderBytes = 64 << 10
)

// dialer returns the Raft address override for --raft-dial, or nil without one.
// A peer not in the map is dialled at its advertised address.
func dialer(m map[string]string) func(string) (string, error) {
	if len(m) == 0 {
		return nil
	}
	return func(id string) (string, error) {
		if addr, ok := m[id]; ok {
			return addr, nil
		}
		return "", fmt.Errorf("peer %s: not in --raft-dial, using its advertised address", id)
	}
}

// HTTPAddr returns the advertised HTTP address (host:port).
func (n *Node) HTTPAddr() string { return n.httpAddr }

// Run serves the HTTP API and runs the background loops until ctx is done, then
// shuts down gracefully: a leader hands leadership over, requests in flight
// finish, and the parts close in reverse order.
func (n *Node) Run(ctx context.Context) error {
	serveErr := make(chan error, 1)
	n.wg.Go(func() {
		var ln net.Listener = n.ln
		if n.fast != nil {
			ln = n.fast
		}
		if err := n.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			serveErr <- err
		}
	})
	n.servePeers(serveErr)
	if err := n.side.serve(); err != nil { // before http.addr: who sees that sees debug.addr too
		n.Close()
		return err
	}
	if err := writeFileAtomic(filepath.Join(n.cfg.DataDir, "http.addr"), []byte(n.ln.Addr().String()+"\n")); err != nil {
		n.Close()
		return err
	}
	n.log.Info("http listening", "addr", n.ln.Addr().String(), "raft_addr", n.cfg.RaftAddr, "data_dir", n.cfg.DataDir)
	n.wg.Go(func() { n.dash.loop(n.life) })
	if n.refused == nil {
		// The background loops of a node that runs Raft.
		n.wg.Go(n.mem.registerLoop)
		n.wg.Go(n.replay.loop)
		n.wg.Go(func() { releaseLoop(n.life, n.db, n.log) })
		if n.park != nil {
			n.wg.Go(n.replay.drainLoop)
		} else {
			n.log.Info("no redis configured: parking uses the intake wal alone")
		}
		if n.cfg.Join != "" {
			n.wg.Go(n.mem.joinLoop)
		}
		n.wg.Go(n.rm.loop)
		n.wg.Go(func() { n.checks.watch(n.life, n.raft) })
		n.wg.Go(func() {
			n.alerts.Run(n.life, n.dash.info.keep(n.sample.sample))
			n.sample.close()
		})
		n.wg.Go(n.cbs.loop)
		n.startScheduledBackups() // backup.go
	}

	var err error
	select {
	case <-ctx.Done():
		n.log.Info("shutting down", "reason", context.Cause(ctx))
	case err = <-serveErr:
		n.log.Error("http server failed", "err", err)
	case err = <-n.mem.stop:
		if errors.Is(err, wire.ErrRemoved) {
			n.log.Info("removed from the cluster; stopping")
			err = nil
		} else {
			n.log.Error("stopping", "err", err)
		}
	}
	return errors.Join(err, n.Close())
}

// Close shuts the node down: it hands leadership over if it is the leader, stops
// the HTTP server (letting requests in flight finish, up to ShutdownTimeout), and
// closes Raft, the store and the txid generator. It is safe to call twice.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.endLife()
		if n.raft != nil && n.raft.IsLeader() {
			ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ShutdownTimeout)
			start := time.Now()
			id, err := n.raft.TransferLeadership(ctx, "")
			cancel()
			if err != nil {
				n.log.Warn("leadership transfer failed", "err", err)
			} else {
				n.log.Info("leadership transferred", "leader", id, "took", time.Since(start))
			}
		}
		if n.srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ShutdownTimeout)
			fastDone := make(chan error, 1)
			if n.fast != nil {
				// Its idle connections close, and its requests finish, beside
				// net/http's; srv.Shutdown closes the listener.
				go func() { fastDone <- n.fast.Drain(ctx) }()
			} else {
				fastDone <- nil
			}
			if err := n.api.CloseTxStreams(ctx); err != nil { // hijacked: not srv's
				n.log.Warn("client streams shutdown", "err", err)
			}
			if err := n.srv.Shutdown(ctx); err != nil {
				n.log.Warn("http shutdown", "err", err)
				n.srv.Close()
			}
			if err := <-fastDone; err != nil {
				n.log.Warn("http fast path shutdown", "err", err)
			}
			n.side.shutdown(ctx)
			if err := n.peerSrv.Shutdown(ctx); err != nil {
				n.log.Warn("peer link http shutdown", "err", err)
				n.peerSrv.Close()
			}
			n.link.Listener(peerlink.KindStream).Close()
			if err := n.streamSrv.CloseStreams(ctx); err != nil {
				n.log.Warn("propose streams shutdown", "err", err)
			}
			cancel()
			n.peers.streams.Close()
		}
		n.wg.Wait()
		n.closeErr = n.closeParts()
		n.log.Info("stopped")
	})
	return n.closeErr
}

// closeParts closes what Open opened, in reverse order.
func (n *Node) closeParts() error {
	var errs []error
	if n.ln != nil {
		// srv.Shutdown closed it if Run served it; a node closed without Run
		// (or whose Open failed) still holds it.
		if err := n.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	n.closeClientTLS()
	if n.authFile != nil {
		n.authFile.Close()
	}
	if err := n.side.closeListeners(); err != nil {
		errs = append(errs, err)
	}
	if n.raft != nil {
		if err := n.raft.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close raft: %w", err))
		}
	}
	if n.link != nil {
		if err := n.link.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, fmt.Errorf("close peer link: %w", err))
		}
	}
	if err := n.peerSec.close(); err != nil {
		errs = append(errs, fmt.Errorf("close peer TLS: %w", err))
	}
	if n.db != nil {
		if err := n.db.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close store: %w", err))
		}
	}
	if n.intake != nil {
		if err := n.intake.wal.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close intake wal: %w", err))
		}
	}
	if r, ok := n.park.(interface{ Close() error }); ok && r != nil {
		if err := r.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close redis: %w", err))
		}
	}
	if n.mem != nil && n.mem.ids != nil {
		if err := n.mem.ids.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close txid generator: %w", err))
		}
	}
	return errors.Join(errs...)
}

// writeFileAtomic writes data to path through a temporary file and a rename.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}
