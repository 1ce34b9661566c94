package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"

	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/prometheus/client_golang/prometheus"
)

// Durable commits without an fsync on the apply goroutine.
//
// bbolt orders a durable commit as: the transaction's pages, fdatasync, its meta
// page, fdatasync. Without the fsyncs (bbolt's NoSync) a machine crash can leave
// a meta page on disk whose pages are not: a torn file. The store opens bbolt
// with NoSync and gets the same guarantee another way, off the apply goroutine:
//
//   - After each commit, the store reads back the commit's meta page (bbolt
//     keeps two meta pages and writes commit txid's to slot txid%2), and a
//     background goroutine fdatasyncs the file and then writes that meta page,
//     with the commit's applied index, to a slot of the side file (path +
//     ".meta", two slots, each with a checksum), fdatasynced. The commit is then
//     durable.
//   - The next commit waits until that is done before bbolt writes anything.
//     While commit k+1 is written, bbolt reuses only pages that commit k no
//     longer references (pages freed by k+1 itself stay pending until later), so
//     commit k's tree stays whole on disk whatever part of k+1 reaches it.
//   - Every Open first writes the side file's newest valid meta page back into
//     its slot of the database file and invalidates the other slot, fdatasyncs,
//     and only then opens it with bbolt: the file is then exactly the last
//     durable commit, and raft replays the entries after its applied index. A
//     side-file slot torn by a crash fails its checksum and the older slot is
//     used: its commit's tree is whole too, because the commit after it could not
//     start before the torn write's sync had finished.
//
// A database file without a side file is one created whole (Open creates a new
// file under a temporary name, syncs and renames it) or one written before the
// side file existed; it is opened as it is and a side file is written for it.
// Config.NoSync turns all of this off (tests and benchmarks).

// metaFileSuffix names the side file of a database file.
const metaFileSuffix = ".meta"

// A side-file slot: magic, txid, applied index, page size, the page, and a
// CRC-32C of everything before it. Slot i starts at i*metaSlotStride, which
// fits bbolt's largest page size.
const (
	metaMagic      = "TXLMETA1"
	metaHeaderSize = 8 + 8 + 8 + 4
	maxPageSize    = 64 << 10
	metaSlotStride = 1 << 17
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// metaFile is an open side file.
type metaFile struct {
	f    *os.File
	next int // the slot the next write goes to
}

// savedMeta is a meta page saved in a side-file slot.
type savedMeta struct {
	txid, applied uint64
	page          []byte
}

func encodeSlot(m savedMeta) []byte {
	b := make([]byte, 0, metaHeaderSize+len(m.page)+4)
	b = append(b, metaMagic...)
	b = binary.BigEndian.AppendUint64(b, m.txid)
	b = binary.BigEndian.AppendUint64(b, m.applied)
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.page)))
	b = append(b, m.page...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeSlot returns the meta page in a slot (the slot's bytes, up to
// metaSlotStride of them), and false for a slot that is empty or torn.
func decodeSlot(b []byte) (savedMeta, bool) {
	if len(b) < metaHeaderSize || string(b[:8]) != metaMagic {
		return savedMeta{}, false
	}
	ps := int(binary.BigEndian.Uint32(b[24:28]))
	if ps < 512 || ps > maxPageSize || len(b) < metaHeaderSize+ps+4 {
		return savedMeta{}, false
	}
	end := metaHeaderSize + ps
	if crc32.Checksum(b[:end], castagnoli) != binary.BigEndian.Uint32(b[end:end+4]) {
		return savedMeta{}, false
	}
	return savedMeta{
		txid:    binary.BigEndian.Uint64(b[8:16]),
		applied: binary.BigEndian.Uint64(b[16:24]),
		page:    b[metaHeaderSize:end:end],
	}, true
}

// readSlots returns the valid slots of a side file's bytes.
func readSlots(b []byte) []savedMeta {
	var ms []savedMeta
	for i := 0; i < 2 && i*metaSlotStride < len(b); i++ {
		if m, ok := decodeSlot(b[i*metaSlotStride : min(len(b), (i+1)*metaSlotStride)]); ok {
			ms = append(ms, m)
		}
	}
	return ms
}

// readMetaFile returns the newest valid slot of the side file at path, and
// false when there is no side file or no valid slot.
func readMetaFile(path string) (savedMeta, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return savedMeta{}, false, nil
	}
	if err != nil {
		return savedMeta{}, false, fmt.Errorf("read %s: %w", path, err)
	}
	var best savedMeta
	found := false
	for _, m := range readSlots(b) {
		if !found || m.txid > best.txid {
			best, found = m, true
		}
	}
	return best, found, nil
}

// openMetaFile opens (creating) the side file at path for writing; the next
// write goes to the slot that does not hold the newest valid meta page. A side
// file it creates has its name made durable (syncDir of its directory) before
// it returns: a database file without a side file is opened as it is, so the
// name must survive before any commit without bbolt's fsyncs relies on it.
func openMetaFile(path string, syncDir func(string) error) (*metaFile, error) {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, fmt.Errorf("create %s: %w", path, err)
		}
	}
	b := make([]byte, 2*metaSlotStride)
	n, _ := f.ReadAt(b, 0)
	mf := &metaFile{f: f}
	var newest savedMeta
	for i := 0; i < 2 && i*metaSlotStride < n; i++ {
		if m, ok := decodeSlot(b[i*metaSlotStride : min(n, (i+1)*metaSlotStride)]); ok && m.txid >= newest.txid {
			newest, mf.next = m, 1-i
		}
	}
	return mf, nil
}

