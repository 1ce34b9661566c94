package store

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txlog/txlog/txid"
)

// BenchmarkApply applies single-op transactions, each putting a 256-byte value to
// its own key, in batches of 1 and 64, with fsync on. It reports the time per
// entry: compare the two batch sizes (their ratio is the gain of batching), not
// absolute numbers across machines.
func BenchmarkApply(b *testing.B) {
	value := `"` + strings.Repeat("v", 254) + `"`
	for _, batch := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			db, err := Open(filepath.Join(b.TempDir(), "state.db"), Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			entries := make([]Entry, batch)
			var index uint64
			b.SetBytes(int64(batch * len(value)))
			for b.Loop() {
				for i := range entries {
					index++
					entries[i] = txEntry(index, txid.ID(index), "", put(fmt.Sprintf("key-%d", index), value))
				}
				if _, err := db.Apply(entries); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(index), "ns/entry")
		})
	}
}
