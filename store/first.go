package store

import bolt "go.etcd.io/bbolt"

// FirstIndex returns the index of the first record of the log, 1 when the
// log is empty: the records below it are gone (retention) or never were.
func (db *DB) FirstIndex() (uint64, error) {
	first := uint64(1)
	err := db.view(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketLog).Cursor().First(); k != nil {
			first = u64(k)
		}
		return nil
	})
	return first, err
}
