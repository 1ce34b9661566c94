package store

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// A backup file is a whole store with a header and a checksum:
//
//	magic "TXLOGBAK" (8) | format version (4, big-endian) | header length (4)
//	header: JSON, BackupHeader
//	body: BackupHeader.BodyBytes bytes, a complete bbolt file of the store
//	SHA-256 (32) of every byte before it
//
// The body is the store's committed state in one bbolt read transaction
// (tx.WriteTo): consistent, and taken without holding up Apply. It carries
// every bucket: the log, the dedup tables, kv, the node registry, leases,
// consumer offsets and pending callbacks. bbolt has no checksums on its data
// pages, so the trailing SHA-256 is what finds a flipped byte.

// BackupFormat is the version of the backup file format this store writes
// and reads.
const BackupFormat = 1

// backupMagic starts every backup file.
var backupMagic = []byte("TXLOGBAK")

// maxBackupHeaderBytes bounds the JSON header a reader accepts.
const maxBackupHeaderBytes = 1 << 20

// ErrBadBackup is wrapped by every error about a backup file that is not
// sound: a wrong magic or version, a torn file, a checksum mismatch, or a
// body that is not a sound store.
var ErrBadBackup = errors.New("bad backup")

// BackupHeader describes a backup.
type BackupHeader struct {
	Format    int    `json:"format"`
	Index     uint64 `json:"index"` // the applied index of the state
	Term      uint64 `json:"term"`  // the term of the entry at Index
	ClusterID string `json:"cluster_id,omitempty"`
	NodeID    string `json:"node_id,omitempty"` // the node it was taken from
	Created   string `json:"created,omitempty"` // RFC 3339, the taking node's clock
	// MaxTxID is the largest txid in the dedup tables (0: none), for the
	// txid generator of a restored node to start past.
	MaxTxID uint64 `json:"max_txid"`
	// Nodes is the node registry: node ID → txid node number.
	Nodes     map[string]uint16 `json:"nodes"`
	BodyBytes int64             `json:"body_bytes"`
}

// BackupInfo is what the caller adds to a backup's header.
type BackupInfo struct {
	ClusterID, NodeID, Created string
}

// Backup writes a backup of the store's last committed state to w and
// returns its header. Safe from any goroutine while Apply goes on: it reads
// one bbolt read transaction, which Apply does not wait for. Until it
// returns, bbolt cannot reuse the pages the transaction sees.
func (db *DB) Backup(w io.Writer, info BackupInfo) (BackupHeader, error) {
	db.mu.RLock()
	if db.bolt == nil {
		db.mu.RUnlock()
		return BackupHeader{}, ErrClosed
	}
	tx, err := db.bolt.Begin(false)
	db.mu.RUnlock()
	if err != nil {
		return BackupHeader{}, fmt.Errorf("backup %s: %w", db.path, err)
	}
	defer tx.Rollback()
	h, err := backupHeader(tx, info)
	if err != nil {
		return BackupHeader{}, fmt.Errorf("backup %s: %w", db.path, err)
	}
	hb, err := json.Marshal(h)
	if err != nil {
		return BackupHeader{}, err
	}
	sum := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, sum), 1<<20)
	var pre [16]byte
	copy(pre[:], backupMagic)
	binary.BigEndian.PutUint32(pre[8:], BackupFormat)
	binary.BigEndian.PutUint32(pre[12:], uint32(len(hb)))
	bw.Write(pre[:])
	bw.Write(hb)
	if _, err := tx.WriteTo(bw); err != nil {
		return BackupHeader{}, fmt.Errorf("backup %s at index %d: %w", db.path, h.Index, err)
	}
	if err := bw.Flush(); err != nil {
		return BackupHeader{}, fmt.Errorf("backup %s at index %d: %w", db.path, h.Index, err)
	}
	if _, err := w.Write(sum.Sum(nil)); err != nil {
		return BackupHeader{}, fmt.Errorf("backup %s at index %d: %w", db.path, h.Index, err)
	}
	return h, nil
}

// backupHeader reads the header of a backup of tx's state.
func backupHeader(tx *bolt.Tx, info BackupInfo) (BackupHeader, error) {
	st, err := readState(tx)
	if err != nil {
		return BackupHeader{}, err
	}
	h := BackupHeader{
		Format: BackupFormat, Index: st.index, Term: st.term,
		ClusterID: info.ClusterID, NodeID: info.NodeID, Created: info.Created,
		Nodes: map[string]uint16{}, BodyBytes: tx.Size(),
	}
	if k, _ := tx.Bucket(bucketTxs).Cursor().Last(); len(k) == 8 {
		h.MaxTxID = binary.BigEndian.Uint64(k)
	}
	err = tx.Bucket(bucketNodes).ForEach(func(k, v []byte) error {
		n, err := DecodeNode(v)
		if err != nil {
			return err
		}
		h.Nodes[string(k)] = n.TxIDNode
		return nil
	})
	return h, err
}

// hashingReader hashes what it reads.
type hashingReader struct {
	r io.Reader
	h hash.Hash
}

func (hr hashingReader) Read(p []byte) (int, error) {
	n, err := hr.r.Read(p)
	hr.h.Write(p[:n])
	return n, err
}

