package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/notify"
)

// MaxIdempotencyKeyBytes is the longest idempotency key, in bytes. It is part of
// the contract, not a setting: every node and client must agree on it.
const MaxIdempotencyKeyBytes = 128

// Limits of GET /v1/log.
const (
	DefaultLogLimit = 100
	MaxLogLimit     = 1000
)

// HeaderIdempotencyKey may carry the idempotency key of POST /v1/tx instead of
// the body field idempotency_key.
const HeaderIdempotencyKey = "Idempotency-Key"

// Config holds the settings of a Server. Zero means "use the default";
// NewServer also uses the default for a negative value, so call Validate to
// catch mistakes.
type Config struct {
	// MaxBodyBytes bounds the body of every public request, in bytes. Default 1 MiB.
	MaxBodyBytes int64
	// BodyTimeout bounds how long a request's body may take to arrive once its
	// handler starts reading it; a body still incomplete then gets 408
	// request_timeout. Default 30s.
	BodyTimeout time.Duration
	// MaxInternalBodyBytes bounds the body of POST /v1/internal/propose, in bytes.
	// Default 64 MiB.
	MaxInternalBodyBytes int64
	// MaxKeyBytes bounds a key, in bytes. Default 1024.
	MaxKeyBytes int
	// MaxOpsPerTx bounds the operations of one transaction. Default 1000.
	MaxOpsPerTx int
	// MaxBatchTxs bounds the transactions of one batch and the frames of one
	// internal proposal. Default 10,000.
	MaxBatchTxs int
	// DefaultTimeout is the timeout of a write without a timeout query parameter,
	// and the time a read may take. Default 5s.
	DefaultTimeout time.Duration
	// MaxTimeout bounds the timeout and wait query parameters. Default 5 minutes.
	MaxTimeout time.Duration
	// MaxStreams bounds the requests in progress that wait for the log: the
	// streams of GET /v1/log/stream and the reads with a wait parameter
	// (GET /v1/log, GET /v1/tx/{txid}, GET /v1/tx?idempotency_key=). One
	// past it gets 503 too_many_streams (streamcap.go). Default
	// DefaultMaxStreams (1024).
	MaxStreams int
	// ClientStreamInflight bounds the requests in flight on one client
	// stream (txstream.go); one past it is answered 429 stream_full.
	// Default DefaultClientStreamInflight (1024).
	ClientStreamInflight int
	// ClientStreamIdleTimeout closes a client stream that sends no message
	// for that long while none of its requests is in flight. Default 0: never.
	ClientStreamIdleTimeout time.Duration
	// Dashboard serves GET /ui/ (and the files under it), /v1/stats,
	// /v1/stats/members and /v1/events (package ui's Handler). Default:
	// none, and those answer 404.
	Dashboard http.Handler
	// NotifyAllow is the --webhook-allow list: the hosts a transaction's
	// notify url may name. Default: none, and a transaction with notify gets
	// 400 notify_not_allowed.
	NotifyAllow *notify.AllowList
	// Logger receives one Debug record per request and a Warn record per
	// internal error. Default: discard.
	Logger *slog.Logger
	// Metrics is the registry of the request metrics (metrics.go:
	// txlog_http_requests_total, txlog_http_request_duration_seconds).
	// Default nil: none. NewServer panics if they are registered already.
	Metrics prometheus.Registerer
	// MetricsHandler serves GET /metrics (promhttp's handler of the node's
	// registry). Default nil: that path answers 404.
	MetricsHandler http.Handler

	// Auth authenticates every request of the client port (auth.go); nil:
	// auth is off and every request may do everything, as without
	// --auth-file. Requests over the peer link (PeerHandler) are never asked.
	Auth Authenticator
	// MetricsOpen and UIOpen let /metrics (the dashboard's /ui/ page and
	// files) answer without a credential when Auth is set.
	MetricsOpen, UIOpen bool
	// AllowedOrigins are the origins (scheme://host[:port]) a request with
	// an Origin header may come from besides the node's own; "*": any.
	AllowedOrigins []string
	// AllowedHosts are the names the Host header may carry besides an IP
	// address, "localhost" and AdvertiseHost; "*": any.
	AllowedHosts []string
	// AdvertiseHost is the host of the node's advertised HTTP address.
	AdvertiseHost string
	// Audit, when set, receives one record per admin action (membership,
	// leadership transfer) after it was answered, with the credential that
	// asked. It must not block: the node writes the record to the log in
	// the background.
	Audit func(rec wire.AuditRecord)

	// logHeartbeat is the heartbeat of GET /v1/log/stream, for tests.
	// Default DefaultLogHeartbeat.
	logHeartbeat time.Duration
}

