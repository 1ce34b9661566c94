package alert

import (
	"flag"
	"strconv"
)

// RegisterFlags defines the --alert-* flags on fs, writing into c. The node's
// ParseConfig calls it, so that the flags and their TXLOG_* variables are
// parsed in one place.
func RegisterFlags(fs *flag.FlagSet, c *Config) {
	fs.Func("alert-webhook", "POST alerts to this URL (repeatable)", func(v string) error {
		c.Webhooks = append(c.Webhooks, v)
		return nil
	})
	fs.Func("alert-format", "alert body: json (default) or slack ({\"text\":...})", func(v string) error {
		c.Format = Format(v)
		return nil
	})
	fs.DurationVar(&c.NoLeaderFor, "alert-no-leader-for", 5e9, "alert TxlogNoLeader after this long without a leader")
	fs.DurationVar(&c.LeaderChangedFor, "alert-leader-changed-for", 60e9, "how long TxlogLeaderChanged fires after a leader change")
	fs.DurationVar(&c.UnreachableFor, "alert-unreachable-for", 10e9, "alert TxlogMemberUnreachable after a member is unreachable this long")
	fs.IntVar(&c.ParkedMax, "alert-parked-max", 1000, "alert TxlogParkedBacklog above this many unresolved transactions")
	fs.DurationVar(&c.ParkedAge, "alert-parked-age", 60e9, "alert TxlogParkedOldest when the oldest unresolved transaction is older")
	fs.DurationVar(&c.FsyncP99, "alert-fsync-p99", 50e6, "alert TxlogFsyncSlow when the fsync p99 is above this ...")
	fs.DurationVar(&c.FsyncFor, "alert-fsync-for", 60e9, "... for this long")
	fs.DurationVar(&c.BackupStale, "alert-backup-stale", 0, "alert TxlogBackupStale when the last good --backup-dir backup is older than this (default 2x --backup-interval)")
	fs.Func("alert-disk-free-percent", "alert TxlogDiskFreeLow under this percentage of free data disk (default 10)", func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		c.DiskFreePercent = f
		return err
	})
}