// write saves m in the next slot and fdatasyncs the side file.
func (mf *metaFile) write(m savedMeta) error {
	if _, err := mf.f.WriteAt(encodeSlot(m), int64(mf.next)*metaSlotStride); err != nil {
		return fmt.Errorf("write %s: %w", mf.f.Name(), err)
	}
	if err := mf.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", mf.f.Name(), err)
	}
	mf.next = 1 - mf.next
	return nil
}

func (mf *metaFile) close() error { return mf.f.Close() }

// rollBackToSaved puts the database file at path at the commit saved in its
// side file: the saved meta page goes back into its slot, the other slot is
// invalidated, and the file is fdatasynced. It returns false when there is no
// side file with a valid slot.
func rollBackToSaved(path string) (bool, error) {
	m, ok, err := readMetaFile(path + metaFileSuffix)
	if err != nil || !ok {
		return false, err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	ps := int64(len(m.page))
	slot := int64(m.txid % 2)
	if _, err := f.WriteAt(m.page, slot*ps); err != nil {
		return false, fmt.Errorf("restore meta page of %s: %w", path, err)
	}
	if _, err := f.WriteAt(make([]byte, ps), (1-slot)*ps); err != nil {
		return false, fmt.Errorf("invalidate meta page of %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return false, fmt.Errorf("sync %s: %w", path, err)
	}
	return true, nil
}

// durability makes a DB's commits durable in the background. Its methods are
// called with DB.wmu held, or before the DB is shared.
type durability struct {
	path     string
	pageSize int
	raw      *os.File // the database file, read-only, for the meta pages
	meta     *metaFile
	fsync    prometheus.Observer // the file's fdatasyncs; nil without Config.Metrics

	syncing chan struct{} // closed when the running sync is done; nil when none ran
	mu      sync.Mutex    // guards err
	err     error         // the first failed sync; every later commit fails

	// onDurable, for tests, runs after each sync, before the next commit may
	// write: the files then hold exactly the commit that was made durable.
	onDurable func(applied uint64)
}

func newDurability(path string, pageSize int, syncDir func(string) error, fsync prometheus.Observer) (*durability, error) {
	raw, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	mf, err := openMetaFile(path+metaFileSuffix, syncDir)
	if err != nil {
		raw.Close()
		return nil, err
	}
	return &durability{path: path, pageSize: pageSize, raw: raw, meta: mf, fsync: fsync}, nil
}

// wait waits for the running sync and returns the first sync error.
func (d *durability) wait() error {
	if d.syncing != nil {
		<-d.syncing
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// committed starts making the commit with txid and applied index durable, in
// the background. Call it right after the commit, before another can start:
// it reads the commit's meta page now.
func (d *durability) committed(b *bolt.DB, txid, applied uint64, durable func(uint64)) error {
	page := make([]byte, d.pageSize)
	if _, err := d.raw.ReadAt(page, int64(txid%2)*int64(d.pageSize)); err != nil {
		return fmt.Errorf("read meta page of %s: %w", d.path, err)
	}
	done := make(chan struct{})
	d.syncing = done
	go func() {
		defer close(done)
		start := time.Now()
		err := b.Sync()
		if d.fsync != nil {
			d.fsync.Observe(time.Since(start).Seconds())
		}
		if err == nil {
			err = d.meta.write(savedMeta{txid: txid, applied: applied, page: page})
		}
		if err != nil {
			d.mu.Lock()
			if d.err == nil {
				d.err = fmt.Errorf("make commit %d of %s durable: %w", txid, d.path, err)
			}
			d.mu.Unlock()
			return
		}
		durable(applied)
		if d.onDurable != nil {
			d.onDurable(applied)
		}
	}()
	return nil
}

func (d *durability) close() error {
	err := d.wait()
	return errors.Join(err, d.raw.Close(), d.meta.close())
}