// Defaults of Config.
const (
	DefaultMaxBodyBytes         = 1 << 20
	DefaultBodyTimeout          = 30 * time.Second
	DefaultMaxInternalBodyBytes = 64 << 20
	DefaultMaxKeyBytes          = 1024
	DefaultMaxOpsPerTx          = 1000
	DefaultMaxBatchTxs          = 10000
	DefaultMaxTimeout           = 5 * time.Minute
)

// Validate reports every negative or inconsistent field of c.
func (c Config) Validate() error {
	var errs []error
	neg := func(name string, v int64) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s: %d, want >= 0", name, v))
		}
	}
	neg("MaxBodyBytes", c.MaxBodyBytes)
	neg("BodyTimeout", int64(c.BodyTimeout))
	neg("MaxInternalBodyBytes", c.MaxInternalBodyBytes)
	neg("MaxKeyBytes", int64(c.MaxKeyBytes))
	neg("MaxOpsPerTx", int64(c.MaxOpsPerTx))
	neg("MaxBatchTxs", int64(c.MaxBatchTxs))
	neg("DefaultTimeout", int64(c.DefaultTimeout))
	neg("MaxTimeout", int64(c.MaxTimeout))
	neg("MaxStreams", int64(c.MaxStreams))
	neg("ClientStreamInflight", int64(c.ClientStreamInflight))
	neg("ClientStreamIdleTimeout", int64(c.ClientStreamIdleTimeout))
	d := c.withDefaults()
	if d.DefaultTimeout > d.MaxTimeout {
		errs = append(errs, fmt.Errorf("DefaultTimeout: %s, want <= MaxTimeout %s", d.DefaultTimeout, d.MaxTimeout))
	}
	return errors.Join(errs...)
}

// withDefaults returns a copy of c with every unset field at its default.
func (c Config) withDefaults() Config {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = DefaultBodyTimeout
	}
	if c.MaxInternalBodyBytes <= 0 {
		c.MaxInternalBodyBytes = DefaultMaxInternalBodyBytes
	}
	if c.MaxKeyBytes <= 0 {
		c.MaxKeyBytes = DefaultMaxKeyBytes
	}
	if c.MaxOpsPerTx <= 0 {
		c.MaxOpsPerTx = DefaultMaxOpsPerTx
	}
	if c.MaxBatchTxs <= 0 {
		c.MaxBatchTxs = DefaultMaxBatchTxs
	}
	if c.DefaultTimeout <= 0 {
		c.DefaultTimeout = wire.DefaultTimeout
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = DefaultMaxTimeout
	}
	if c.MaxStreams <= 0 {
		c.MaxStreams = DefaultMaxStreams
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.logHeartbeat <= 0 {
		c.logHeartbeat = DefaultLogHeartbeat
	}
	return c
}

