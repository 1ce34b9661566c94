//go:build linux

package lazyfs

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// orphanDir is the backing root's subdirectory of inodes with no durable name.
const orphanDir = ".lazyfs"

// rootIno is the root's inode number, which FUSE fixes.
const rootIno = 1

// inode is one file or directory of the current state, with what of it is
// durable. All fields are guarded by FS.mu.
type inode struct {
	ino   uint64
	gen   uint64 // the FS generation it belongs to; an older one answers EIO
	dir   bool
	perm  uint32
	mtime time.Time

	// The current namespace. Invariant: parent == nil for the root and for an
	// unlinked inode.
	parent   *inode
	name     string
	children map[string]*inode // directories

	// The durable namespace. Invariant: hasBacking == (the root, or orphan, or
	// dparent != nil); the backing path is bpath.
	dparent    *inode
	dname      string
	dchildren  map[string]*inode // directories
	orphan     bool
	hasBacking bool
	// appliedSeq is the seq of the last directory change of this inode made
	// durable; an older one met later is skipped.
	appliedSeq uint64
	// pendingOps counts the directory changes of this inode not yet durable.
	pendingOps int
	opens      int

	// File data. Invariants: cleanLimit <= size; bytes at or past size read
	// as zero; a clean page reads the backing file below min(dsize,
	// cleanLimit) and zeros past it.
	size       int64
	dsize      int64            // the backing file's size
	cleanLimit int64            // the lowest size cut to since the last sync
	pages      map[int64][]byte // dirty pages; a nil slice is all zeros
	f          *os.File         // the backing file, while hasBacking
}

// dirOp is one directory change: n linked at to/toName (create, mkdir), or
// unlinked from from/fromName (unlink, rmdir), or both (rename), replacing
// replaced.
type dirOp struct {
	seq      uint64
	n        *inode
	from     *inode
	fromName string
	to       *inode
	toName   string
	replaced *inode
}

// touches reports whether fsyncing dir makes op durable under DirsPOSIX: a
// link by its destination, an unlink by its directory.
func (op *dirOp) touches(dir *inode) bool {
	if op.to != nil {
		return op.to == dir
	}
	return op.from == dir
}

// state is the model behind a mount. Its methods run with FS.mu held.
type state struct {
	backing string
	dirs    DirRule
	rng     *rand.Rand
	gen     uint64
	nextIno uint64
	root    *inode
	ops     []*dirOp
	opSeq   uint64
	fds     map[*inode]bool // the inodes whose backing file is open
}

func (s *state) newInode(dir bool, perm uint32) *inode {
	s.nextIno++
	n := &inode{ino: s.nextIno, gen: s.gen, dir: dir, perm: perm & 0o7777, mtime: time.Now()}
	if dir {
		n.children = map[string]*inode{}
		n.dchildren = map[string]*inode{}
	} else {
		n.pages = map[int64][]byte{}
	}
	return n
}

// load builds the state from the backing directory: everything in it is
// durable and clean. It removes the orphans.
func (s *state) load() error {
	if err := os.RemoveAll(filepath.Join(s.backing, orphanDir)); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(s.backing, orphanDir), 0o700); err != nil {
		return err
	}
	s.gen++
	s.ops = nil
	s.fds = map[*inode]bool{}
	if s.nextIno < rootIno {
		s.nextIno = rootIno
	}
	root := &inode{ino: rootIno, gen: s.gen, dir: true, perm: 0o755, mtime: time.Now(),
		children: map[string]*inode{}, dchildren: map[string]*inode{}, hasBacking: true}
	s.root = root
	return s.loadDir(root, s.backing)
}

func (s *state) loadDir(d *inode, path string) error {
	ents, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if d == s.root && e.Name() == orphanDir {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if !fi.IsDir() && !fi.Mode().IsRegular() {
			continue // not served
		}
		n := s.newInode(fi.IsDir(), uint32(fi.Mode().Perm()))
		n.mtime = fi.ModTime()
		n.parent, n.name, n.dparent, n.dname, n.hasBacking = d, e.Name(), d, e.Name(), true
		d.children[n.name], d.dchildren[n.name] = n, n
		if n.dir {
			if err := s.loadDir(n, filepath.Join(path, e.Name())); err != nil {
				return err
			}
			continue
		}
		n.size, n.dsize, n.cleanLimit = fi.Size(), fi.Size(), fi.Size()
	}
	return nil
}

