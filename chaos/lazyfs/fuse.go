//go:build linux

package lazyfs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FS is one mounted lazyfs. Its methods are safe to call from any goroutine.
type FS struct {
	cfg    Config
	log    *slog.Logger
	server *fuse.Server

	mu  sync.Mutex
	st  state
	off bool // between PowerLoss and PowerOn

	closeOnce sync.Once
	closeErr  error
}

// Available says why lazyfs cannot run here (nil when it can): it needs
// /dev/fuse, and either root or fusermount3.
func Available() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("%w: open /dev/fuse: %v", ErrNotSupported, err)
	}
	f.Close()
	if os.Geteuid() == 0 {
		return nil
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(dir, "fusermount3")); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%w: not root, and no fusermount3 on PATH (Debian package fuse3)", ErrNotSupported)
}

// Mount serves cfg.Backing at cfg.Mount. The caller must Close it.
func Mount(cfg Config) (*FS, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := Available(); err != nil {
		return nil, err
	}
	backing, err := filepath.Abs(cfg.Backing)
	if err != nil {
		return nil, err
	}
	mnt, err := filepath.Abs(cfg.Mount)
	if err != nil {
		return nil, err
	}
	if rel, err := filepath.Rel(backing, mnt); err == nil && !strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("lazyfs: mount point %s lies inside the backing directory %s", mnt, backing)
	}
	cfg.Backing, cfg.Mount = backing, mnt
	for _, d := range []string{backing, mnt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("lazyfs: %w", err)
		}
	}
	// A mount left behind by a process that died: take it down first.
	syscall.Unmount(mnt, syscall.MNT_DETACH)

	f := &FS{cfg: cfg, log: cfg.Logger.With("component", "lazyfs", "mount", mnt)}
	f.st = state{backing: backing, dirs: cfg.Dirs, rng: rand.New(rand.NewPCG(cfg.Seed, 0x6c617a796673))}
	if err := f.st.load(); err != nil {
		return nil, fmt.Errorf("lazyfs: load %s: %w", backing, err)
	}
	zero := time.Duration(0)
	root := &node{fs: f}
	f.server, err = fs.Mount(mnt, root, &fs.Options{
		MountOptions: fuse.MountOptions{
			FsName:      "lazyfs",
			Name:        "lazyfs",
			DirectMount: true,
			MaxWrite:    1 << 20,
		},
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
		UID:             uint32(os.Getuid()),
		GID:             uint32(os.Getgid()),
	})
	if err != nil {
		return nil, fmt.Errorf("lazyfs: mount %s: %w", mnt, err)
	}
	f.log.Info("mounted", "backing", backing, "dirs", cfg.Dirs)
	return f, nil
}

// Dirs returns the mount's directory rule.
func (f *FS) Dirs() DirRule { return f.cfg.Dirs }

// PowerLoss drops every change that is not durable (after a torn writeback in
// LossTorn), leaves the mount showing the durable state, and turns the file
// system off until PowerOn: every request answers EIO meanwhile, and every file
// handle from before answers EIO for good. Freeze the processes that use the
// mount first (SIGSTOP), and kill them before PowerOn.
func (f *FS) PowerLoss(mode LossMode) (Loss, error) {
	if _, err := ParseLossMode(string(mode)); err != nil {
		return Loss{}, fmt.Errorf("lazyfs: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.off {
		return Loss{}, ErrOff
	}
	f.off = true
	loss, err := f.st.powerLoss(mode)
	f.log.Info("power lost", "mode", mode, "dirty_pages", loss.DirtyPages, "written_pages", loss.WrittenPages, "dir_ops", loss.DirOps, "err", err)
	if err != nil {
		return loss, fmt.Errorf("lazyfs: power loss: %w", err)
	}
	return loss, nil
}

// PowerOn turns the file system on again after PowerLoss.
func (f *FS) PowerOn() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.off = false
}