// Server serves the HTTP API over a Backend. It is an http.Handler and safe for
// concurrent use. Its handlers live on small types, one per feature, that it
// builds and whose routes it declares (routes): txHandlers (writes, lookups,
// reads of keys, internal proposals and streams), logHandlers, leaseHandlers,
// consumerHandlers and clusterHandlers, all answering through one answers.
type Server struct {
	*answers
	router *mux.Router
	// peerRouter is router with the internal routes: served on the peer
	// link only (PeerHandler).
	peerRouter *mux.Router
	met        *httpMetrics // nil without Config.Metrics
	// submitH and batchH are the handlers of POST /v1/tx and /v1/tx/batch, as
	// the router runs them (FastHandler).
	submitH, batchH http.Handler

	tx        *txHandlers
	logs      *logHandlers
	leases    *leaseHandlers
	consumers *consumerHandlers
	cluster   *clusterHandlers
	txs       *txStreams // the client streams (txstream.go); set by routes
}

var _ http.Handler = (*Server)(nil)

// answers is what every handler answers with: the Config, the limits of a
// body, the logger, and the JSON and error answers. Each handler type embeds
// it.
type answers struct {
	cfg Config // with defaults filled in
	lim limits
	log *slog.Logger
	// unreadable is txlog_unreadable_records_total (unreadable.go);
	// registered with Config.Metrics, if set.
	unreadable prometheus.Counter
	// streams counts the streams and waiting reads (Config.MaxStreams).
	streams *streamSlots
}

// NewServer returns a Server that answers with b. It fills in the defaults of
// cfg on its own copy.
func NewServer(cfg Config, b Backend) *Server {
	cfg = cfg.withDefaults()
	a := &answers{
		cfg:        cfg,
		lim:        limits{maxKeyBytes: cfg.MaxKeyBytes, maxOps: cfg.MaxOpsPerTx, maxTxs: cfg.MaxBatchTxs, notify: cfg.NotifyAllow},
		log:        cfg.Logger.With("component", "api"),
		unreadable: newUnreadableCounter(),
		streams:    &streamSlots{max: int64(cfg.MaxStreams)},
	}
	s := &Server{answers: a}
	if cfg.Metrics != nil {
		s.met = newHTTPMetrics(cfg.Metrics)
		cfg.Metrics.MustRegister(a.unreadable)
		a.streams.register(cfg.Metrics)
	}
	s.tx = &txHandlers{answers: a, b: b}
	s.logs = newLogHandlers(a, b)
	s.leases = &leaseHandlers{answers: a}
	s.leases.lb, _ = b.(LeaseBackend)
	s.consumers = &consumerHandlers{answers: a, tx: s.tx}
	s.consumers.cb, _ = b.(ConsumerBackend)
	s.cluster = &clusterHandlers{answers: a, b: b}
	openAPIJSON() // converted once, at start; an error is the route's answer
	s.router = s.routes(false)
	s.peerRouter = s.routes(true)
	s.submitH = s.met.instrument("/v1/tx", s.guard(accessWrite, http.HandlerFunc(s.tx.handleSubmit)))
	s.batchH = s.met.instrument("/v1/tx/batch", s.guard(accessWrite, http.HandlerFunc(s.tx.handleSubmitBatch)))
	return s
}

