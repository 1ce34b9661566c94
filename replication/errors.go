package replication

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// Errors. Raft's own errors never leave this package: translate maps them to
// these. See doc.go for which of them leave an Apply's outcome unknown.
var (
	// ErrNotLeader means this server is not the leader, or is handing leadership
	// over. An Apply that returns it was not proposed.
	ErrNotLeader = errors.New("replication: not the leader")
	// ErrLeadershipLost means this server lost leadership after proposing an
	// entry. The entry may or may not commit: the outcome is unknown.
	ErrLeadershipLost = errors.New("replication: leadership lost")
	// ErrShutdown means the Raft is closed or closing. From Apply, the outcome is
	// unknown: the entry may already have been replicated.
	ErrShutdown = errors.New("replication: shut down")
	// ErrTimeout means ctx ended while waiting on Raft; it wraps ctx.Err(). From
	// Apply, Join and Remove the outcome is unknown.
	ErrTimeout = errors.New("replication: timeout")
	// ErrUnknownServer means the server ID is not in the cluster configuration.
	ErrUnknownServer = errors.New("replication: unknown server")
	// ErrStateMachine means the state machine failed to apply a committed entry.
	// The Raft applies nothing after it; the node must be restarted.
	ErrStateMachine = errors.New("replication: state machine failed")
	// ErrNotApplied means the entry committed at an index this server's state
	// machine had already applied, so the state machine skipped it: the state
	// machine is ahead of the log it was applied from (amnesia.go). Nothing
	// says what the skipped entry did: the outcome is unknown.
	ErrNotApplied = errors.New("replication: committed entry not applied: the state machine had applied its index already")
)

// OutcomeUnknown reports whether err, returned by Apply, leaves it unknown
// whether the entry was committed. The caller must find out later, for example
// by looking the transaction up once the cluster has a leader again.
func OutcomeUnknown(err error) bool {
	return errors.Is(err, ErrLeadershipLost) || errors.Is(err, ErrTimeout) || errors.Is(err, ErrShutdown) ||
		errors.Is(err, ErrNotApplied)
}

// translate maps an error from raft to this package's errors, naming the
// operation. Errors that are already ours pass through unchanged.
func translate(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return ErrNotLeader
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrAbortedByRestore):
		return ErrLeadershipLost
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrShutdown
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: %s: %w", ErrTimeout, op, context.DeadlineExceeded)
	case isOurs(err):
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}

func isOurs(err error) bool {
	for _, e := range []error{ErrNotLeader, ErrLeadershipLost, ErrShutdown, ErrTimeout, ErrUnknownServer, ErrStateMachine, ErrNotApplied} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// timeoutError is what a wait returns when ctx ends first.
func timeoutError(ctx context.Context) error {
	return fmt.Errorf("%w: %w", ErrTimeout, ctx.Err())
}

// raftTimeout converts ctx to the timeout raft's calls take: the time left
// until ctx's deadline, or 0 (no limit) when it has none. Raft uses it only to
// bound enqueueing; the waits that follow watch ctx itself (see await). It
// returns ctx's error when ctx is already done.
func raftTimeout(ctx context.Context) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		return 0, nil
	}
	left := time.Until(deadline)
	if left <= 0 {
		return 0, context.DeadlineExceeded
	}
	return left, nil
}