// Close writes every change back to the backing directory, as a clean
// unmount does, and unmounts. A process that still has a file open there
// makes the unmount lazy (detached). Close can be called twice.
func (f *FS) Close() error {
	f.closeOnce.Do(func() {
		var errs []error
		if err := f.server.Unmount(); err != nil {
			if err := syscall.Unmount(f.cfg.Mount, syscall.MNT_DETACH); err != nil {
				errs = append(errs, fmt.Errorf("lazyfs: unmount %s: %w", f.cfg.Mount, err))
			}
		}
		f.mu.Lock()
		if !f.off {
			errs = append(errs, f.st.flushAll())
		}
		f.off = true
		f.mu.Unlock()
		f.closeErr = errors.Join(errs...)
		f.log.Info("unmounted", "err", f.closeErr)
	})
	return f.closeErr
}

// node is the FUSE face of an inode. The root's m is nil: it stands for the
// current root of every generation.
type node struct {
	fs.Inode
	fs *FS
	m  *inode
}

// handle is an open file; it exists so that Release is called.
type handle struct{}

var (
	_ fs.NodeLookuper   = (*node)(nil)
	_ fs.NodeGetattrer  = (*node)(nil)
	_ fs.NodeSetattrer  = (*node)(nil)
	_ fs.NodeOpener     = (*node)(nil)
	_ fs.NodeCreater    = (*node)(nil)
	_ fs.NodeReader     = (*node)(nil)
	_ fs.NodeWriter     = (*node)(nil)
	_ fs.NodeFsyncer    = (*node)(nil)
	_ fs.NodeReleaser   = (*node)(nil)
	_ fs.NodeAllocater  = (*node)(nil)
	_ fs.NodeMkdirer    = (*node)(nil)
	_ fs.NodeUnlinker   = (*node)(nil)
	_ fs.NodeRmdirer    = (*node)(nil)
	_ fs.NodeRenamer    = (*node)(nil)
	_ fs.NodeReaddirer  = (*node)(nil)
	_ fs.NodeStatfser   = (*node)(nil)
	_ fs.NodeLinker     = (*node)(nil)
	_ fs.NodeSymlinker  = (*node)(nil)
	_ fs.NodeMknoder    = (*node)(nil)
	_ fs.NodeSetxattrer = (*node)(nil)
)

// lock takes the file system's lock and returns the node's inode, or EIO when
// the power is off or the inode is from before a power loss. On success the
// caller must unlock f.mu.
func (n *node) lock() (*inode, syscall.Errno) {
	n.fs.mu.Lock()
	if n.fs.off {
		n.fs.mu.Unlock()
		return nil, syscall.EIO
	}
	m := n.m
	if m == nil {
		m = n.fs.st.root
	}
	if m.gen != n.fs.st.gen {
		n.fs.mu.Unlock()
		return nil, syscall.EIO
	}
	return m, 0
}

func (n *node) unlock() { n.fs.mu.Unlock() }

// fill sets out from m. f.mu must be held.
func (f *FS) fill(m *inode, out *fuse.Attr) {
	out.Ino = m.ino
	out.Mode = m.perm
	if m.dir {
		out.Mode |= syscall.S_IFDIR
		out.Nlink = 2
	} else {
		out.Mode |= syscall.S_IFREG
		out.Size = uint64(m.size)
		out.Blocks = (uint64(m.size) + 511) / 512
		out.Nlink = 1
		if m.parent == nil {
			out.Nlink = 0
		}
	}
	out.Blksize = PageSize
	out.SetTimes(&m.mtime, &m.mtime, &m.mtime)
	out.Uid, out.Gid = uint32(os.Getuid()), uint32(os.Getgid())
}

// child returns the go-fuse inode for model inode c, with its entry filled in.
// It runs with f.mu released: NewInode may call back into the file system.
func (n *node) child(ctx context.Context, c *inode, attr fuse.Attr, out *fuse.EntryOut) *fs.Inode {
	out.Attr = attr
	mode := uint32(syscall.S_IFREG)
	if c.dir {
		mode = syscall.S_IFDIR
	}
	return n.NewInode(ctx, &node{fs: n.fs, m: c}, fs.StableAttr{Mode: mode, Ino: c.ino})
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	m, e := n.lock()
	if e != 0 {
		return nil, e
	}
	c := m.children[name]
	if c == nil {
		n.unlock()
		return nil, syscall.ENOENT
	}
	var attr fuse.Attr
	n.fs.fill(c, &attr)
	n.unlock()
	return n.child(ctx, c, attr, out), 0
}

