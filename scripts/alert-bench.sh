#!/usr/bin/env bash
# Measures how long txlog's alerts take to reach a webhook after a leader
# SIGKILL (issue 34; docs/operations.md, "Alerts") with tools/alertbench on a
# fresh local three-node cluster: TRIES times it kills the leader, times the
# arrival of TxlogLeaderChanged (and TxlogNoLeader if the election outlasts
# NO_LEADER_FOR) at its own receiver, restarts the node and waits until every
# alert resolved; it prints each try, median/min/max per alert and the copies
# of each (one firing and one resolved per try expected).
#
# Settings (environment):
#   TRIES=10 NO_LEADER_FOR=5s LEADER_CHANGED_FOR=10s
#   WORK=<temp dir>   where the cluster keeps its data (removed at the end)
# With the defaults it takes about 4 minutes. Run it on a quiet machine: the
# numbers are latencies.
set -euo pipefail
. "$(dirname "$0")/bench-prologue.sh" alert-bench

bench_build cmd/txlogd tools/alertbench
bench_machine

"$BIN/alertbench" --txlogd "$BIN/txlogd" --dir "$WORK" --tries "${TRIES:-10}" \
	--no-leader-for "${NO_LEADER_FOR:-5s}" --leader-changed-for "${LEADER_CHANGED_FOR:-10s}" "$@"

bench_load_after