// routes is the one place that maps methods and paths to handlers and says
// what each asks of a credential when Config.Auth is set (its access:
// authz.go, guard); with internal, the routes only other nodes reach, over
// the peer link (POST /v1/internal/propose), are added, and no route asks
// for a credential: the peer link authenticated the node.
//
// The router matches the escaped path (UseEncodedPath) and never cleans it
// (SkipClean), so a key may contain "/", "%2F", "//" or ".." and still reach
// GET /v1/kv/{key}; handlers unescape path variables with pathVar.
func (s *Server) routes(internal bool) *mux.Router {
	r := mux.NewRouter()
	r.UseEncodedPath()
	r.SkipClean(true)
	g := s.guard
	if internal {
		g = func(_ access, h http.Handler) http.Handler { return h }
	}
	on := func(path string, acc access, h http.HandlerFunc) *mux.Route { return r.Handle(path, g(acc, h)) }
	r.NotFoundHandler = s.met.instrument(routeUnmatched, g(accessAny, http.HandlerFunc(s.handleNotFound)))
	r.MethodNotAllowedHandler = s.met.instrument(routeUnmatched, g(accessAny, s.methodNotAllowed(r))) // errors.go

	cl, tx, lg, ls, cs := s.cluster, s.tx, s.logs, s.leases, s.consumers
	on("/healthz", accessOpen, cl.handleHealth).Methods(http.MethodGet)
	on("/readyz", accessOpen, cl.handleReady).Methods(http.MethodGet)

	on("/v1/tx", accessWrite, tx.handleSubmit).Methods(http.MethodPost)
	on("/v1/tx", accessRead, tx.handleTxByIdempotencyKey).Methods(http.MethodGet)
	on("/v1/tx/batch", accessWrite, tx.handleSubmitBatch).Methods(http.MethodPost)
	on(wire.TxStreamPath, accessWrite, s.txStreamRoute(internal)).Methods(http.MethodGet) // txstream.go
	on("/v1/tx/{txid}", accessRead, tx.handleTx).Methods(http.MethodGet)
	on("/v1/kv/{key:.+}", accessRead, tx.handleGet).Methods(http.MethodGet)
	on("/v1/kv", accessRead, tx.handleRange).Methods(http.MethodGet) // range.go
	on("/v1/log", accessRead, lg.handleLog).Methods(http.MethodGet)
	on(wire.LogStreamPath, accessRead, lg.handleLogStream).Methods(http.MethodGet)

	// Without a LeaseBackend (ConsumerBackend) the lease (consumer read)
	// paths answer 404.
	on("/v1/leases", accessRead, s.unless(ls.lb == nil, "leases", ls.handleList)).Methods(http.MethodGet)
	on("/v1/leases/{name:.+}", accessWrite, s.unless(ls.lb == nil, "leases", ls.handlePut)).Methods(http.MethodPut)
	on("/v1/leases/{name:.+}", accessWrite, s.unless(ls.lb == nil, "leases", ls.handleDelete)).Methods(http.MethodDelete)
	on("/v1/leases/{name:.+}", accessRead, s.unless(ls.lb == nil, "leases", ls.handleGet)).Methods(http.MethodGet)

	on("/v1/consumers", accessRead, s.unless(cs.cb == nil, "consumer groups", cs.handleList)).Methods(http.MethodGet)
	on("/v1/consumers/{group:.+}/offset", accessWrite, cs.handleCommitOffset).Methods(http.MethodPost)
	on("/v1/consumers/{group:.+}", accessRead, s.unless(cs.cb == nil, "consumer groups", cs.handleGet)).Methods(http.MethodGet)

	on("/v1/cluster", accessRead, cl.handleCluster).Methods(http.MethodGet)
	on("/v1/cluster/join", accessAdmin, cl.handleJoin).Methods(http.MethodPost)
	on("/v1/cluster/nodes/{id}", accessAdmin, cl.handleRemove).Methods(http.MethodDelete)
	on("/v1/cluster/transfer-leadership", accessAdmin, cl.handleTransferLeadership).Methods(http.MethodPost)
	on("/v1/backup", accessAdmin, s.handleBackup).Methods(http.MethodGet) // backup.go
	// The routes themselves, to a reader as the 404 and 405 answers are.
	on(OpenAPIPath, accessRead, s.handleOpenAPI).Methods(http.MethodGet)

	if internal {
		on("/v1/internal/propose", accessOpen, tx.handlePropose).Methods(http.MethodPost)
		on("/v1/internal/range", accessOpen, tx.handleInternalRange).Methods(http.MethodPost) // range.go
	}
	if m := s.cfg.MetricsHandler; m != nil {
		on("/metrics", s.openIf(s.cfg.MetricsOpen), s.unscoped(m).ServeHTTP).Methods(http.MethodGet)
	}

	if d := s.cfg.Dashboard; d != nil {
		// The page and its files may be open (UIOpen); its data never is.
		on("/v1/stats", accessRead, s.noQuery(d).ServeHTTP).Methods(http.MethodGet)
		on("/v1/stats/members", accessRead, s.noQuery(d).ServeHTTP).Methods(http.MethodGet)
		on("/v1/events", accessRead, s.noQuery(d).ServeHTTP).Methods(http.MethodGet)
		r.PathPrefix("/ui/").Handler(g(s.openIf(s.cfg.UIOpen), s.pageFiles(d))).Methods(http.MethodGet)
		r.Handle("/", g(s.openIf(s.cfg.UIOpen), d)).Methods(http.MethodGet) // a redirect to /ui/
	}
	s.met.instrumentRoutes(r)
	return r
}

