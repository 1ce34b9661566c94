#!/usr/bin/env bash
# Compares txlog with etcd on this machine, in one run, and prints the medians
# and the ratios txlog/etcd (see docs/performance.md).
#
# Both get the same workload: closed-loop single-op puts of 256-byte values,
# round-robin over all three nodes, at 1, 16 and 64 clients. Each run starts a
# fresh three-node cluster in a new directory under WORK (txlog bench --local,
# etcdbench --local with Debian's etcd-server: default settings, fsync on),
# warms up, measures, and removes the cluster. The two systems alternate
# which goes first. txlog alone also runs POST /v1/tx/batch with 100
# transactions per request, ack=accepted and ack=all, at 16 clients. It
# measures the floor in WORK first and again at the end (fdatasync, a
# raft-boltdb append, a bbolt commit and loopback round trips) and prints both,
# with the 1-client target each gives; it also measures it between the
# repeats, and prints the target from the medians of all of them.
#
# Settings (environment):
#   REPEATS=3          runs of each workload, each on fresh clusters
#   DURATION=12s       measured time of a run, after WARMUP=2s
#   CLIENTS="1 16 64"  client counts of the comparison
#   EXTRA=1            also the txlog-only workloads (0: skip them)
#   WORK=<temp dir>    where the clusters keep their data: put it on the disk to measure
#   OUT=<temp dir>     where the JSON results and summary.md go (kept)
#   MAX_STEAL=5        a run during which the host stole more than this percent
#                      of the machine's CPU time is measured again, up to
#                      RETRIES=2 times (the last one is kept); the runs set aside
#                      go to OUT/discarded.json and the summary lists them.
#                      MAX_STEAL=100 keeps every run (a percent of steal costs
#                      a run about 2.6% of its throughput, and it comes and goes
#                      by the run: docs/performance.md, "The machine")
#   GOMAXPROCS         passed on to both systems' nodes and clients alike; with
#                      three nodes on two cores, GOMAXPROCS=1 gives each process
#                      its share of the machine (docs/performance.md)
#
# With the defaults it takes about 10 minutes, more with runs measured again. It installs etcd-server with
# apt-get when etcd is missing. Timings are noisy on a small shared machine:
# compare the ratios of one run, not absolute numbers across runs.
set -euo pipefail
cd "$(dirname "$0")/.."

REPEATS=${REPEATS:-3}
DURATION=${DURATION:-12s}
WARMUP=${WARMUP:-2s}
CLIENTS=${CLIENTS:-"1 16 64"}
EXTRA=${EXTRA:-1}
MAX_STEAL=${MAX_STEAL:-5}
RETRIES=${RETRIES:-2}
VALUE_SIZE=256

made_work=""
if [ -z "${WORK:-}" ]; then
	WORK=$(mktemp -d -t txlog-compare-XXXXXX)
	made_work=$WORK
fi
OUT=${OUT:-$(mktemp -d -t txlog-compare-out-XXXXXX)}
mkdir -p "$WORK" "$OUT"
BIN="$WORK/bin"
cleanup() { if [ -n "$made_work" ]; then rm -rf "$made_work"; fi; }
trap cleanup EXIT

if ! command -v etcd >/dev/null 2>&1; then
	echo "== installing etcd-server"
	if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends etcd-server >/dev/null
fi

echo "== building"
mkdir -p "$BIN"
go build -o "$BIN/txlog" ./cmd/txlog
go build -o "$BIN/txlogd" ./cmd/txlogd
(cd tools && go build -o "$BIN/etcdbench" ./etcdbench && go build -o "$BIN/floor" ./floor && go build -o "$BIN/benchsummary" ./benchsummary)

