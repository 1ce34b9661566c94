package node

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txlog/txlog/peerlink"
	"github.com/txlog/txlog/tlsfiles"
)

// peerSecurity is the peer link's TLS material (--peer-tls-*) and shared
// secrets (--peer-secret-file), each re-read when its files change and on
// reloadPeer (SIGHUP). Both are optional; the zero value has neither.
type peerSecurity struct {
	mode    string      // Config.PeerTLSMode
	certs   peerCerts   // nil without peer TLS
	secrets *secretFile // nil without a secret file
}

// peerCerts is what the peer link takes of the certificate files (a
// *tlsfiles.Files): a config per handshake from the material current then.
type peerCerts interface {
	ServerConfig() *tls.Config
	ClientConfig(serverName string) *tls.Config
	Reload() error
	Close() error
}

// openPeerSecurity opens the files cfg names; nil, nil when it names none.
func openPeerSecurity(cfg Config) (*peerSecurity, error) {
	if cfg.PeerTLSCertFile == "" && cfg.PeerSecretFile == "" {
		return nil, nil
	}
	ps := &peerSecurity{mode: cfg.PeerTLSMode}
	if cfg.PeerTLSCertFile != "" {
		c, err := openPeerCerts(cfg)
		if err != nil {
			return nil, fmt.Errorf("peer TLS: %w", err)
		}
		ps.certs = c
	}
	if cfg.PeerSecretFile != "" {
		s, err := openSecretFile(cfg.PeerSecretFile, 0, cfg.Logger)
		if err != nil {
			ps.close()
			return nil, err
		}
		ps.secrets = s
	}
	return ps, nil
}

// linkConfig fills the TLS and secret settings of the peer link's config.
func (ps *peerSecurity) linkConfig(lc *peerlink.Config) {
	if ps == nil {
		return
	}
	if ps.certs != nil {
		lc.TLSMode = ps.mode
		lc.ServerTLS = ps.certs.ServerConfig
		lc.ClientTLS = func(addr string) *tls.Config {
			return ps.certs.ClientConfig(peerlink.ServerName(addr))
		}
	}
	if ps.secrets != nil {
		lc.Secrets = ps.secrets.secrets
	}
}

// reloadPeer re-reads the peer certificates and secrets now (SIGHUP). On
// an error the material in use stays; every error is returned.
func (ps *peerSecurity) reloadPeer() error {
	if ps == nil {
		return nil
	}
	var errs []error
	if ps.certs != nil {
		if err := ps.certs.Reload(); err != nil {
			errs = append(errs, fmt.Errorf("reload peer TLS: %w", err))
		}
	}
	if ps.secrets != nil {
		if err := ps.secrets.reload(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// close stops the watchers. Safe on nil and twice.
func (ps *peerSecurity) close() error {
	if ps == nil {
		return nil
	}
	var errs []error
	if ps.certs != nil {
		errs = append(errs, ps.certs.Close())
	}
	if ps.secrets != nil {
		ps.secrets.close()
	}
	return errors.Join(errs...)
}

// Bounds of a secret file.
const (
	// minSecretBytes is the shortest secret accepted.
	minSecretBytes = 16
	// maxSecretFileBytes bounds the file read.
	maxSecretFileBytes = 64 << 10
	// secretPollInterval is how often the file is checked for a change.
	secretPollInterval = 250 * time.Millisecond
)

// parseSecrets reads a secret file: one secret a line, each trimmed of
// surrounding white space, empty lines ignored; each at least
// minSecretBytes; at least one.
func parseSecrets(b []byte) ([][]byte, error) {
	if len(b) > maxSecretFileBytes {
		return nil, fmt.Errorf("longer than %d bytes", maxSecretFileBytes)
	}
	var out [][]byte
	for i, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if len(line) < minSecretBytes {
			return nil, fmt.Errorf("line %d: a secret of %d bytes, want at least %d", i+1, len(line), minSecretBytes)
		}
		out = append(out, bytes.Clone(line))
	}
	if len(out) == 0 {
		return nil, errors.New("no secret in it")
	}
	return out, nil
}

// secretFile is --peer-secret-file, polled for a change every interval:
// the first secret is proven when dialling, any is accepted. A change that
// does not parse keeps the secrets in use, and is logged at Error.
type secretFile struct {
	path     string
	interval time.Duration
	log      *slog.Logger

	cur atomic.Pointer[[][]byte]

	mu    sync.Mutex // guards stamp; serializes reloads
	stamp fileStamp

	done chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// fileStamp is what tells a file changed.
type fileStamp struct {
	mod  time.Time
	size int64
	ok   bool
}

func secretStamp(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), ok: true}
}

// openSecretFile reads path (an error when it is unusable) and starts
// polling it every interval (0: secretPollInterval).
func openSecretFile(path string, interval time.Duration, log *slog.Logger) (*secretFile, error) {
	if interval <= 0 {
		interval = secretPollInterval
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &secretFile{path: path, interval: interval, log: log.With("component", "peer_secret"), done: make(chan struct{})}
	if err := s.load(); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		s.log.Warn("peer secret file readable by others than its owner", "path", path, "mode", fi.Mode().Perm().String())
	}
	s.wg.Go(s.watch)
	return s, nil
}

// secrets returns the current secrets; the caller must not modify them.
func (s *secretFile) secrets() [][]byte { return *s.cur.Load() }

// load reads and parses the file and, when it parses, makes it current.
func (s *secretFile) load() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := secretStamp(s.path)
	f, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("peer secret file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFileBytes+1))
	if err != nil {
		return fmt.Errorf("peer secret file %s: %w", s.path, err)
	}
	secrets, err := parseSecrets(b)
	if err != nil {
		return fmt.Errorf("peer secret file %s: %w", s.path, err)
	}
	s.cur.Store(&secrets)
	s.stamp = st
	return nil
}

// reload re-reads the file now; on an error the secrets in use stay.
func (s *secretFile) reload() error {
	if err := s.load(); err != nil {
		s.log.Error("peer secret file not reloaded; keeping the secrets in use", "err", err)
		return err
	}
	s.log.Info("peer secret file reloaded", "path", s.path)
	return nil
}

// watch reloads the file when its stamp changes, until close.
func (s *secretFile) watch() {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		s.mu.Lock()
		changed := secretStamp(s.path) != s.stamp
		s.mu.Unlock()
		if changed {
			_ = s.reload() // logged
		}
	}
}

// close stops the watcher. Safe twice.
func (s *secretFile) close() {
	s.once.Do(func() { close(s.done) })
	s.wg.Wait()
}

// openPeerCerts opens the peer certificate, key and CA bundle (package
// tlsfiles): polled and re-read when they change, each handshake taking the
// material current then; the CA signs every peer's certificate, both ways,
// and PeerCertAllowedCN pins the names a peer may present.
func openPeerCerts(cfg Config) (peerCerts, error) {
	f, err := tlsfiles.Open(tlsfiles.Config{
		CertFile:  cfg.PeerTLSCertFile,
		KeyFile:   cfg.PeerTLSKeyFile,
		CAFile:    cfg.PeerTLSCAFile,
		AllowedCN: cfg.PeerCertAllowedCN,
		Name:      "peer",
		Logger:    cfg.Logger,
		Metrics:   cfg.Metrics,
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

var _ peerCerts = (*tlsfiles.Files)(nil)