// openIf returns accessOpen when open, else accessRead: /metrics and the
// dashboard's page with --metrics-open and --ui-open.
func (s *Server) openIf(open bool) access {
	if open {
		return accessOpen
	}
	return accessRead
}

// unless returns h, or with missing the handler that answers 404 saying
// that this node does not serve kind (a Backend without that part).
func (s *Server) unless(missing bool, kind string, h http.HandlerFunc) http.HandlerFunc {
	if missing {
		return func(w http.ResponseWriter, r *http.Request) { s.writeError(w, wire.New(wire.MsgNotServed, kind)) }
	}
	return h
}

// noQuery refuses a request with query parameters, as the handlers of routes
// without any do, before h sees it.
func (s *Server) noQuery(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := parseQuery(r); err != nil {
			s.writeError(w, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ServeHTTP implements http.Handler. Every answer is JSON but the dashboard's
// page (Config.Dashboard).
//
// A request whose framing a proxy in front might read otherwise than
// net/http has its connection closed after the answer (RFC 9112, 6.1):
// net/http reads a request with both Transfer-Encoding and Content-Length by
// the first and drops the second before a handler sees it, so every request
// with a Transfer-Encoding closes; an HTTP/1.0 request, whose
// Transfer-Encoding net/http ignores without a trace, closes as well.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(r.TransferEncoding) > 0 || !r.ProtoAtLeast(1, 1) {
		w.Header().Set("Connection", "close")
	}
	s.Serve(w, r, s.router)
}

// Serve runs h, the router or the handler it would pick for r, as ServeHTTP
// does: for api/fastpath, which picks the handler itself (FastHandler). It
// checks the Host and Origin headers first (authz.go); h checks the
// credential.
func (s *Server) Serve(w http.ResponseWriter, r *http.Request, h http.Handler) {
	s.serve(w, r, h, true)
}

// serve runs h as Serve says; a request of the peer link (not public) has
// its headers taken as they are.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, h http.Handler, public bool) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	hdr := rec.Header()
	hdr["Content-Type"] = jsonContentType
	hdr["X-Content-Type-Options"] = noSniff
	var err error
	if public {
		err = s.checkHeaders(r)
	}
	if err != nil {
		s.writeError(rec, err)
	} else {
		h.ServeHTTP(rec, r)
	}
	if s.log.Enabled(r.Context(), slog.LevelDebug) {
		attrs := []any{"method", r.Method, "path", r.URL.EscapedPath(), "status", rec.status, "duration", time.Since(start)}
		if rec.err != nil {
			attrs = append(attrs, "err", rec.err)
		}
		s.log.Debug("request", attrs...)
	}
}

// PeerHandler returns the handler of the requests other nodes send over the
// peer link: every route of ServeHTTP and the internal ones
// (POST /v1/internal/propose), without the Host, Origin and credential
// checks (authz.go): the peer link authenticated the node that sends them.
// The client port never serves it.
func (s *Server) PeerHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, s.peerRouter, false)
	})
}

// FastHandler returns the handler the router picks for a POST to path, one of
// the fast path's targets (so with no path variables): without the router's matching
// and the two request copies it makes to carry the route and its variables.
func (s *Server) FastHandler(path string) http.Handler {
	switch path {
	case "/v1/tx":
		return s.submitH
	case "/v1/tx/batch":
		return s.batchH
	}
	return s.router
}

// Config returns the Server's Config, with its defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// Logger returns the logger of the Server's Config.
func (s *Server) Logger() *slog.Logger { return s.log }