echo "== machine"
{
	echo "cores: $(nproc)"
	echo "memory: $(free -h | awk '/^Mem:/ {print $2}')"
	echo "disk: $(df -h "$WORK" | awk 'NR==2 {print $1, $2}') ($(findmnt -n -o FSTYPE,OPTIONS -T "$WORK" 2>/dev/null || stat -f -c %T "$WORK"))"
	echo "kernel: $(uname -r)"
	echo "go: $(go version | awk '{print $3}')"
	echo "etcd: $(etcd --version | awk '/etcd Version/ {print $3}')"
	echo "GOMAXPROCS: ${GOMAXPROCS:-default (one per core)}"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/machine.txt"

echo "== floor (in the data directory's file system)"
"$BIN/floor" --dir "$WORK" --json >"$OUT/floor.json"
"$BIN/benchsummary" --floor "$OUT/floor.json"

common=(--duration "$DURATION" --warmup "$WARMUP" --value-size "$VALUE_SIZE" --json --progress 0 --local-dir "$WORK")

# measure FILE COMMAND...: runs the bench COMMAND (JSON on stdout), again while
# the host stole more than MAX_STEAL% during it (up to RETRIES times), and
# appends the run it keeps to FILE, the others to discarded.json.
measure() {
	local file=$1
	shift
	local out steal attempt=0
	while :; do
		out=$("$@")
		printf '%s\n' "$out" | "$BIN/benchsummary" --brief /dev/stdin
		steal=$(printf '%s\n' "$out" | grep -o '"machine_steal_pct": *[0-9.e+-]*' | grep -o '[0-9.e+-]*$' || true)
		if [ "$attempt" -lt "$RETRIES" ] && [ -n "$steal" ] && awk -v s="$steal" -v m="$MAX_STEAL" 'BEGIN { exit !(s > m) }'; then
			echo "      (the host stole more than $MAX_STEAL% during it: measured again)"
			printf '%s\n' "$out" >>"$OUT/discarded.json"
			attempt=$((attempt + 1))
			continue
		fi
		printf '%s\n' "$out" >>"$file"
		return
	done
}

run_txlog() { # file, txlog bench flags...
	local file=$1
	shift
	measure "$file" "$BIN/txlog" bench --local --txlogd "$BIN/txlogd" "${common[@]}" "$@"
}

run_etcd() { # file, etcdbench flags...
	local file=$1
	shift
	measure "$file" "$BIN/etcdbench" --local --etcd etcd "${common[@]}" "$@"
}

: >"$OUT/txlog.json"
: >"$OUT/etcd.json"
: >"$OUT/txlog-extra.json"
: >"$OUT/discarded.json"
during=()
for rep in $(seq 1 "$REPEATS"); do
	echo "== repeat $rep of $REPEATS"
	for c in $CLIENTS; do
		if [ $((rep % 2)) -eq 1 ]; then
			run_txlog "$OUT/txlog.json" --clients "$c"
			run_etcd "$OUT/etcd.json" --clients "$c"
		else
			run_etcd "$OUT/etcd.json" --clients "$c"
			run_txlog "$OUT/txlog.json" --clients "$c"
		fi
	done
	if [ "$EXTRA" = 1 ]; then
		run_txlog "$OUT/txlog-extra.json" --clients 16 --batch 100
		run_txlog "$OUT/txlog-extra.json" --clients 16 --ack accepted
		run_txlog "$OUT/txlog-extra.json" --clients 16 --ack all
	fi
	if [ "$rep" -lt "$REPEATS" ]; then
		# The floor between the repeats too: the summary gives the 1-client
		# target from the medians of all the floors of the run.
		"$BIN/floor" --dir "$WORK" --json >"$OUT/floor-$rep.json"
		during+=(--floor-during "$OUT/floor-$rep.json")
	fi
done

# The floor again: a disk busy with other work while either was measured shows
# as a difference between the two.
echo "== floor again, after the runs"
"$BIN/floor" --dir "$WORK" --json >"$OUT/floor-after.json"

echo "== summary"
"$BIN/benchsummary" --floor "$OUT/floor.json" --floor "$OUT/floor-after.json" "${during[@]}" "$OUT/txlog.json" "$OUT/etcd.json" "$OUT/txlog-extra.json" | tee "$OUT/summary.md"
if [ -s "$OUT/discarded.json" ]; then
	{
		echo
		echo "Runs measured again because the host stole more than $MAX_STEAL% of the machine's CPU time during them (not in the tables):"
		echo
		"$BIN/benchsummary" --brief "$OUT/discarded.json" | sed 's/^/    /'
	} | tee -a "$OUT/summary.md"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt"
echo "results in $OUT"
