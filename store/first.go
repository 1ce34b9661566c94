package store

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// FirstIndex returns the index of the first record of the log, 1 when the
// log is empty: the records below it are gone (retention) or never were.
func (r *Reader) FirstIndex() (uint64, error) {
	db := r.db
	first := uint64(1)
	err := db.view(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketLog).Cursor().First(); k != nil {
			first = u64(k)
		}
		return nil
	})
	return first, err
}

// metaLogFirst is the meta key of the index below which retention dropped
// log records: index (8), one past the last record dropped. Absent: none
// were dropped.
var metaLogFirst = []byte("log_first")

// RetainedFrom returns the index from which the log holds every record it
// ever had: retention dropped records below it, none at or after it. It is 1
// when none were dropped. Unlike FirstIndex it tells the gaps of the log
// (only transaction entries have records) from dropped records, so a reader
// from an index below it is told the log is compacted, and one from any other
// index is not. A broken or closed DB gives 1.
func (r *Reader) RetainedFrom() uint64 {
	db := r.db
	from := uint64(1)
	_ = db.view(func(tx *bolt.Tx) error {
		var err error
		from, err = readLogFirst(tx)
		return err
	})
	return max(from, 1)
}

// readLogFirst returns the index under metaLogFirst, 1 when there is none.
func readLogFirst(tx *bolt.Tx) (uint64, error) {
	v := tx.Bucket(bucketMeta).Get(metaLogFirst)
	switch {
	case v == nil:
		return 1, nil
	case len(v) != 8:
		return 1, fmt.Errorf("%w: log_first of %d bytes", ErrCorrupt, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