// WriteError answers err as the handlers do, through wire's code table: for
// api/fastpath.
func (s *Server) WriteError(w http.ResponseWriter, err error) { s.writeError(w, err) }

// The values of the two headers every answer starts with, shared by all of
// them: a handler that sets another value replaces the slice (Set) or appends
// past its capacity (Add), and nothing writes into one.
var (
	jsonContentType = []string{"application/json"}
	noSniff         = []string{"nosniff"}
)

// recorder remembers the status and the error of an answer for the request log.
type recorder struct {
	http.ResponseWriter
	status int
	err    error
}

func (r *recorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// writeJSON answers status with v as JSON.
func (a *answers) writeJSON(w http.ResponseWriter, status int, v any) {
	var b []byte
	var err error
	switch v := v.(type) {
	case wire.TxResult:
		b = wire.AppendTxResultJSON(make([]byte, 0, 256), &v)
	case wire.BatchResponse:
		b = wire.AppendBatchJSON(make([]byte, 0, 64+192*len(v.Results)), v.Results)
	case wire.LogPage:
		b, err = a.logPageJSON(v)
	case wire.KV:
		b, err = a.kvJSON(v)
	case rangeAnswer:
		b, err = a.rangeJSON(v) // range.go
	default:
		b, err = wire.MarshalJSON(v)
	}
	if err != nil {
		a.writeError(w, fmt.Errorf("encode answer: %w", err))
		return
	}
	w.WriteHeader(status)
	b = append(b, '\n')
	if _, err := w.Write(b); err != nil {
		a.log.Debug("write answer", "err", err)
	}
}

// errorAnswer is the body of every error answer.
type errorAnswer struct {
	Error wire.ErrorBody `json:"error"`
}

// writeError answers err with its status and code from the code table.
func (a *answers) writeError(w http.ResponseWriter, err error) {
	status, b := a.errorAnswer(err)
	if rec, ok := w.(*recorder); ok {
		rec.err = err
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	if _, err := w.Write(append(b, '\n')); err != nil {
		a.log.Debug("write answer", "err", err)
	}
}

// errorAnswer returns the status and the JSON body that answer err, logging an
// internal error.
func (a *answers) errorAnswer(err error) (int, []byte) {
	status, body := wire.ErrorStatus(err)
	if status == http.StatusInternalServerError {
		a.log.Warn("internal error", "err", err)
	}
	b, _ := json.Marshal(errorAnswer{Error: body}) // an ErrorBody always encodes
	return status, b
}

// preallocBodyBytes bounds the buffer readBody makes before it reads: a
// transaction of a few small ops fits, and a client that declares a larger
// body than it sends pins no more than this; a larger body grows the buffer
// (doubling) as its bytes arrive, so memory follows what arrived, not what
// was declared.
const preallocBodyBytes = 4 << 10

// readBody reads the whole body of r, at most limit bytes, within timeout
// (0: no bound): the server bounds only the headers' reading, and a client
// that declares a body and sends it slowly, or not at all, would otherwise
// hold its handler for as long as it keeps the connection.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, timeout time.Duration) ([]byte, error) {
	rc := http.NewResponseController(w)
	deadline := timeout > 0 && rc.SetReadDeadline(time.Now().Add(timeout)) == nil
	// Sized by Content-Length (up to preallocBodyBytes), the body takes one
	// allocation instead of io.ReadAll's doubling copies.
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 {
		buf.Grow(int(min(n, limit, preallocBodyBytes)) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	body := buf.Bytes()
	if deadline && err == nil {
		// A failed read leaves the deadline passed, so that the server's
		// discard of the unread rest fails at once and it closes the
		// connection after the answer, instead of waiting for the rest.
		rc.SetReadDeadline(time.Time{})
	}
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return nil, bodyTooLarge(limit)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, wire.New(wire.MsgBodySlow, timeout)
	}
	if err != nil {
		return nil, wire.New(wire.MsgBodyRead, err)
	}
	return body, nil
}
