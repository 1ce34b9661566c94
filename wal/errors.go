package wal

import (
	"errors"
	"fmt"
)

// ErrClosed is returned by Append, AppendBatch and MarkDone once Close has
// been called. An Append that gets it wrote nothing.
var ErrClosed = errors.New("wal: closed")

// ErrTooLarge is returned by Append and AppendBatch for a payload longer
// than Config.MaxRecordBytes. Nothing of the call is written.
var ErrTooLarge = errors.New("wal: payload too large")

// CorruptError reports a segment that Open cannot trust: a damaged record
// that is not a torn tail (see the package documentation for the rule), a
// damaged segment header, or records out of sequence. Open never skips such
// a record; an operator must look at the file.
type CorruptError struct {
	// File is the segment's path: the directory given to Open joined with
	// the segment's name.
	File string
	// Offset is the byte offset in File of the first record, or header,
	// that failed to decode or to check.
	Offset int64
	// Err says what was wrong there.
	Err error
}

// Error names the file and the offset.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("wal: corrupt segment %s at offset %d: %v", e.File, e.Offset, e.Err)
}

// Unwrap returns e.Err.
func (e *CorruptError) Unwrap() error { return e.Err }
