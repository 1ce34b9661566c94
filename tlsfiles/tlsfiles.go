package tlsfiles

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultInterval is how often the files are polled when Config.Interval is
// zero.
const DefaultInterval = 250 * time.Millisecond

// Config names the files of one set of TLS material.
type Config struct {
	// CertFile and KeyFile are the PEM certificate (chain) and its private
	// key. Required.
	CertFile, KeyFile string
	// CAFile is an optional PEM bundle of CA certificates. As a server, client
	// certificates are then required and verified against it; as a client, it
	// holds the roots a server's certificate is verified against (without it,
	// the system's roots).
	CAFile string
	// AllowedCN, when set, are the only subject CNs a peer's verified
	// certificate may have, in both directions. It needs CAFile.
	AllowedCN []string
	// Interval is how often the files are polled for a change. Default
	// DefaultInterval.
	Interval time.Duration
	// Name labels the metrics and the log lines ("client", "peer").
	Name string
	// Logger receives the reloads; nil discards.
	Logger *slog.Logger
	// Metrics registers txlog_tls_reloads_total and
	// txlog_tls_cert_expiry_seconds; nil registers nothing.
	Metrics prometheus.Registerer
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.CertFile == "" {
		errs = append(errs, errors.New("tlsfiles: CertFile required"))
	}
	if c.KeyFile == "" {
		errs = append(errs, errors.New("tlsfiles: KeyFile required"))
	}
	if len(c.AllowedCN) > 0 && c.CAFile == "" {
		errs = append(errs, errors.New("tlsfiles: AllowedCN needs CAFile (only a verified certificate's CN counts)"))
	}
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("tlsfiles: Interval %v must be >= 0", c.Interval))
	}
	return errors.Join(errs...)
}

// material is one consistent read of the files. It is never modified once
// published.
type material struct {
	cert *tls.Certificate
	pool *x509.CertPool // nil without CAFile
}

// stamp identifies a file's version as stat sees it.
type stamp struct {
	mtime time.Time
	size  int64
	ino   uint64
	err   bool // stat failed
}

func statStamp(path string) stamp {
	if path == "" {
		return stamp{}
	}
	fi, err := os.Stat(path) // follows symlinks: a swapped link is a new file
	if err != nil {
		return stamp{err: true}
	}
	s := stamp{mtime: fi.ModTime(), size: fi.Size()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = uint64(st.Ino)
	}
	return s
}

// Files is the current TLS material of one Config and its watcher. Its
// methods are safe for concurrent use.
type Files struct {
	cfg Config
	log *slog.Logger
	cur atomic.Pointer[material]

	mu     sync.Mutex // serializes loads; guards stamps
	stamps [3]stamp   // of CertFile, KeyFile, CAFile at the last load attempt

	reloads *prometheus.CounterVec
	expiry  *prometheus.GaugeVec

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// Open reads the files of cfg, failing if they are unusable, and starts the
// watcher that re-reads them when they change. Close stops it.
func Open(cfg Config) (*Files, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	cfg.AllowedCN = slices.Clone(cfg.AllowedCN)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	f := &Files{cfg: cfg, log: log.With("component", "tlsfiles", "name", cfg.Name),
		stop: make(chan struct{}), done: make(chan struct{})}
	if err := f.registerMetrics(cfg.Metrics); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.stamps = f.statAll()
	m, err := f.read()
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	f.publish(m)
	go f.watch()
	return f, nil
}

// registerMetrics registers the two metrics, sharing them with another Files
// (another Name) on the same registerer.
func (f *Files) registerMetrics(reg prometheus.Registerer) error {
	f.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "txlog_tls_reloads_total",
		Help: "Re-reads of TLS certificate, key and CA files, by material name and result (ok, error).",
	}, []string{"name", "result"})
	f.expiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "txlog_tls_cert_expiry_seconds",
		Help: "NotAfter of the TLS certificate in use, as a Unix time, by material name.",
	}, []string{"name"})
	if reg == nil {
		return nil
	}
	c, err := register(reg, f.reloads)
	if err != nil {
		return err
	}
	f.reloads = c.(*prometheus.CounterVec)
	c, err = register(reg, f.expiry)
	if err != nil {
		return err
	}
	f.expiry = c.(*prometheus.GaugeVec)
	return nil
}

// register registers c, or returns the collector already registered in its
// place.
func register(reg prometheus.Registerer, c prometheus.Collector) (prometheus.Collector, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, fmt.Errorf("tlsfiles: register metrics: %w", err)
		}
		return are.ExistingCollector, nil
	}
	return c, nil
}

func (f *Files) statAll() [3]stamp {
	return [3]stamp{statStamp(f.cfg.CertFile), statStamp(f.cfg.KeyFile), statStamp(f.cfg.CAFile)}
}

// read reads and checks the three files. The caller holds f.mu.
func (f *Files) read() (*material, error) {
	certPEM, err := os.ReadFile(f.cfg.CertFile)
	if err != nil {
		return nil, fmt.Errorf("tlsfiles: read cert %s: %w", f.cfg.CertFile, err)
	}
	keyPEM, err := os.ReadFile(f.cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tlsfiles: read key %s: %w", f.cfg.KeyFile, err)
	}
	if err := strictPEM(certPEM); err != nil {
		return nil, fmt.Errorf("tlsfiles: cert %s: %w", f.cfg.CertFile, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("tlsfiles: cert %s with key %s: %w", f.cfg.CertFile, f.cfg.KeyFile, err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("tlsfiles: cert %s: %w", f.cfg.CertFile, err)
		}
	}
	m := &material{cert: &cert}
	if f.cfg.CAFile != "" {
		caPEM, err := os.ReadFile(f.cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tlsfiles: read CA bundle %s: %w", f.cfg.CAFile, err)
		}
		if m.pool, err = parseBundle(caPEM); err != nil {
			return nil, fmt.Errorf("tlsfiles: CA bundle %s: %w", f.cfg.CAFile, err)
		}
	}
	return m, nil
}

// strictPEM fails unless b is PEM blocks and white space only, so that a file
// cut short in its last block is an error rather than the blocks before it.
func strictPEM(b []byte) error {
	n := 0
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		n++
	}
	if len(bytes.TrimSpace(b)) > 0 {
		return fmt.Errorf("%d bytes after the last complete PEM block (truncated or not PEM)", len(bytes.TrimSpace(b)))
	}
	if n == 0 {
		return errors.New("no PEM block")
	}
	return nil
}

