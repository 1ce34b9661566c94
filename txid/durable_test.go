package txid

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// powerFS is a markFS that keeps files in memory and acts out what a power
// loss keeps under POSIX rules: a file's content only as of its last fsync,
// and a rename only once its directory is fsynced. It records every step in
// order. durable is the high-water mark file a power loss would leave now.
type powerFS struct {
	mu      sync.Mutex
	ops     []string
	files   map[string][]byte // name → content as written
	synced  map[string][]byte // name → content as of its last fsync
	names   map[string]string // name in the directory → file (as created)
	durable map[string]string // names a power loss keeps: as of the last directory fsync
}

func newPowerFS() *powerFS {
	return &powerFS{files: map[string][]byte{}, synced: map[string][]byte{}, names: map[string]string{}, durable: map[string]string{}}
}

func (p *powerFS) add(op string) {
	p.ops = append(p.ops, op)
}

func (p *powerFS) Create(path string) (markFile, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.add("create " + filepath.Base(path))
	id := fmt.Sprintf("%s#%d", path, len(p.ops)) // a new inode each time: O_TRUNC of a file is modeled as a new one
	p.files[id] = nil
	p.names[path] = id
	return &powerFile{fs: p, id: id, name: filepath.Base(path)}, nil
}

func (p *powerFS) Rename(oldpath, newpath string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.add("rename " + filepath.Base(oldpath) + " " + filepath.Base(newpath))
	p.names[newpath] = p.names[oldpath]
	delete(p.names, oldpath)
	return nil
}

func (p *powerFS) SyncDir(dir string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.add("syncdir")
	p.durable = map[string]string{}
	for name, id := range p.names {
		p.durable[name] = id
	}
	return nil
}

// afterPowerLoss returns the limit in the high-water mark file at path as a
// power loss now would leave it, or ok false if it would leave none or one
// that does not decode.
func (p *powerFS) afterPowerLoss(path string) (limit uint64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id, found := p.durable[path]
	if !found {
		return 0, false
	}
	limit, err := decodeMark(p.synced[id])
	return limit, err == nil
}

func (p *powerFS) steps() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ops)
}

type powerFile struct {
	fs   *powerFS
	id   string
	name string
}

func (f *powerFile) Write(b []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	f.fs.add("write " + f.name)
	f.fs.files[f.id] = append(f.fs.files[f.id], b...)
	return len(b), nil
}

func (f *powerFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	f.fs.add("sync " + f.name)
	f.fs.synced[f.id] = slices.Clone(f.fs.files[f.id])
	return nil
}

func (f *powerFile) Close() error { return nil }

// TestMarkDurableBeforeIDs checks, against a file system that acts out a
// power loss, that every ID the Generator issues is below the limit that a
// power loss at that moment would leave in the high-water mark file: the
// temporary file is fsynced before the rename, and the directory after it,
// before the first ID of a window is issued. It fails if either fsync is
// left out.
func TestMarkDurableBeforeIDs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pfs := newPowerFS()
		path := filepath.Join("data", "txid.hwm")
		shift := start.Sub(time.Now())
		cfg := Config{Node: 1, Now: func() time.Time { return time.Now().Add(shift) }}
		g, err := openGenerator(cfg, path, func(limit uint64) error { return writeMark(pfs, path, limit) })
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		// Through several windows: the open's reservation and the
		// extensions of the background goroutine.
		for i := range 40 {
			id := g.Next()
			limit, ok := pfs.afterPowerLoss(path)
			if !ok || uint64(id.Millis()) >= limit {
				t.Fatalf("Next() #%d = %v (ms %d after start), but a power loss now leaves a file with limit %d after start (found %t); steps:\n%s",
					i, id, id.Millis()-startMs, int64(limit)-startMs, ok, strings.Join(pfs.steps(), "\n"))
			}
			time.Sleep(500 * time.Millisecond)
			synctest.Wait()
		}
		steps := pfs.steps()
		want := []string{"create txid.hwm.tmp", "write txid.hwm.tmp", "sync txid.hwm.tmp", "rename txid.hwm.tmp txid.hwm", "syncdir"}
		if len(steps) < 2*len(want) || !slices.Equal(steps[:len(want)], want) {
			t.Fatalf("steps of the file system:\n%s\nwant each write of the mark to be:\n%s", strings.Join(steps, "\n"), strings.Join(want, "\n"))
		}
	})
}