// bpath is n's backing path. n must have backing.
func (s *state) bpath(n *inode) string {
	switch {
	case n == s.root:
		return s.backing
	case n.orphan:
		return filepath.Join(s.backing, orphanDir, strconv.FormatUint(n.ino, 10))
	}
	return filepath.Join(s.bpath(n.dparent), n.dname)
}

// backingFile returns n's open backing file, opening it (and creating it as
// an orphan when n has no backing yet).
func (s *state) backingFile(n *inode) (*os.File, error) {
	if err := s.ensureBacking(n); err != nil {
		return nil, err
	}
	if n.f == nil {
		f, err := os.OpenFile(s.bpath(n), os.O_RDWR, 0)
		if err != nil {
			return nil, err
		}
		n.f = f
		s.fds[n] = true
	}
	return n.f, nil
}

// ensureBacking gives n an empty orphan backing file or directory when it has
// none: its durable content is then empty, as its clean pages already read.
func (s *state) ensureBacking(n *inode) error {
	if n.hasBacking {
		return nil
	}
	n.orphan, n.hasBacking = true, true
	p := s.bpath(n)
	if n.dir {
		return os.Mkdir(p, os.FileMode(n.perm|0o700))
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, os.FileMode(n.perm|0o600))
	if err != nil {
		return err
	}
	n.f, n.dsize = f, 0
	s.fds[n] = true
	return nil
}

// orphanize moves n's backing out of its durable directory: it has no durable
// name any more.
func (s *state) orphanize(n *inode) error {
	if n.dparent == nil {
		return nil
	}
	from := s.bpath(n)
	delete(n.dparent.dchildren, n.dname)
	n.dparent, n.dname, n.orphan = nil, "", true
	return os.Rename(from, s.bpath(n))
}

// reap deletes the backing of an inode that nothing can reach any more: no
// current name, not open, no durable name, no pending change.
func (s *state) reap(n *inode) error {
	if n == s.root || n.parent != nil || n.opens > 0 || n.pendingOps > 0 || n.dparent != nil || !n.hasBacking {
		return nil
	}
	if n.dir && len(n.dchildren) > 0 {
		return nil
	}
	s.closeFile(n)
	p := s.bpath(n)
	n.hasBacking, n.orphan = false, false
	return os.RemoveAll(p)
}

// record appends a directory change, not yet durable.
func (s *state) record(op *dirOp) {
	s.opSeq++
	op.seq = s.opSeq
	op.n.pendingOps++
	if op.replaced != nil {
		op.replaced.pendingOps++
	}
	s.ops = append(s.ops, op)
}

// apply makes op durable in the backing directory.
func (s *state) apply(op *dirOp) error {
	op.n.pendingOps--
	if op.replaced != nil {
		op.replaced.pendingOps--
	}
	var errs []error
	if r := op.replaced; r != nil && r.appliedSeq < op.seq {
		r.appliedSeq = op.seq
		errs = append(errs, s.orphanize(r))
	}
	n := op.n
	if n.appliedSeq < op.seq {
		n.appliedSeq = op.seq
		if op.to == nil {
			errs = append(errs, s.orphanize(n))
		} else {
			errs = append(errs, s.link(n, op.to, op.toName))
		}
	}
	errs = append(errs, s.reap(n))
	if op.replaced != nil {
		errs = append(errs, s.reap(op.replaced))
	}
	return errors.Join(errs...)
}

// link makes n durable at dir/name, moving away whatever was durable there.
func (s *state) link(n, dir *inode, name string) error {
	if n.dparent == dir && n.dname == name {
		return nil
	}
	if err := s.ensureBacking(dir); err != nil {
		return err
	}
	if old := dir.dchildren[name]; old != nil && old != n {
		if err := s.orphanize(old); err != nil {
			return err
		}
		if err := s.reap(old); err != nil {
			return err
		}
	}
	if err := s.ensureBacking(n); err != nil {
		return err
	}
	from := s.bpath(n)
	if n.dparent != nil {
		delete(n.dparent.dchildren, n.dname)
	}
	n.dparent, n.dname, n.orphan = dir, name, false
	dir.dchildren[name] = n
	return os.Rename(from, s.bpath(n))
}

