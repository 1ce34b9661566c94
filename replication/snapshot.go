package replication

import (
	"time"

	"github.com/hashicorp/raft"
)

// A snapshot writes the whole state machine, so its cost grows with the state
// while the log entries it lets raft drop do not. With a fixed SnapshotThreshold
// a large state would be rewritten every few thousand entries: at a million
// transactions (about 500 MB of store) and 8192 entries that is 60 KB written
// per entry, far more than the entry itself. adaptSnapshots raises the threshold
// with the state's size, so that snapshots write on average at most
// SnapshotBytesPerEntry bytes per entry appended; the log between snapshots
// (and what a restart replays) grows with it, up to MaxSnapshotThreshold.

// snapshotThreshold returns the threshold for a state of size bytes.
func snapshotThreshold(c Config, size int64) uint64 {
	if size <= 0 || c.SnapshotBytesPerEntry <= 0 {
		return c.SnapshotThreshold
	}
	t := uint64(size) / uint64(c.SnapshotBytesPerEntry)
	return min(max(t, c.SnapshotThreshold), max(c.MaxSnapshotThreshold, c.SnapshotThreshold))
}

// adaptSnapshots sets raft's snapshot threshold from c.StateBytes every
// SnapshotInterval until Close.
func (r *Raft) adaptSnapshots(c Config) {
	current := c.SnapshotThreshold
	tick := time.NewTicker(c.SnapshotInterval)
	defer tick.Stop()
	for {
		t := snapshotThreshold(c, c.StateBytes())
		if t != current {
			err := r.raft.ReloadConfig(raft.ReloadableConfig{
				TrailingLogs:      c.TrailingLogs,
				SnapshotInterval:  c.SnapshotInterval,
				SnapshotThreshold: t,
				HeartbeatTimeout:  c.HeartbeatTimeout,
				ElectionTimeout:   c.ElectionTimeout,
			})
			if err != nil {
				r.logger.Warn("snapshot threshold not changed", "threshold", t, "err", err)
			} else {
				r.logger.Info("snapshot threshold changed", "from", current, "to", t)
				current = t
			}
		}
		select {
		case <-tick.C:
		case <-r.done:
			return
		}
	}
}
