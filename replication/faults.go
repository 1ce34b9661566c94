//go:build txlogfaults

package replication

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
)

// This file is built only with the txlogfaults build tag, for process-level
// tests of what a node does when its disk fails (systemtest,
// TestLeaderLogWriteFails). Release builds have nofaults.go instead.
//
// With TXLOG_FAULT_RAFT_LOG_WRITE set to a file name, every write to the Raft
// log fails while a file of that name exists in the Raft directory (Config.Dir),
// and writes as usual while it does not. The write fails before it reaches the
// log store, as a write that an I/O error ends before any of it is on disk.

// faultEnv names the trigger file of withFaults.
const faultEnv = "TXLOG_FAULT_RAFT_LOG_WRITE"

// errInjected is the error of a write failed by the trigger file.
var errInjected = errors.New("injected fault: raft log write failed")

func withFaults(c Config, ls logStore) logStore {
	name := os.Getenv(faultEnv)
	if name == "" {
		return ls
	}
	return faultyLogStore{logStore: ls, trigger: filepath.Join(c.Dir, name)}
}

// faultyLogStore fails StoreLog and StoreLogs while its trigger file exists.
type faultyLogStore struct {
	logStore
	trigger string
}

func (f faultyLogStore) StoreLog(l *raft.Log) error {
	return f.StoreLogs([]*raft.Log{l})
}

func (f faultyLogStore) StoreLogs(logs []*raft.Log) error {
	if _, err := os.Stat(f.trigger); err == nil {
		return fmt.Errorf("%w (%s exists)", errInjected, f.trigger)
	}
	return f.logStore.StoreLogs(logs)
}