// syncDirOps makes the directory changes durable that an fsync of n makes
// durable under the rule: all of them (journal), or those of directory n
// (posix).
func (s *state) syncDirOps(n *inode) error {
	var errs []error
	keep := s.ops[:0]
	for _, op := range s.ops {
		if s.dirs == DirsJournal || (n.dir && op.touches(n)) {
			errs = append(errs, s.apply(op))
			continue
		}
		keep = append(keep, op)
	}
	clear(s.ops[len(keep):])
	s.ops = keep
	return errors.Join(errs...)
}

// fsync makes n durable by the rule: its directory changes, and a file's data.
func (s *state) fsync(n *inode) error {
	if err := s.syncDirOps(n); err != nil {
		return fmt.Errorf("directory changes: %w", err)
	}
	if n.dir {
		return nil
	}
	return s.syncData(n)
}

// syncData writes n's dirty pages and size to its backing file.
func (s *state) syncData(n *inode) error {
	if n.hasBacking && len(n.pages) == 0 && n.dsize == n.size && n.cleanLimit == n.size {
		return nil
	}
	f, err := s.backingFile(n)
	if err != nil {
		return err
	}
	valid := min(n.dsize, n.cleanLimit) // backing bytes still current
	if n.dsize > valid {
		if err := f.Truncate(valid); err != nil {
			return err
		}
	}
	for _, idx := range slices.Sorted(maps.Keys(n.pages)) {
		off := idx * PageSize
		if off >= n.size {
			continue
		}
		p := n.pages[idx]
		if p == nil {
			if off >= valid {
				continue // past the backing's end: a hole reads as zeros
			}
			p = zeroPage[:]
		}
		if _, err := f.WriteAt(p[:min(PageSize, n.size-off)], off); err != nil {
			return err
		}
	}
	if err := f.Truncate(n.size); err != nil {
		return err
	}
	clear(n.pages)
	n.dsize, n.cleanLimit = n.size, n.size
	return nil
}

var zeroPage [PageSize]byte