// ReadBackup reads a backup from r, copies its body to body (io.Discard
// to only check it), and checks its checksum and that nothing follows it.
// An error about the file itself wraps ErrBadBackup. The body is not
// checked as a store: CheckBackupBody does that on the copy.
func ReadBackup(r io.Reader, body io.Writer) (BackupHeader, error) {
	sum := sha256.New()
	hr := hashingReader{r: bufio.NewReaderSize(r, 1<<20), h: sum}
	bad := func(format string, args ...any) (BackupHeader, error) {
		return BackupHeader{}, fmt.Errorf("%w: %s", ErrBadBackup, fmt.Sprintf(format, args...))
	}
	var pre [16]byte
	if _, err := io.ReadFull(hr, pre[:]); err != nil {
		return bad("read the first %d bytes: %v", len(pre), err)
	}
	if !bytes.Equal(pre[:8], backupMagic) {
		return bad("magic %q, want %q: not a txlog backup", pre[:8], backupMagic)
	}
	if v := binary.BigEndian.Uint32(pre[8:]); v != BackupFormat {
		return bad("format version %d, this build reads %d", v, BackupFormat)
	}
	hlen := binary.BigEndian.Uint32(pre[12:])
	if hlen > maxBackupHeaderBytes {
		return bad("header of %d bytes, at most %d", hlen, maxBackupHeaderBytes)
	}
	hb := make([]byte, hlen)
	if _, err := io.ReadFull(hr, hb); err != nil {
		return bad("read the header: %v", err)
	}
	var h BackupHeader
	if err := json.Unmarshal(hb, &h); err != nil {
		return bad("header: %v", err)
	}
	if h.Format != BackupFormat {
		return bad("header says format %d, want %d", h.Format, BackupFormat)
	}
	if h.BodyBytes <= 0 {
		return bad("header says the body has %d bytes", h.BodyBytes)
	}
	n, err := io.CopyN(body, hr, h.BodyBytes)
	if err != nil {
		if n < h.BodyBytes && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
			return bad("truncated: %d of the body's %d bytes", n, h.BodyBytes)
		}
		return BackupHeader{}, fmt.Errorf("read backup body: %w", err)
	}
	want := sum.Sum(nil)
	var got [sha256.Size]byte
	if _, err := io.ReadFull(hr.r, got[:]); err != nil {
		return bad("truncated: no checksum after the body (%v)", err)
	}
	if !bytes.Equal(got[:], want) {
		return bad("SHA-256 checksum %x, the contents give %x", got, want)
	}
	if m, _ := io.Copy(io.Discard, io.LimitReader(hr.r, 1)); m != 0 {
		return bad("bytes after the checksum")
	}
	return h, nil
}

// CheckBackupBody checks that the file at path, a backup's body, is a sound
// store that Open would accept: its length, its pages, its buckets, its
// schema and the log records that rebuild the kv overlay, and that its
// applied index and term are the header's.
func CheckBackupBody(path string, h BackupHeader) error {
	if err := checkLength(path); err != nil {
		return fmt.Errorf("%w: body: %w", ErrBadBackup, err)
	}
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return fmt.Errorf("%w: body: %w", ErrBadBackup, err)
	}
	defer b.Close()
	return b.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			return fmt.Errorf("%w: body: %w", ErrBadBackup, errors.Join(errs...))
		}
		st, err := readState(tx)
		if err != nil {
			return fmt.Errorf("%w: body: %w", ErrBadBackup, err)
		}
		if st.index != h.Index || st.term != h.Term {
			return fmt.Errorf("%w: body at index %d term %d, header says %d term %d", ErrBadBackup, st.index, st.term, h.Index, h.Term)
		}
		if _, err := loadKVOverlay(tx, st, nil); err != nil {
			return fmt.Errorf("%w: body: %w", ErrBadBackup, err)
		}
		return nil
	})
}

// VerifyBackupFile checks the backup file at path whole: its header, its
// checksum, and its body as a store (in a temporary file in tmpDir, removed
// after). It returns the header.
func VerifyBackupFile(path, tmpDir string) (BackupHeader, error) {
	f, err := os.Open(path)
	if err != nil {
		return BackupHeader{}, err
	}
	defer f.Close()
	tmp, err := os.CreateTemp(tmpDir, ".verify-*")
	if err != nil {
		return BackupHeader{}, err
	}
	defer os.Remove(tmp.Name())
	h, err := ReadBackup(f, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return BackupHeader{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := CheckBackupBody(tmp.Name(), h); err != nil {
		return BackupHeader{}, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// InstallBackup checks the backup file at path and puts its body in place
// as the store file dbPath, which must not exist: written to a temporary
// file next to it, fsynced, checked, renamed, and the directory fsynced
// with syncDir. It returns the header.
func InstallBackup(path, dbPath string, syncDir func(string) error) (BackupHeader, error) {
	if _, err := os.Stat(dbPath); !errors.Is(err, os.ErrNotExist) {
		return BackupHeader{}, fmt.Errorf("install backup: %s exists", dbPath)
	}
	f, err := os.Open(path)
	if err != nil {
		return BackupHeader{}, err
	}
	defer f.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dbPath), filepath.Base(dbPath)+restoreTempPattern)
	if err != nil {
		return BackupHeader{}, err
	}
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp.Name())
		}
	}()
	h, err := ReadBackup(f, tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return BackupHeader{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := CheckBackupBody(tmp.Name(), h); err != nil {
		return BackupHeader{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), dbPath); err != nil {
		return BackupHeader{}, err
	}
	ok = true
	if err := syncDir(filepath.Dir(dbPath)); err != nil {
		return BackupHeader{}, err
	}
	return h, nil
}
