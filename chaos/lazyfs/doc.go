// Package lazyfs is a FUSE file system that forgets what was not synced: it
// serves a backing directory, the durable state, through a mount point, keeps
// every write and every directory change in memory until an fsync makes it
// durable, and on [FS.PowerLoss] drops what is not durable, as a machine that
// loses power does. The chaos verifier serves each node's data directory
// through one (docs/chaos.md, the powerloss fault); its tests show what it
// drops and what it keeps.
//
// # What is durable
//
// A file's data is durable once the file is fsynced (fsync or fdatasync): its
// dirty pages are then written to the backing file. Directory entries (create,
// mkdir, rename, unlink, rmdir) are durable by the mount's [DirRule]:
//
//   - [DirsPOSIX]: an entry is durable once its directory is fsynced (open the
//     directory read-only and fsync it). A file's own fsync does not make its
//     name durable. A rename is durable once the destination directory is
//     fsynced; an unlink once the directory it was removed from is.
//   - [DirsJournal]: like ext4's ordered journal, any fsync (of a file or a
//     directory) first makes every earlier directory change durable, in order.
//
// A file whose name is not durable keeps its synced data in a hidden orphan
// file (<backing>/.lazyfs/<ino>) until its name becomes durable; a power loss
// removes the orphans, as fsck would. A file that is unlinked while open stays
// readable until it is closed.
//
// [FS.PowerLoss] takes a [LossMode]: [LossAll] drops every unsynced page and
// directory change; [LossTorn] first writes a random subset of each durably
// named file's dirty 4 KiB pages back, in random order (seeded), and for a file
// that grew keeps or cuts the grown size at random, as a disk's writeback can
// leave a file; then it drops the rest. A page that was not written since its
// last sync is never changed. After a power loss the mount shows exactly the
// durable state, with new inode numbers, and every file handle from before
// answers EIO. The file system stays off (every call answers EIO) until
// [FS.PowerOn], so that a frozen process's requests still in flight cannot land
// after the loss.
//
// # What it serves
//
// Regular files and directories: lookup, create (O_EXCL, O_TRUNC), open, read,
// write (pwrite and append), ftruncate, fallocate (mode 0 and KEEP_SIZE),
// fsync, fdatasync, fsync of a directory, rename (also over an existing entry,
// RENAME_NOREPLACE), unlink, mkdir, rmdir, readdir, chmod, statfs. flock and
// POSIX locks are left to the kernel (the mount does not take them over), which
// keeps them consistent for all processes on this machine. Hard links, symbolic
// links, device nodes and extended attributes are refused (ENOTSUP).
//
// Reads and writes go through the kernel's page cache (no direct I/O, no
// writeback cache), so a read-only shared mmap of a file, as bbolt makes, sees
// every write at once. Entries and attributes are not cached by the kernel
// (timeouts of zero), and each inode gets a fresh number after a power loss,
// so no cached page or entry survives one.
//
// # Memory
//
// Dirty state is page-granular: a map from page number to a 4 KiB copy, with
// an all-zero page stored as nothing, so a 64 MiB zero-filled segment costs a
// map entry per page until its fsync. Clean pages are read from the backing
// file. One mutex guards the whole file system, I/O to the backing files
// included: it is a test device, and a single lock keeps its durability rules
// easy to check.
//
// Close (the end of a run, a clean shutdown) writes everything back, as an
// unmount does, and unmounts. The package needs Linux and /dev/fuse (root, or
// fusermount3 from Debian's fuse3); elsewhere [Mount] returns
// [ErrNotSupported]. It uses github.com/hanwen/go-fuse/v2 and imports nothing
// from txlog.
//
// Must not import: github.com/txlog/txlog/...
package lazyfs
