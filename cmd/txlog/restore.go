package main

import (
	"context"

	"github.com/txlog/txlog/node"
)

// restore seeds a data directory from a backup file offline, as etcdutl
// snapshot restore does for etcd: the same code as txlogd --restore
// (node.RestoreDataDir), without starting a node. The backup is verified
// whole before anything is written; a data directory that holds anything
// is refused. txlogd started afterwards on DIR with the same --id and
// --raft-addr, and without --restore, --cluster or --join, is the first
// node of a new cluster, which the other new nodes --join.
//
// It is the one command of txlog that imports node: it writes a data
// directory as a node does, and talks to no node.
func (c *cli) restore(_ context.Context, args []string) error {
	cmd := c.command("restore", "FILE --data-dir DIR --id ID [--raft-addr ADDR] [flags]")
	dataDir := cmd.String("data-dir", "", "the new node's data directory: created if missing, refused unless empty (required)")
	id := cmd.String("id", "", "the new node's --id (required)")
	raftAddr := cmd.String("raft-addr", node.DefaultRaftAddr, "the new node's --raft-addr, which Raft gives the members that join it")
	number := cmd.Int("node-number", 0, "the new node's txid node number (default: the one the backup's registry gives --id, else the smallest free one)")
	raftLog := cmd.String("raft-log", "", "raft log store: wal or boltdb (default wal)")
	pos, err := cmd.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("restore takes one FILE, got %d arguments", len(pos))
	}
	if *dataDir == "" || *id == "" {
		return usagef("restore: --data-dir and --id are required")
	}
	r, err := node.RestoreDataDir(node.Config{
		ID: *id, DataDir: *dataDir, RaftAddr: *raftAddr, NodeNumber: *number, RaftLog: *raftLog, Restore: pos[0],
	})
	if err != nil {
		return err
	}
	return printJSON(c.stdout, map[string]any{
		"file": pos[0], "ok": true, "data_dir": *dataDir, "id": *id, "raft_addr": *raftAddr,
		"index": r.Index, "term": r.Term, "from_node": r.FromNode, "from_cluster": r.FromCluster,
		"cluster_id": r.ClusterID, "node_number": r.NodeNumber,
		"next": "txlogd --id " + *id + " --data-dir " + *dataDir + " --raft-addr " + *raftAddr + " (no --restore, --cluster or --join)",
	})
}
