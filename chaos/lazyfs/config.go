package lazyfs

import (
	"errors"
	"fmt"
	"log/slog"
)

// ErrNotSupported is returned by Mount where lazyfs cannot run: on an OS other
// than Linux, or without /dev/fuse.
var ErrNotSupported = errors.New("lazyfs: not supported here")

// ErrOff is the error of PowerLoss when the file system is already off.
var ErrOff = errors.New("lazyfs: powered off")

// PageSize is the unit, in bytes, of dirty state and of a torn writeback.
const PageSize = 4096

// DirRule says which fsync makes a directory change durable.
type DirRule string

// The directory rules (see the package doc).
const (
	// DirsPOSIX: an entry is durable once its directory is fsynced.
	DirsPOSIX DirRule = "posix"
	// DirsJournal: any fsync makes every earlier directory change durable, in order.
	DirsJournal DirRule = "journal"
)

// ParseDirRule returns the rule named s.
func ParseDirRule(s string) (DirRule, error) {
	switch r := DirRule(s); r {
	case DirsPOSIX, DirsJournal:
		return r, nil
	}
	return "", fmt.Errorf("directory rule %q: want %s or %s", s, DirsPOSIX, DirsJournal)
}

// LossMode says what a power loss leaves of the unsynced state.
type LossMode string

// The loss modes (see the package doc).
const (
	// LossAll drops every unsynced page and directory change.
	LossAll LossMode = "all"
	// LossTorn writes a random subset of the dirty pages back, out of order,
	// and drops the rest.
	LossTorn LossMode = "torn"
)

// ParseLossMode returns the mode named s.
func ParseLossMode(s string) (LossMode, error) {
	switch m := LossMode(s); m {
	case LossAll, LossTorn:
		return m, nil
	}
	return "", fmt.Errorf("loss mode %q: want %s or %s", s, LossAll, LossTorn)
}

// Config describes one mount. Zero values mean "use the default".
type Config struct {
	// Backing is the directory that holds the durable state. Required; created
	// if missing. Its subdirectory .lazyfs holds orphans and is not served.
	Backing string
	// Mount is the mount point. Required; created if missing, and must not lie
	// inside Backing.
	Mount string
	// Dirs is the directory rule. Default DirsPOSIX.
	Dirs DirRule
	// Seed seeds the choice of pages a torn power loss writes back. Default 0.
	Seed uint64
	// Logger receives the mount's records; nil discards them.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Dirs == "" {
		c.Dirs = DirsPOSIX
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports every problem with c.
func (c Config) Validate() error {
	var errs []error
	if c.Backing == "" {
		errs = append(errs, errors.New("lazyfs: Backing is required"))
	}
	if c.Mount == "" {
		errs = append(errs, errors.New("lazyfs: Mount is required"))
	}
	if c.Dirs != "" {
		if _, err := ParseDirRule(string(c.Dirs)); err != nil {
			errs = append(errs, fmt.Errorf("lazyfs: Dirs: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Loss counts what one power loss did.
type Loss struct {
	Mode LossMode `json:"mode"`
	// DirtyPages is the number of pages not synced when the power went.
	DirtyPages int `json:"dirty_pages"`
	// WrittenPages is the number of those that a torn loss wrote back.
	WrittenPages int `json:"written_pages"`
	// DirOps is the number of directory changes that were not durable.
	DirOps int `json:"dir_ops"`
}
