package wal

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults for the zero fields of Config.
const (
	DefaultSegmentBytes   = 64 << 20
	DefaultMaxRecordBytes = 1 << 20
	DefaultMaxBatchBytes  = 4 << 20
	DefaultPreallocBytes  = 1 << 20
	DefaultLazyDelay      = 10 * time.Millisecond

	// MinSegmentBytes is the smallest SegmentBytes that Validate accepts.
	MinSegmentBytes = 1 << 10
)

// Config holds the settings of a Log. The zero value is usable: each zero
// field means its default. Open fills in defaults on its own copy.
type Config struct {
	// SegmentBytes is the size in bytes past which the active segment is
	// closed and a new one started. A segment never exceeds it unless a
	// single record does not fit in an empty segment, which MaxRecordBytes
	// rules out. Default DefaultSegmentBytes (64 MiB); at least
	// MinSegmentBytes.
	SegmentBytes int64

	// MaxRecordBytes is the largest payload in bytes that Append accepts.
	// Default DefaultMaxRecordBytes (1 MiB), lowered to fit SegmentBytes;
	// at most SegmentBytes less the segment and record headers.
	MaxRecordBytes int

	// MaxBatchBytes bounds the payload bytes that one group commit gathers
	// from queued Appends before it writes and fsyncs them. A single
	// AppendBatch larger than this is still written whole. Default
	// DefaultMaxBatchBytes (4 MiB).
	MaxBatchBytes int

	// PreallocBytes is how far ahead of its records the active segment is
	// filled with zeros, so that the records overwrite blocks the file
	// already has and most syncs need not write the file's new size. The
	// zeros are written when the records reach them, at most up to
	// SegmentBytes, and cut off when the segment is rotated. Default
	// DefaultPreallocBytes (1 MiB); negative: no zeros, the segment grows
	// with each write.
	PreallocBytes int64

	// LazyDelay is how long the writer lets records queued with
	// AppendBatchLazyFunc, and done-marks, gather before it writes them:
	// one write for all that queued meanwhile, instead of one for each. An
	// Append, AppendBatch, AppendBatchLazy or Sync writes them at once with
	// its own records. Default DefaultLazyDelay (10 ms); negative: write at
	// once.
	LazyDelay time.Duration

	// NoSync turns off every fsync: of records, segments and the
	// directory. Append then returns once its records are written to the
	// OS, so they survive a process crash but not a power loss. For tests
	// and benchmarks only. Default false: fsync on.
	NoSync bool

	// Logger receives the log's events, with component=wal. Default: a
	// logger that discards everything.
	Logger *slog.Logger
	// Metrics is the registry the log registers its metrics with (metrics.go:
	// txlog_fsync_duration_seconds{log="intake"}); nil: no metrics.
	Metrics prometheus.Registerer
}

// withDefaults returns a copy of c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.SegmentBytes == 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.MaxRecordBytes == 0 {
		c.MaxRecordBytes = DefaultMaxRecordBytes
		if limit := c.maxRecordLimit(); limit > 0 && int64(c.MaxRecordBytes) > limit {
			c.MaxRecordBytes = int(limit)
		}
	}
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if c.PreallocBytes == 0 {
		c.PreallocBytes = DefaultPreallocBytes
	}
	if c.LazyDelay == 0 {
		c.LazyDelay = DefaultLazyDelay
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// maxRecordLimit is the largest MaxRecordBytes that fits SegmentBytes.
func (c Config) maxRecordLimit() int64 {
	return min(c.SegmentBytes-segHeaderLen-recHeaderLen, maxPayloadBytes)
}

// Validate reports every field of c that is out of bounds, after zero
// fields take their defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.SegmentBytes < MinSegmentBytes {
		errs = append(errs, fmt.Errorf("SegmentBytes is %d, want at least %d", c.SegmentBytes, MinSegmentBytes))
	}
	if c.MaxRecordBytes < 0 {
		errs = append(errs, fmt.Errorf("MaxRecordBytes is %d, want at least 0", c.MaxRecordBytes))
	} else if limit := c.maxRecordLimit(); int64(c.MaxRecordBytes) > limit {
		errs = append(errs, fmt.Errorf("MaxRecordBytes is %d, want at most %d (SegmentBytes less headers, and %d)",
			c.MaxRecordBytes, max(limit, 0), maxPayloadBytes))
	}
	if c.MaxBatchBytes < 0 {
		errs = append(errs, fmt.Errorf("MaxBatchBytes is %d, want at least 0", c.MaxBatchBytes))
	}
	if len(errs) > 0 {
		return fmt.Errorf("wal: invalid config: %w", errors.Join(errs...))
	}
	return nil
}
