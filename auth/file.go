package auth

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	tokens "github.com/txlog/txlog/auth/token"
)

// DefaultInterval is how often Open's watcher stats the auth file.
const DefaultInterval = 250 * time.Millisecond

// Config configures an auth File.
type Config struct {
	// File is the auth file's path (--auth-file). Required.
	File string
	// Interval is how often the file is stat'ed for a change (its mtime,
	// size, inode or mode); default DefaultInterval. A change is read once
	// two stats in a row agree on it: a revoked credential is refused one
	// to two Intervals after the file's last write.
	Interval time.Duration
	// Logger receives the reloads (Info) and the files refused (Error);
	// nil discards.
	Logger *slog.Logger
	// Metrics registers txlog_auth_reloads_total{result} and
	// txlog_auth_credentials; nil registers nothing.
	Metrics prometheus.Registerer
}

// File is an open auth file: the credentials it holds, re-read when the
// file changes and on Reload. Its methods are safe for concurrent use.
type File struct {
	cfg   Config
	log   *slog.Logger
	creds atomic.Pointer[creds] // the last good parse; never nil after Open
	gen   atomic.Uint64         // Generation: counts installs, after creds is stored

	mu      sync.Mutex // serializes reads of the file; guards stamp and changed
	stamp   stamp      // of the last read, good or bad
	changed stamp      // the watcher's last stat, when it differs from stamp

	reloadOK, reloadErr prometheus.Counter
	count               prometheus.Gauge

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

var errNoFile = errors.New("auth: Config.File is required")

// Open reads and parses cfg.File, and starts watching it. A file that does
// not parse, or that anyone may write, is an error.
func Open(cfg Config) (*File, error) {
	if cfg.File == "" {
		return nil, errNoFile
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &File{
		cfg:  cfg,
		log:  log.With("component", "auth", "file", cfg.File),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	reloads := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "txlog_auth_reloads_total",
		Help: "Reads of the auth file after the first, by result: ok (its credentials now apply) or error (refused; the previous ones still apply).",
	}, []string{"result"})
	f.reloadOK, f.reloadErr = reloads.WithLabelValues("ok"), reloads.WithLabelValues("error")
	f.count = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "txlog_auth_credentials",
		Help: "Credentials (token and certificate lines) in the auth file now applied.",
	})
	st, c, err := f.read()
	if err != nil {
		return nil, err
	}
	if cfg.Metrics != nil {
		if err := errors.Join(cfg.Metrics.Register(reloads), cfg.Metrics.Register(f.count)); err != nil {
			return nil, fmt.Errorf("auth: register metrics: %w", err)
		}
	}
	f.install(st, c)
	go f.watch()
	return f, nil
}

// Close stops watching the file. Authenticate keeps answering from the
// last credentials read. It may be called twice, and on a nil File.
func (f *File) Close() error {
	if f == nil {
		return nil
	}
	f.closeOnce.Do(func() {
		close(f.stop)
		<-f.done
	})
	return nil
}

// Generation counts the credentials put in force: it changes at each
// reload that applies a file, and only then. A decision that Authenticate
// made after Generation returned g holds as long as Generation returns g
// (the credentials are stored before the count moves).
func (f *File) Generation() uint64 { return f.gen.Load() }

// Reload reads the file now (on SIGHUP). On an error the credentials read
// before stay, and the error is logged and returned.
func (f *File) Reload() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reloadLocked()
}

// watch stats the file every Interval and reads it when it changed.
func (f *File) watch() {
	defer close(f.done)
	t := time.NewTicker(f.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
		}
		f.tick()
	}
}

// tick is one of the watcher's stats: it reads the file if it changed
// and has stayed the same since the last tick.
func (f *File) tick() {
	f.mu.Lock()
	st, _ := statFile(f.cfg.File) // a missing file: the zero stamp
	switch {
	case st == f.stamp:
		f.changed = stamp{}
	case st != f.changed:
		// Changed since the last tick: read it once it stays the same
		// for a tick, so that a file being written in place (truncated,
		// then written) is not taken half-written, which could parse
		// (cut at a line's end) and revoke the lines not yet written.
		f.changed = st
	default:
		f.changed = stamp{}
		f.reloadLocked()
	}
	f.mu.Unlock()
}

// reloadLocked reads the file and, if it is good, applies it. f.mu is held.
func (f *File) reloadLocked() error {
	st, c, err := f.read()
	f.stamp = st // a bad file is not read again until it changes
	if err != nil {
		f.reloadErr.Inc()
		f.log.Error("auth file refused; the credentials read before still apply", "err", err)
		return err
	}
	f.install(st, c)
	f.reloadOK.Inc()
	f.log.Info("auth file reloaded", "credentials", c.count())
	return nil
}

// install makes c the credentials in force.
func (f *File) install(st stamp, c *creds) {
	f.stamp = st
	f.creds.Store(c)
	f.gen.Add(1) // after the Store: a Generation read before an Authenticate covers what it saw
	f.count.Set(float64(c.count()))
	if c.count() == 0 {
		f.log.Warn("auth file has no credentials: every request that needs one is refused")
	}
}

// read stats, then reads and parses the file. The stamp is taken first, so
// a change during the read is seen by the next tick.
func (f *File) read() (stamp, *creds, error) {
	name := f.cfg.File
	st, err := statFile(name)
	if err != nil {
		return stamp{}, nil, fmt.Errorf("auth file: %w", err)
	}
	if st.mode&0o002 != 0 {
		return st, nil, fmt.Errorf("auth file %s: mode %v lets anyone write it (chmod o-w)", name, st.mode)
	}
	if st.mode&0o020 != 0 {
		f.log.Warn("auth file is group-writable: whoever is in its group can grant itself any role", "mode", st.mode.String())
	}
	file, err := os.Open(name)
	if err != nil {
		return st, nil, fmt.Errorf("auth file: %w", err)
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, maxFileBytes+1))
	if err != nil {
		return st, nil, fmt.Errorf("auth file: %w", err)
	}
	if len(data) > maxFileBytes {
		return st, nil, fmt.Errorf("auth file %s: larger than %d bytes", name, maxFileBytes)
	}
	c, err := parse(data)
	if err != nil {
		return st, nil, fmt.Errorf("auth file %s: %w", name, err)
	}
	return st, c, nil
}

// stamp is what tells that the file changed.
type stamp struct {
	mtime time.Time
	size  int64
	inode uint64
	mode  os.FileMode
}

// statFile stats name, following symbolic links (a mounted secret is a
// link swapped to a new file).
func statFile(name string) (stamp, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return stamp{}, err
	}
	if !fi.Mode().IsRegular() {
		return stamp{}, fmt.Errorf("%s: not a regular file", name)
	}
	return stamp{mtime: fi.ModTime(), size: fi.Size(), inode: inode(fi), mode: fi.Mode().Perm()}, nil
}

// NewToken returns a new random bearer token (token.New): "txlog_" and 32
// bytes from crypto/rand in unpadded base64url.
func NewToken() (string, error) { return tokens.New() }

// HashToken returns the lowercase hex SHA-256 of a token's bytes (token.Hash):
// what the auth file stores of it.
func HashToken(tok string) string { return tokens.Hash(tok) }
