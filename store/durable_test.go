package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/txlog/txlog/txid"
)

// TestDurableCrashImages acts out machine crashes against the durable commits
// of durable.go. At random points it builds the file a machine crash could
// leave: every page either as it was when the last commit was made durable,
// or as it is now (pages of the commit after it, written without an fsync,
// that may or may not have reached the disk), meta pages included, with the
// side file as that last sync left it. Opening such an image must give exactly
// the durable commit's state, a sound bbolt file, and after the entries since
// are applied again (as raft does), the same state as the run without the
// crash.
func TestDurableCrashImages(t *testing.T) {
	mixed := 0 // images that took pages of a commit not yet durable
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			mixed += testDurableCrashImages(t, seed)
		})
	}
	if mixed < 20 {
		t.Fatalf("%d crash images mixed in pages of a commit that was not durable: the test tests too little", mixed)
	}
}

func testDurableCrashImages(t *testing.T, seed uint64) (mixed int) {
	rnd := rand.New(rand.NewPCG(seed, 77))
	// Commits at every Apply (seed 0, 3) or every few milliseconds; tiny kv
	// flush limits, so that flushes rewrite pages all over the file.
	cfg := Config{CommitInterval: time.Duration(seed%3) * time.Millisecond, KVFlushRecords: 10 + rnd.IntN(30), KVFlushStepKeys: 3 + rnd.IntN(10)}
	path := filepath.Join(t.TempDir(), "state.db")
	db := openCfg(t, path, cfg)
	defer func() { db.Close() }()

	type image struct {
		file, side []byte
		applied    uint64
	}
	var mu sync.Mutex
	var durable image
	capture := func(applied uint64) {
		file, err1 := os.ReadFile(path)
		side, err2 := os.ReadFile(path + metaFileSuffix)
		if err1 != nil || err2 != nil {
			panic(fmt.Sprint(err1, err2))
		}
		mu.Lock()
		durable = image{file: file, side: side, applied: applied}
		mu.Unlock()
	}
	capture(db.AppliedIndex())
	db.dur.onDurable = capture

	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i)
	}
	model := map[string]modelKV{}
	var history []Entry
	var index uint64
	var id txid.ID
	// Pages are mixed at the file system's block size, not bbolt's (16 KiB
	// by default): a machine crash may tear a bbolt page larger than a block.
	ps := os.Getpagesize()
	if bp := db.bolt.Info().PageSize; bp < ps {
		ps = bp
	}
	images := 0
	for batch := range 120 {
		var entries []Entry
		for range 1 + rnd.IntN(8) {
			index++
			id++
			tx := Tx{ID: id}
			for range 1 + rnd.IntN(3) {
				k := keys[rnd.IntN(len(keys))]
				op := put(k, strconv.Quote(fmt.Sprint("v", index, "-", rnd.IntN(1e6))))
				if rnd.IntN(5) == 0 {
					op = del(k)
				}
				tx.Ops = append(tx.Ops, op)
			}
			entries = append(entries, txEntry(index, tx.ID, "", tx.Ops...))
			modelApply(model, index, tx)
		}
		applyOK(t, db, entries...)
		history = append(history, entries...)
		if rnd.IntN(4) != 0 {
			continue
		}

		// The crash image. No commit may run while it is read (the idle timer
		// commits too): the file then holds the last commit whole, and the
		// durable one is that commit or the one before.
		db.wmu.Lock()
		now, err := os.ReadFile(path)
		mu.Lock()
		d := durable
		mu.Unlock()
		db.wmu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		img := make([]byte, max(len(d.file), len(now)))
		took := false
		for off := 0; off < len(img); off += ps {
			src := d.file
			if rnd.IntN(2) == 0 {
				src = now
			}
			if off < len(src) {
				copy(img[off:off+ps], src[off:min(off+ps, len(src))])
			}
			if off < len(now) && !bytes.Equal(img[off:min(off+ps, len(img))], pageOf(d.file, off, ps)) {
				took = true
			}
		}
		if took {
			mixed++
		}
		images++
		dir := t.TempDir()
		crashed := filepath.Join(dir, "state.db")
		if err := os.WriteFile(crashed, img, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(crashed+metaFileSuffix, d.side, 0o600); err != nil {
			t.Fatal(err)
		}
		re := openCfg(t, crashed, cfg)
		if got := re.AppliedIndex(); got != d.applied {
			t.Fatalf("batch %d: crash image opened at applied index %d, want the durable %d", batch, got, d.applied)
		}
		if err := re.view(func(tx *bolt.Tx) error {
			for err := range tx.Check() {
				return err
			}
			return nil
		}); err != nil {
			t.Fatalf("batch %d: crash image at index %d is not a sound bbolt file: %v", batch, d.applied, err)
		}
		var again []Entry
		for _, e := range history {
			if e.Index > d.applied {
				again = append(again, e)
			}
		}
		applyOK(t, re, again...)
		checkModel(t, re, keys, model, fmt.Sprintf("batch %d, crash image at %d", batch, d.applied))
		if err := re.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if images < 10 {
		t.Fatalf("%d crash images: the test tests too little", images)
	}
	t.Logf("commit interval %v: %d crash images, %d mixed with pages not durable", cfg.CommitInterval, images, mixed)
	return mixed
}

// pageOf returns the page of b at off, short or empty past its end.
func pageOf(b []byte, off, ps int) []byte {
	if off >= len(b) {
		return nil
	}
	return b[off:min(off+ps, len(b))]
}

// TestDurableSideFile checks the side file's slots: the newest valid one wins,
// a torn one is skipped, and a database file created anew drops a side file
// left from another.
func TestDurableSideFile(t *testing.T) {
	page := bytes.Repeat([]byte{7}, 4096)
	a, b := encodeSlot(savedMeta{txid: 5, applied: 50, page: page}), encodeSlot(savedMeta{txid: 6, applied: 60, page: page})
	file := make([]byte, 2*metaSlotStride)
	copy(file, a)
	copy(file[metaSlotStride:], b)
	path := filepath.Join(t.TempDir(), "side")
	check := func(want uint64, ok bool) {
		t.Helper()
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		m, found, err := readMetaFile(path)
		if err != nil || found != ok || (ok && m.applied != want) {
			t.Fatalf("readMetaFile = %+v, %v, %v; want applied %d, found %v", m.applied, found, err, want, ok)
		}
	}
	check(60, true)
	file[metaSlotStride+100] ^= 1 // the newer slot torn
	check(50, true)
	file[100] ^= 1
	check(0, false)

	// A stale side file next to a new database file is removed, not applied.
	dir := t.TempDir()
	stale := filepath.Join(dir, "state.db")
	if err := os.WriteFile(stale+metaFileSuffix, file, 0o600); err != nil {
		t.Fatal(err)
	}
	copy(file, a)
	if err := os.WriteFile(stale+metaFileSuffix, file[:metaSlotStride], 0o600); err != nil {
		t.Fatal(err)
	}
	db := openCfg(t, stale, Config{})
	defer db.Close()
	applyOK(t, db, txEntry(1, 1, "", put("x", "1")))
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	m, ok, err := readMetaFile(stale + metaFileSuffix)
	if err != nil || !ok || m.applied != 1 {
		t.Fatalf("side file after a sync: %+v, %v, %v; want applied 1", m.applied, ok, err)
	}
}
