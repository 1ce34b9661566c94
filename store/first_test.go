package store

import (
	"testing"

	"github.com/txlog/txlog/txid"
	bolt "go.etcd.io/bbolt"
)

// trimLogOK commits what Apply left open and drops the log records below
// before as retention does, recording RetainedFrom.
func trimLogOK(t *testing.T, db *DB, before uint64) {
	t.Helper()
	err := db.commits.withWriter(func() error {
		if db.wtx != nil {
			if err := db.commits.commitLocked(); err != nil {
				return err
			}
		}
		return db.bolt.Update(func(tx *bolt.Tx) error {
			log := tx.Bucket(bucketLog)
			for i := uint64(1); i < before; i++ {
				if err := log.Delete(u64Key(i)); err != nil {
					return err
				}
			}
			return tx.Bucket(bucketMeta).Put(metaLogFirst, u64Key(before))
		})
	})
	if err != nil {
		t.Fatalf("trim below %d: %v", before, err)
	}
}

func TestRetainedFrom(t *testing.T) {
	db := openTest(t)
	if got := db.Reads().RetainedFrom(); got != 1 {
		t.Fatalf("RetainedFrom of an empty log = %d, want 1", got)
	}
	// The log has gaps: a first record at 3 is no dropped record.
	for i := uint64(3); i <= 7; i++ {
		applyOK(t, db, txEntry(i, txid.ID(i), "", put("k", "v")))
	}
	if got, _ := db.Reads().FirstIndex(); got != 3 {
		t.Fatalf("FirstIndex = %d, want 3", got)
	}
	if got := db.Reads().RetainedFrom(); got != 1 {
		t.Fatalf("RetainedFrom of a whole log = %d, want 1", got)
	}
	trimLogOK(t, db, 5)
	if got := db.Reads().RetainedFrom(); got != 5 {
		t.Fatalf("RetainedFrom after dropping below 5 = %d, want 5", got)
	}
	recs, next, err := db.Reads().Log(1, 100)
	if err != nil || len(recs) != 3 || recs[0].Index != 5 || next != 8 {
		t.Fatalf("Log(1) after the drop = %d records, next %d, %v; want 5..7, next 8", len(recs), next, err)
	}
}