func (n *node) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	m, e := n.lock()
	if e != 0 {
		return e
	}
	defer n.unlock()
	n.fs.fill(m, &out.Attr)
	return 0
}

func (n *node) Setattr(ctx context.Context, _ fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	m, e := n.lock()
	if e != 0 {
		return e
	}
	defer n.unlock()
	if size, ok := in.GetSize(); ok {
		if m.dir {
			return syscall.EISDIR
		}
		if err := n.fs.st.truncate(m, int64(size)); err != nil {
			return errno(err)
		}
	}
	if mode, ok := in.GetMode(); ok {
		m.perm = mode & 0o7777
	}
	if mt, ok := in.GetMTime(); ok {
		m.mtime = mt
	}
	n.fs.fill(m, &out.Attr)
	return 0
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	m, e := n.lock()
	if e != 0 {
		return nil, 0, e
	}
	defer n.unlock()
	if m.dir {
		return nil, 0, syscall.EISDIR
	}
	if flags&syscall.O_TRUNC != 0 && flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		if err := n.fs.st.truncate(m, 0); err != nil {
			return nil, 0, errno(err)
		}
	}
	m.opens++
	return &handle{}, 0, 0
}

func (n *node) Release(ctx context.Context, _ fs.FileHandle) syscall.Errno {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if n.m == nil || n.m.gen != n.fs.st.gen {
		return 0
	}
	n.m.opens--
	return errno(n.fs.st.reap(n.m))
}

// validName refuses the name of the orphans' directory in the root.
func (n *node) validName(m *inode, name string) syscall.Errno {
	if m == n.fs.st.root && name == orphanDir {
		return syscall.EPERM
	}
	return 0
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	m, e := n.lock()
	if e != 0 {
		return nil, nil, 0, e
	}
	if e := n.validName(m, name); e != 0 {
		n.unlock()
		return nil, nil, 0, e
	}
	if old := m.children[name]; old != nil {
		n.unlock()
		return nil, nil, 0, syscall.EEXIST // the kernel opens an existing file itself
	}
	c := n.fs.st.newInode(false, mode)
	n.fs.st.linkCurrent(c, m, name)
	n.fs.st.record(&dirOp{n: c, to: m, toName: name})
	c.opens++
	var attr fuse.Attr
	n.fs.fill(c, &attr)
	n.unlock()
	return n.child(ctx, c, attr, out), &handle{}, 0, 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	m, e := n.lock()
	if e != 0 {
		return nil, e
	}
	if e := n.validName(m, name); e != 0 {
		n.unlock()
		return nil, e
	}
	if m.children[name] != nil {
		n.unlock()
		return nil, syscall.EEXIST
	}
	c := n.fs.st.newInode(true, mode)
	n.fs.st.linkCurrent(c, m, name)
	n.fs.st.record(&dirOp{n: c, to: m, toName: name})
	var attr fuse.Attr
	n.fs.fill(c, &attr)
	n.unlock()
	return n.child(ctx, c, attr, out), 0
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.remove(name, false)
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return n.remove(name, true)
}

