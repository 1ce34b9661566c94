// Command retentionbench measures the store's file size under a steady
// overwrite workload with log retention: N overwrites of K keys, applied to
// an in-process store.DB in batches, with simulated leader times at a fixed
// rate and a fixed dedup window. It prints, every N/20 overwrites, the file
// size, the log's first index and the overwrites per second. Not run in CI.
//
//	go run ./retentionbench -n 10000000 -keys 10000 -retention 1000000
//
// A record goes about two dedup windows after it was written at the
// earliest (store/retain.go), so at -rate tx/s the log holds at least about
// 2 x rate x dedup-window records, whatever the retention: pick a window
// that fits the retention being measured.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
)

func main() {
	n := flag.Int("n", 200_000, "overwrites")
	keys := flag.Int("keys", 10_000, "keys overwritten round robin")
	spec := flag.String("retention", "20000", "store retention: N entries, a duration, N,duration or off (txlogd --log-retention)")
	valueBytes := flag.Int("value-bytes", 100, "bytes of each value")
	batch := flag.Int("batch", 64, "entries per Apply")
	rate := flag.Int("rate", 10_000, "simulated transactions per second: the leader time advances 1/rate s per entry")
	window := flag.Duration("dedup-window", 500*time.Millisecond, "dedup window stamped into each entry")
	dir := flag.String("dir", "", "directory of the store file (default: a new temporary one, removed at the end)")
	flag.Parse()
	if err := run(*n, *keys, *spec, *valueBytes, *batch, *rate, *window, *dir); err != nil {
		log.Fatal(err)
	}
}

func run(n, keys int, spec string, valueBytes, batch, rate int, window time.Duration, dir string) error {
	r, err := store.ParseRetention(spec)
	if err != nil {
		return err
	}
	if n <= 0 || keys <= 0 || batch <= 0 || rate <= 0 || valueBytes < 2 {
		return errors.New("n, keys, batch and rate must be positive, value-bytes at least 2")
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "retentionbench"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	path := filepath.Join(dir, "state.db")
	db, err := store.Open(path, store.Config{NoSync: true, Retention: r})
	if err != nil {
		return err
	}
	defer db.Close()

	value := make([]byte, valueBytes)
	for i := range value {
		value[i] = 'x'
	}
	value[0], value[len(value)-1] = '"', '"'
	t0 := time.Now().UnixNano()
	step := int64(time.Second) / int64(rate)
	fmt.Printf("%d overwrites of %d keys, %d-byte values, retention %s, %d tx/s simulated, dedup window %s\n", n, keys, valueBytes, r, rate, window)
	fmt.Printf("%12s %12s %12s %10s\n", "overwrites", "file_bytes", "first_index", "tx/s")
	every := max(n/20, 1)
	start, last := time.Now(), time.Now()
	entries := make([]store.Entry, 0, batch)
	for i := 1; i <= n; i++ {
		tx := store.Tx{ID: txid.ID(i), Ops: []store.Op{{Kind: store.OpPut, Key: fmt.Sprintf("key-%06d", i%keys), Value: value}}}
		data := store.EncodeCommand(store.Command{Kind: store.KindTx, Time: t0 + int64(i)*step, DedupWindow: window, Payload: store.EncodeTx(tx)})
		entries = append(entries, store.Entry{Index: uint64(i), Term: 1, Data: data})
		if len(entries) == batch || i == n {
			if _, err := db.Apply(entries); err != nil {
				return err
			}
			entries = entries[:0]
		}
		if i%every == 0 || i == n {
			st, err := os.Stat(path)
			if err != nil {
				return err
			}
			first, err := db.Reads().FirstIndex()
			if err != nil {
				return err
			}
			now := time.Now()
			fmt.Printf("%12d %12d %12d %10.0f\n", i, st.Size(), first, float64(every)/now.Sub(last).Seconds())
			last = now
		}
	}
	fmt.Printf("done in %s\n", time.Since(start).Round(time.Millisecond))
	return nil
}
