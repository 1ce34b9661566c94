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
cd "$(dirname "$0")/.."

BIN=$(mktemp -d -t txlog-alert-bench-bin-XXXXXX)
made_work=""
if [ -z "${WORK:-}" ]; then
	WORK=$(mktemp -d -t txlog-alert-bench-XXXXXX)
	made_work=$WORK
fi
cleanup() {
	rm -rf "$BIN"
	if [ -n "$made_work" ]; then rm -rf "$made_work"; fi
}
trap cleanup EXIT

echo "== building"
go build -o "$BIN/txlogd" ./cmd/txlogd
(cd tools && go build -o "$BIN/alertbench" ./alertbench)

echo "== machine"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with local changes)')"
echo "cores: $(nproc), kernel $(uname -r), $(go version | awk '{print $3}'), load before: $(cut -d' ' -f1-3 /proc/loadavg)"

"$BIN/alertbench" --txlogd "$BIN/txlogd" --dir "$WORK" --tries "${TRIES:-10}" \
	--no-leader-for "${NO_LEADER_FOR:-5s}" --leader-changed-for "${LEADER_CHANGED_FOR:-10s}" "$@"

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
