package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/txid"
	bolt "go.etcd.io/bbolt"
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

// BenchmarkApplyRealistic applies what a loaded node applies: batches of 32
// single-op transactions with random idempotency keys, on random keys out of
// 100,000, without fsync (node's default; the Raft log is the durable copy).
// Besides the time per entry it reports the CPU time per entry (steadier on a
// shared machine), the longest Apply that did a step of a kv overlay flush
// and the longest that did not, the file's size and the pages in use per entry, which
// bound how far the store scales. With the environment variable NOIDEM set,
// the transactions have no idempotency keys; KEYS sets the number of keys
// (default 100,000), KVFLUSHKEYS Config.KVFlushKeys, KVFLUSHSTEP
// Config.KVFlushStepKeys, KVFLUSHRECORDS Config.KVFlushRecords, KVFLUSHLOGBYTES
// Config.KVFlushLogBytes and COMMITINTERVAL (a duration) Config.CommitInterval.
func BenchmarkApplyRealistic(b *testing.B) {
	value := `"` + strings.Repeat("v", 254) + `"`
	noIdem := os.Getenv("NOIDEM") != ""
	nkeys, _ := strconv.Atoi(os.Getenv("KEYS"))
	if nkeys <= 0 {
		nkeys = 100_000
	}
	flushKeys, _ := strconv.Atoi(os.Getenv("KVFLUSHKEYS"))
	flushStep, _ := strconv.Atoi(os.Getenv("KVFLUSHSTEP"))
	flushRecords, _ := strconv.Atoi(os.Getenv("KVFLUSHRECORDS"))
	flushLogBytes, _ := strconv.Atoi(os.Getenv("KVFLUSHLOGBYTES"))
	interval, _ := time.ParseDuration(os.Getenv("COMMITINTERVAL"))
	path := filepath.Join(b.TempDir(), "state.db")
	db, err := Open(path, Config{NoSync: true, KVFlushKeys: max(flushKeys, 0), KVFlushStepKeys: max(flushStep, 0),
		KVFlushRecords: max(flushRecords, 0), KVFlushLogBytes: max(flushLogBytes, 0), CommitInterval: max(interval, 0)})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rnd := rand.New(rand.NewPCG(1, 2))
	entries := make([]Entry, 32)
	var index uint64
	var slowest, slowestFlush time.Duration
	flushes, steps := 0, 0
	cpu := cpuTime()
	for b.Loop() {
		for i := range entries {
			index++
			idem := fmt.Sprintf("%016x%016x", rnd.Uint64(), rnd.Uint64())
			if noIdem {
				idem = ""
			}
			entries[i] = txEntry(index, txid.ID(index<<12|uint64(index%3)), idem, put(fmt.Sprintf("key-%d", rnd.IntN(nkeys)), value))
		}
		redo, flushing := db.kv.records, db.kv.frozen != nil
		start := time.Now()
		if _, err := db.Apply(entries); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		started := db.kv.records < redo // a flush began, and maybe ended
		if flushing || started {
			steps++
			slowestFlush = max(slowestFlush, took)
		} else {
			slowest = max(slowest, took)
		}
		if (flushing || started) && db.kv.frozen == nil {
			flushes++
		}
	}
	cpu = cpuTime() - cpu
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(index), "ns/entry")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(index), "cpu-ns/entry")
	b.ReportMetric(float64(slowest.Microseconds())/1000, "max-apply-ms")
	b.ReportMetric(float64(slowestFlush.Microseconds())/1000, "max-flush-apply-ms")
	b.ReportMetric(float64(flushes), "flushes")
	b.ReportMetric(float64(steps), "flush-steps")
	if err := db.Sync(); err != nil {
		b.Fatal(err)
	}
	if st, err := os.Stat(path); err == nil {
		b.ReportMetric(float64(st.Size())/float64(index), "file-bytes/entry")
	}
	// The file grows in steps of 16 MiB; bbolt's high-water mark is exact.
	var used int64
	if err := db.view(func(tx *bolt.Tx) error { used = tx.Size(); return nil }); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(used)/float64(index), "used-bytes/entry")
}

