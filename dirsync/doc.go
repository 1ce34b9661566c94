// Package dirsync makes directory entries durable. A new, renamed or removed
// name survives a power loss only once its directory is fsynced (POSIX; ext4's
// journal usually hides a missing fsync, XFS and ext4 without a journal do
// not). The packages that create files on a node's data directory (store,
// replication, node) call it, each with a func(dir string) error seam that
// tests replace with dirsynctest.Recorder to check the order of the fsyncs.
//
// It imports nothing from txlog. wal and txid keep their own file-system seams
// (wal.FS, txid's markFS), which cover their files' writes as well.
//
// Must not import: github.com/txlog/txlog/...
package dirsync
