#!/usr/bin/env bash
# Measures txlog as its log grows (issue 5) with tools/scale: throughput and
# p99 at every checkpoint of log size, resident memory and data-dir size per
# node, and at the end how long a restarted node takes to catch up.
#
# It builds txlogd, txlog and scale into a temporary directory, starts a fresh
# three-node cluster under WORK and removes it at the end. The table goes to
# stdout and to OUT/scale.txt; OUT also gets scale.json (every sample),
# scale.svg (throughput, p99 and RSS against log size) and machine.txt.
#
# Settings (environment):
#   TOTAL=1000000   log size to grow to, in transactions
#   STEP=100000     transactions between checkpoints
#   MEASURE=10s     measured time of each measurement run (64 clients)
#   REPEATS=3       measurement runs per checkpoint; the table shows the median
#   MAX_STEAL=5     a measurement run during which the host stole more than this
#                   percent of the machine's CPU time is run again, RETRIES=2
#                   times at most (100 keeps every run)
#   RESTART_LOAD=0  clients of light load on the other nodes during restarts
#   WORK=<temp dir> where the cluster keeps its data: put it on the disk to measure
#   KEEP=0          1 keeps the cluster's data dirs and logs (in WORK/scale-*)
#   OUT=<temp dir>  where the results go (kept)
# Arguments are passed to scale; txlogd flags go after "--", for example
#   scripts/scale.sh -- --raft-log=wal
#
# With the defaults it takes at least 10 minutes (the log grew at about 5,000
# tx/s in small runs on the development machine; more if that drops as the log
# grows) and needs a few GiB of disk under WORK: each node's store keeps every
# transaction. For a quick look: TOTAL=20000 STEP=10000 MEASURE=3s.
set -euo pipefail
cd "$(dirname "$0")/.."

TOTAL=${TOTAL:-1000000}
STEP=${STEP:-100000}
MEASURE=${MEASURE:-10s}
REPEATS=${REPEATS:-3}
MAX_STEAL=${MAX_STEAL:-5}
RETRIES=${RETRIES:-2}
RESTART_LOAD=${RESTART_LOAD:-0}
KEEP=${KEEP:-0}

BIN=$(mktemp -d -t txlog-scale-bin-XXXXXX)
made_work=""
if [ -z "${WORK:-}" ]; then
	WORK=$(mktemp -d -t txlog-scale-XXXXXX)
	made_work=$WORK
fi
OUT=${OUT:-$(mktemp -d -t txlog-scale-out-XXXXXX)}
mkdir -p "$WORK" "$OUT"
RUN=$(mktemp -d "$WORK/scale-XXXXXX")
cleanup() {
	rm -rf "$BIN"
	if [ "$KEEP" = 1 ]; then
		echo "cluster kept in $RUN"
	else
		rm -rf "$RUN"
		if [ -n "$made_work" ]; then rm -rf "$made_work"; fi
	fi
}
trap cleanup EXIT

echo "== building"
go build -o "$BIN/txlog" ./cmd/txlog
go build -o "$BIN/txlogd" ./cmd/txlogd
(cd tools && go build -o "$BIN/scale" ./scale)

echo "== machine"
{
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with local changes)')"
	echo "cores: $(nproc)"
	echo "memory: $(free -h | awk '/^Mem:/ {print $2}')"
	echo "disk: $(df -h "$WORK" | awk 'NR==2 {print $1, $2}') ($(findmnt -n -o FSTYPE,OPTIONS -T "$WORK" 2>/dev/null || stat -f -c %T "$WORK"))"
	echo "kernel: $(uname -r)"
	echo "go: $(go version | awk '{print $3}')"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/machine.txt"

echo "== scale: TOTAL=$TOTAL STEP=$STEP MEASURE=$MEASURE REPEATS=$REPEATS RESTART_LOAD=$RESTART_LOAD"
"$BIN/scale" --txlogd "$BIN/txlogd" --txlog "$BIN/txlog" --dir "$RUN" \
	--total "$TOTAL" --step "$STEP" --measure "$MEASURE" --repeats "$REPEATS" --max-steal "$MAX_STEAL" --retries "$RETRIES" --restart-load "$RESTART_LOAD" \
	--json "$OUT/scale.json" --svg "$OUT/scale.svg" "$@" | tee "$OUT/scale.txt"

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt"
echo "results in $OUT"