// parseBundle parses a CA bundle strictly: every block a CERTIFICATE that
// parses, at least one, nothing else in the file.
func parseBundle(b []byte) (*x509.CertPool, error) {
	if err := strictPEM(b); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for i := 0; ; i++ {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return pool, nil
		}
		if blk.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("block %d is %q, want CERTIFICATE", i, blk.Type)
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
		pool.AddCert(c)
	}
}

func (f *Files) publish(m *material) {
	f.cur.Store(m)
	f.expiry.WithLabelValues(f.cfg.Name).Set(float64(m.cert.Leaf.NotAfter.Unix()))
	if time.Now().After(m.cert.Leaf.NotAfter) {
		f.log.Warn("tls certificate expired", "file", f.cfg.CertFile, "not_after", m.cert.Leaf.NotAfter)
	}
}

// Reload re-reads the files now. On an error the material in use stays, and
// the error is logged and returned.
func (f *Files) Reload() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stamps = f.statAll()
	return f.load("reload")
}

// load reads the files and publishes them, or logs why not. The caller holds
// f.mu.
func (f *Files) load(why string) error {
	m, err := f.read()
	if err != nil {
		f.reloads.WithLabelValues(f.cfg.Name, "error").Inc()
		f.log.Error("tls material not reloaded, keeping the old", "why", why, "err", err)
		return err
	}
	f.publish(m)
	f.reloads.WithLabelValues(f.cfg.Name, "ok").Inc()
	f.log.Info("tls material reloaded", "why", why, "subject", m.cert.Leaf.Subject.CommonName,
		"not_after", m.cert.Leaf.NotAfter)
	return nil
}

// watch polls the files until Close.
func (f *Files) watch() {
	defer close(f.done)
	t := time.NewTicker(f.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
		}
		f.mu.Lock()
		if now := f.statAll(); now != f.stamps {
			// The stamps are taken before the read: a write that lands
			// during it changes them again and is read on the next tick.
			f.stamps = now
			_ = f.load("file changed") // logged and counted by load
		}
		f.mu.Unlock()
	}
}

// Close stops the watcher. The configs handed out keep serving the last
// material. Close may be called more than once.
func (f *Files) Close() error {
	f.closeOnce.Do(func() { close(f.stop) })
	<-f.done
	return nil
}

// Certificate returns the certificate in use.
func (f *Files) Certificate() *tls.Certificate { return f.cur.Load().cert }

// ServerConfig returns a server tls.Config (TLS 1.2 or later, Go's defaults
// otherwise) whose every handshake uses the material current at its
// ClientHello: the certificate and, with a CAFile, the pool client
// certificates must chain to (a client certificate is then required).
func (f *Files) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return f.serverConfig(f.cur.Load()), nil
		},
		// Unused while GetConfigForClient answers; there so that code that
		// checks a server config for a certificate finds one.
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return f.cur.Load().cert, nil
		},
	}
}

func (f *Files) serverConfig(m *material) *tls.Config {
	c := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{*m.cert},
	}
	if m.pool != nil {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = m.pool
		// A resumed session is not verified again: a client whose CA was
		// dropped from the bundle could resume the session it had. Every
		// connection makes a full handshake against the current pool.
		c.SessionTicketsDisabled = true
	}
	if len(f.cfg.AllowedCN) > 0 {
		c.VerifyConnection = f.checkCN
	}
	return c
}

// ClientConfig returns a client tls.Config for a server named serverName,
// from the current material: the certificate is offered when the server asks
// for one (the one current at that handshake), and the server's is verified
// against the CA pool current now (the system's roots without a CAFile).
// Take a fresh one per dial.
func (f *Files) ClientConfig(serverName string) *tls.Config {
	m := f.cur.Load()
	c := &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: serverName,
		RootCAs:    m.pool,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return f.cur.Load().cert, nil
		},
	}
	if len(f.cfg.AllowedCN) > 0 {
		c.VerifyConnection = f.checkCN
	}
	return c
}

// CNError is the refusal of a verified peer certificate whose CN is not in
// Config.AllowedCN.
type CNError struct {
	CN string
}

func (e *CNError) Error() string {
	return fmt.Sprintf("tlsfiles: peer certificate CN %q is not allowed", e.CN)
}

// ErrNoPeerCert refuses a connection whose peer presented no verified
// certificate while Config.AllowedCN is set.
var ErrNoPeerCert = errors.New("tlsfiles: no verified peer certificate")

func (f *Files) checkCN(cs tls.ConnectionState) error {
	if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return ErrNoPeerCert
	}
	cn := cs.VerifiedChains[0][0].Subject.CommonName
	if !slices.Contains(f.cfg.AllowedCN, cn) {
		err := &CNError{CN: cn}
		f.log.Warn("tls peer refused", "cn", cn, "err", err)
		return err
	}
	return nil
}
