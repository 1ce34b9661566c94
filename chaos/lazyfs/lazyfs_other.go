//go:build !linux

package lazyfs

import (
	"fmt"
	"runtime"
)

// FS is a mounted lazyfs; on this OS Mount never returns one.
type FS struct{}

// Mount returns ErrNotSupported: lazyfs needs Linux's FUSE.
func Mount(cfg Config) (*FS, error) {
	return nil, fmt.Errorf("%w: lazyfs needs Linux and /dev/fuse, this is %s", ErrNotSupported, runtime.GOOS)
}

// Available says why lazyfs cannot run here.
func Available() error { _, err := Mount(Config{}); return err }

// PowerLoss is never reached on this OS.
func (f *FS) PowerLoss(LossMode) (Loss, error) { return Loss{}, ErrNotSupported }

// PowerOn is never reached on this OS.
func (f *FS) PowerOn() {}

// Close is never reached on this OS.
func (f *FS) Close() error { return nil }

// Dirs is never reached on this OS.
func (f *FS) Dirs() DirRule { return "" }