// readClean reads page idx as the backing file holds it into p.
func (s *state) readClean(n *inode, idx int64, p []byte) error {
	clear(p)
	off := idx * PageSize
	end := min(n.dsize, n.cleanLimit)
	if !n.hasBacking || off >= end {
		return nil
	}
	f, err := s.backingFile(n)
	if err != nil {
		return err
	}
	m := min(int64(len(p)), end-off)
	if _, err := f.ReadAt(p[:m], off); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// read copies n's current bytes at off into dest and returns how many.
func (s *state) read(n *inode, dest []byte, off int64) (int, error) {
	if off >= n.size {
		return 0, nil
	}
	dest = dest[:min(int64(len(dest)), n.size-off)]
	var buf [PageSize]byte
	done := 0
	for done < len(dest) {
		pos := off + int64(done)
		idx, in := pos/PageSize, pos%PageSize
		p, dirty := n.pages[idx]
		switch {
		case dirty && p == nil:
			p = zeroPage[:]
		case !dirty:
			if err := s.readClean(n, idx, buf[:]); err != nil {
				return done, err
			}
			p = buf[:]
		}
		done += copy(dest[done:], p[in:])
	}
	return done, nil
}

// page returns dirty page idx of n for writing, loading it first.
func (s *state) page(n *inode, idx int64) ([]byte, error) {
	if p, ok := n.pages[idx]; ok {
		if p == nil {
			p = make([]byte, PageSize)
			n.pages[idx] = p
		}
		return p, nil
	}
	p := make([]byte, PageSize)
	if err := s.readClean(n, idx, p); err != nil {
		return nil, err
	}
	n.pages[idx] = p
	return p, nil
}

// write writes data at off into n's dirty pages.
func (s *state) write(n *inode, data []byte, off int64) error {
	for done := 0; done < len(data); {
		pos := off + int64(done)
		idx, in := pos/PageSize, pos%PageSize
		chunk := data[done:min(len(data), done+PageSize-int(in))]
		if in == 0 && len(chunk) == PageSize && allZero(chunk) {
			n.pages[idx] = nil
		} else {
			var p []byte
			if in == 0 && len(chunk) == PageSize {
				p = make([]byte, PageSize)
				n.pages[idx] = p
			} else {
				var err error
				if p, err = s.page(n, idx); err != nil {
					return err
				}
			}
			copy(p[in:], chunk)
		}
		done += len(chunk)
	}
	n.size = max(n.size, off+int64(len(data)))
	n.mtime = time.Now()
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// truncate changes n's size; bytes past a smaller size are gone.
func (s *state) truncate(n *inode, size int64) error {
	if size < n.size {
		last := (size + PageSize - 1) / PageSize // first page wholly past size
		for idx := range n.pages {
			if idx >= last {
				delete(n.pages, idx)
			}
		}
		if in := size % PageSize; in != 0 {
			p, err := s.page(n, size/PageSize)
			if err != nil {
				return err
			}
			clear(p[in:])
		}
		n.cleanLimit = min(n.cleanLimit, size)
	}
	n.size = size
	n.mtime = time.Now()
	return nil
}

// powerLoss drops what is not durable (after a torn writeback), and reloads
// the state from the backing directory.
func (s *state) powerLoss(mode LossMode) (Loss, error) {
	loss := Loss{Mode: mode, DirOps: len(s.ops)}
	var errs []error
	var files []*inode
	s.walk(func(n *inode) { files = append(files, n) })
	for _, n := range files {
		loss.DirtyPages += len(n.pages)
		if mode == LossTorn && n.hasBacking && !n.orphan && len(n.pages) > 0 {
			w, err := s.tornWriteback(n)
			loss.WrittenPages += w
			errs = append(errs, err)
		}
	}
	s.closeFiles()
	errs = append(errs, s.load())
	return loss, errors.Join(errs...)
}

// tornWriteback writes a random subset of n's dirty pages to its backing
// file, in random order, and keeps or cuts a grown size at random.
func (s *state) tornWriteback(n *inode) (int, error) {
	idxs := slices.Sorted(maps.Keys(n.pages))
	s.rng.Shuffle(len(idxs), func(i, j int) { idxs[i], idxs[j] = idxs[j], idxs[i] })
	f, err := s.backingFile(n)
	if err != nil {
		return 0, err
	}
	written := 0
	for _, idx := range idxs {
		off := idx * PageSize
		if off >= n.size || s.rng.IntN(2) == 0 {
			continue
		}
		p := n.pages[idx]
		if p == nil {
			p = zeroPage[:]
		}
		if _, err := f.WriteAt(p[:min(PageSize, n.size-off)], off); err != nil {
			return written, err
		}
		written++
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > n.dsize && s.rng.IntN(2) == 0 {
		return written, f.Truncate(n.dsize) // the grown size did not reach the disk
	}
	return written, nil
}

// walk calls f for every file reachable now or open, and for none twice.
func (s *state) walk(f func(*inode)) {
	seen := map[*inode]bool{}
	var visit func(*inode)
	visit = func(n *inode) {
		if seen[n] {
			return
		}
		seen[n] = true
		if !n.dir {
			f(n)
			return
		}
		for _, name := range slices.Sorted(maps.Keys(n.children)) {
			visit(n.children[name])
		}
		for _, name := range slices.Sorted(maps.Keys(n.dchildren)) {
			visit(n.dchildren[name])
		}
	}
	visit(s.root)
	for _, op := range s.ops {
		visit(op.n)
	}
}

func (s *state) closeFile(n *inode) {
	if n.f != nil {
		n.f.Close()
		n.f = nil
	}
	delete(s.fds, n)
}

func (s *state) closeFiles() {
	for n := range s.fds {
		s.closeFile(n)
	}
}

// flushAll makes everything durable, as a clean unmount does.
func (s *state) flushAll() error {
	var errs []error
	for _, op := range s.ops {
		errs = append(errs, s.apply(op))
	}
	s.ops = nil
	s.walk(func(n *inode) {
		if n.hasBacking && !n.orphan {
			errs = append(errs, s.syncData(n))
		}
	})
	s.closeFiles()
	errs = append(errs, os.RemoveAll(filepath.Join(s.backing, orphanDir)))
	return errors.Join(errs...)
}

// errno maps an error of the backing file system to an errno.
func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return syscall.EIO
}

// linkCurrent names n dir/name in the current namespace.
func (s *state) linkCurrent(n, dir *inode, name string) {
	n.parent, n.name = dir, name
	dir.children[name] = n
	dir.mtime = time.Now()
}

// unlinkCurrent removes n's current name.
func (s *state) unlinkCurrent(n *inode) {
	delete(n.parent.children, n.name)
	n.parent.mtime = time.Now()
	n.parent, n.name = nil, ""
}