func (n *node) remove(name string, dir bool) syscall.Errno {
	m, e := n.lock()
	if e != 0 {
		return e
	}
	defer n.unlock()
	c := m.children[name]
	switch {
	case c == nil:
		return syscall.ENOENT
	case dir && !c.dir:
		return syscall.ENOTDIR
	case !dir && c.dir:
		return syscall.EISDIR
	case dir && len(c.children) > 0:
		return syscall.ENOTEMPTY
	}
	n.fs.st.unlinkCurrent(c)
	n.fs.st.record(&dirOp{n: c, from: m, fromName: name})
	return 0
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	if flags&^uint32(renameNoReplace) != 0 {
		return syscall.ENOTSUP // RENAME_EXCHANGE, RENAME_WHITEOUT
	}
	m, e := n.lock()
	if e != 0 {
		return e
	}
	defer n.unlock()
	to := np.m
	if to == nil {
		to = n.fs.st.root
	}
	if to.gen != m.gen {
		return syscall.EIO
	}
	if e := n.validName(to, newName); e != 0 {
		return e
	}
	c := m.children[name]
	if c == nil {
		return syscall.ENOENT
	}
	old := to.children[newName]
	if old == c {
		return 0
	}
	if old != nil {
		switch {
		case flags&renameNoReplace != 0:
			return syscall.EEXIST
		case c.dir && !old.dir:
			return syscall.ENOTDIR
		case !c.dir && old.dir:
			return syscall.EISDIR
		case old.dir && len(old.children) > 0:
			return syscall.ENOTEMPTY
		}
	}
	for d := to; d != nil; d = d.parent {
		if d == c {
			return syscall.EINVAL // into its own subtree
		}
	}
	if old != nil {
		n.fs.st.unlinkCurrent(old)
	}
	n.fs.st.unlinkCurrent(c)
	n.fs.st.linkCurrent(c, to, newName)
	n.fs.st.record(&dirOp{n: c, from: m, fromName: name, to: to, toName: newName, replaced: old})
	return 0
}

func (n *node) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	m, e := n.lock()
	if e != 0 {
		return nil, e
	}
	defer n.unlock()
	var ents []fuse.DirEntry
	for _, name := range slices.Sorted(maps.Keys(m.children)) {
		c := m.children[name]
		mode := uint32(syscall.S_IFREG)
		if c.dir {
			mode = syscall.S_IFDIR
		}
		ents = append(ents, fuse.DirEntry{Name: name, Ino: c.ino, Mode: mode})
	}
	return fs.NewListDirStream(ents), 0
}

func (n *node) Read(ctx context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	m, e := n.lock()
	if e != 0 {
		return nil, e
	}
	defer n.unlock()
	if m.dir {
		return nil, syscall.EISDIR
	}
	k, err := n.fs.st.read(m, dest, off)
	if err != nil {
		return nil, errno(err)
	}
	return fuse.ReadResultData(dest[:k]), 0
}

func (n *node) Write(ctx context.Context, _ fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	m, e := n.lock()
	if e != 0 {
		return 0, e
	}
	defer n.unlock()
	if m.dir {
		return 0, syscall.EISDIR
	}
	if err := n.fs.st.write(m, data, off); err != nil {
		return 0, errno(err)
	}
	return uint32(len(data)), 0
}

func (n *node) Fsync(ctx context.Context, _ fs.FileHandle, flags uint32) syscall.Errno {
	m, e := n.lock()
	if e != 0 {
		return e
	}
	defer n.unlock()
	if err := n.fs.st.fsync(m); err != nil {
		n.fs.log.Error("fsync failed", "ino", m.ino, "err", err)
		return errno(err)
	}
	return 0
}

// renameNoReplace is RENAME_NOREPLACE of renameat2(2).
const renameNoReplace = 1

// falloc modes lazyfs takes: 0 (extend) and FALLOC_FL_KEEP_SIZE.
const fallocKeepSize = 1

func (n *node) Allocate(ctx context.Context, _ fs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	m, e := n.lock()
	if e != 0 {
		return e
	}
	defer n.unlock()
	switch {
	case m.dir:
		return syscall.EISDIR
	case mode == fallocKeepSize:
		return 0
	case mode != 0:
		return syscall.EOPNOTSUPP
	}
	if end := int64(off + size); end > m.size {
		return errno(n.fs.st.truncate(m, end))
	}
	return 0
}

func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	var st syscall.Statfs_t
	if err := syscall.Statfs(n.fs.cfg.Backing, &st); err != nil {
		return errno(err)
	}
	out.FromStatfsT(&st)
	return 0
}

func (n *node) Link(context.Context, fs.InodeEmbedder, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

func (n *node) Symlink(context.Context, string, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

func (n *node) Mknod(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

func (n *node) Setxattr(context.Context, string, []byte, uint32) syscall.Errno {
	return syscall.ENOTSUP
}