// BenchmarkKVReplay measures what Open and Restore add to rebuild the kv
// overlay at the default limits: the replay of the largest redo log they allow
// (DefaultKVFlushRecords records of BenchmarkApplyRealistic's transactions,
// which stay under DefaultKVFlushLogBytes). It reports the records replayed and
// the heap the overlay takes.
func BenchmarkKVReplay(b *testing.B) {
	value := `"` + strings.Repeat("v", 254) + `"`
	db, err := Open(filepath.Join(b.TempDir(), "state.db"), Config{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rnd := rand.New(rand.NewPCG(1, 2))
	entries := make([]Entry, 32)
	var index uint64
	for index+uint64(len(entries)) < DefaultKVFlushRecords {
		for i := range entries {
			index++
			idem := fmt.Sprintf("%016x%016x", rnd.Uint64(), rnd.Uint64())
			entries[i] = txEntry(index, txid.ID(index<<12|uint64(index%3)), idem, put(fmt.Sprintf("key-%d", rnd.IntN(100000)), value))
		}
		if _, err := db.Apply(entries); err != nil {
			b.Fatal(err)
		}
	}
	var ov *kvOverlay
	var heap uint64
	var replay, replayCPU time.Duration
	for b.Loop() {
		ov = nil
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start, startCPU := time.Now(), cpuTime()
		err := db.view(func(tx *bolt.Tx) error {
			st, err := readState(tx)
			if err != nil {
				return err
			}
			if st.kvApplied != 0 {
				return fmt.Errorf("kv_applied %d: the overlay was flushed", st.kvApplied)
			}
			ov, err = loadKVOverlay(tx, st, nil)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		replay += time.Since(start)
		replayCPU += cpuTime() - startCPU
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = after.HeapAlloc - before.HeapAlloc
	}
	b.ReportMetric(float64(replay.Milliseconds())/float64(b.N), "replay-ms")
	b.ReportMetric(float64(replayCPU.Milliseconds())/float64(b.N), "replay-cpu-ms")
	b.ReportMetric(float64(ov.records), "records")
	b.ReportMetric(float64(ov.logBytes)/(1<<20), "log-MiB")
	b.ReportMetric(float64(len(ov.keys)), "keys")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
	runtime.KeepAlive(ov)
}

// BenchmarkTxByIdempotencyKeyMiss looks up idempotency keys that no transaction
// has, as each receiving node does for a client's first submission
// (node.SubmitBatch): the in-memory index answers without a bbolt read
// transaction.
func BenchmarkTxByIdempotencyKeyMiss(b *testing.B) {
	db, err := Open(filepath.Join(b.TempDir(), "state.db"), Config{NoSync: true, CommitInterval: 100 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for i := uint64(1); i <= 10_000; i++ {
		if _, err := db.Apply([]Entry{txEntry(i, txid.ID(i<<12|1), fmt.Sprint("k", i), put(fmt.Sprint("key", i), `"v"`))}); err != nil {
			b.Fatal(err)
		}
	}
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprint("miss", i)
	}
	i := 0
	for b.Loop() {
		if _, err := db.Reads().TxByIdempotencyKey(keys[i%len(keys)]); !errors.Is(err, ErrNotFound) {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkGetFromBucket reads keys that only the kv bucket holds (none in
// the overlay): 100,000 keys of 256-byte values, written by single-op
// transactions, read in random order. format=2 is the store as it writes the
// bucket (the value read from the log record, kvValueAt); format=1 rewrites
// every entry with its value inline, as schema 3 wrote them, for comparison.
func BenchmarkGetFromBucket(b *testing.B) {
	const nkeys = 100_000
	value := `"` + strings.Repeat("v", 254) + `"`
	for _, format := range []int{kvByRef, kvInline} {
		b.Run(fmt.Sprintf("format=%d", format), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "state.db")
			cfg := Config{NoSync: true, CommitInterval: 100 * time.Millisecond}
			db, err := Open(path, cfg)
			if err != nil {
				b.Fatal(err)
			}
			entries := make([]Entry, 0, 1000)
			for i := uint64(1); i <= nkeys; i++ {
				entries = append(entries, txEntry(i, txid.ID(i<<12|1), "", put(fmt.Sprint("key", i), value)))
				if len(entries) == cap(entries) {
					if _, err := db.Apply(entries); err != nil {
						b.Fatal(err)
					}
					entries = entries[:0]
				}
			}
			if err := db.Close(); err != nil { // flushes the overlay
				b.Fatal(err)
			}
			if format == kvInline {
				editBolt(b, path, func(tx *bolt.Tx) error {
					kv := tx.Bucket(bucketKV)
					for i := 1; i <= nkeys; i++ {
						k := fmt.Sprint("key", i)
						if err := kv.Put([]byte(k), encodeKVInline(1, uint64(i), []byte(value))); err != nil {
							return err
						}
					}
					return nil
				})
			}
			if db, err = Open(path, cfg); err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			rnd := rand.New(rand.NewPCG(1, 2))
			for b.Loop() {
				k := fmt.Sprint("key", 1+rnd.IntN(nkeys))
				if kv, err := db.Reads().Get(k); err != nil || len(kv.Value) != len(value) {
					b.Fatalf("Get(%q) = %+v, %v", k, kv, err)
				}
			}
		})
	}
}

// BenchmarkApplyDuplicate applies resubmissions, under their txids and with
// their own bytes, of 10,000 recorded single-op transactions, in batches of
// 64 without fsync: the path that reads the recorded transaction and
// compares it (SameTx) before answering a duplicate. It reports the time per
// entry.
func BenchmarkApplyDuplicate(b *testing.B) {
	value := `"` + strings.Repeat("v", 254) + `"`
	db, err := Open(filepath.Join(b.TempDir(), "state.db"), Config{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const recorded = 10_000
	var index uint64
	entries := make([]Entry, 0, 64)
	for id := 1; id <= recorded; id++ {
		index++
		entries = append(entries, txEntry(index, txid.ID(id), "", put(fmt.Sprintf("key-%d", id), value)))
		if len(entries) == cap(entries) || id == recorded {
			if _, err := db.Apply(entries); err != nil {
				b.Fatal(err)
			}
			entries = entries[:0]
		}
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	applied := 0
	for b.Loop() {
		entries = entries[:0]
		for range 64 {
			index++
			id := 1 + rnd.IntN(recorded)
			entries = append(entries, txEntry(index, txid.ID(id), "", put(fmt.Sprintf("key-%d", id), value)))
		}
		res, err := db.Apply(entries)
		if err != nil {
			b.Fatal(err)
		}
		if !res[0].Duplicate {
			b.Fatalf("Apply() = %+v, want a duplicate", res[0])
		}
		applied += len(entries)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(applied), "ns/entry")
}
