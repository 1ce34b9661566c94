#!/usr/bin/env bash
# Measures what backups cost (docs/deploy.md, "What a backup costs"): a
# three-node cluster of `txlog local` is loaded with N transactions by `txlog
# bench -n N --batch B` (POST /v1/tx/batch), then it times `txlog backup` (from
# a follower, verified) and its size, `txlog backup --verify`, `txlog restore`
# into a fresh data dir and the restored txlogd's start until it leads with
# the backup's index applied. Last, the write throughput of `txlog bench`
# (single transactions) without and with back-to-back backups from a follower,
# interleaved (without, with, without, with, ...), and the medians and their
# ratio.
#
# Usage: scripts/backup-cost.sh
# Settings (environment):
#   N=1000000          transactions loaded
#   BATCH=100          transactions per POST /v1/tx/batch while loading
#   LOAD_CLIENTS=16    clients while loading
#   VALUE_SIZE=64      bytes of each value as stored
#   ROUNDS=2           pairs of throughput runs (without, with)
#   CLIENTS=16         clients of the throughput runs
#   DURATION=10s WARMUP=2s   of each throughput run
#   OUT=<temp dir>     each run's output and summary.txt (kept)
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-1000000}
BATCH=${BATCH:-100}
LOAD_CLIENTS=${LOAD_CLIENTS:-16}
VALUE_SIZE=${VALUE_SIZE:-64}
ROUNDS=${ROUNDS:-2}
CLIENTS=${CLIENTS:-16}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
WORK=$(mktemp -d -t txlog-backup-XXXXXX)
OUT=${OUT:-$(mktemp -d -t txlog-backup-out-XXXXXX)}
mkdir -p "$WORK/bin" "$OUT"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT

say() { echo "$*" | tee -a "$OUT/summary.txt"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
# poll SECONDS CMD...: run CMD every 0.2s until it succeeds, at most SECONDS.
poll() {
	local end=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		if [ "$SECONDS" -ge "$end" ]; then
			echo "gave up waiting for: $*" >&2
			return 1
		fi
		sleep 0.2
	done
}
# freeport: a loopback port nothing listens on.
freeport() {
	local p
	while :; do
		p=$((20000 + RANDOM % 30000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}
field() { grep -o "\"$1\": *[0-9.]*" | head -1 | sed 's/.*: *//'; }

go build -o "$WORK/bin/txlog" ./cmd/txlog
go build -o "$WORK/bin/txlogd" ./cmd/txlogd
txlog=$WORK/bin/txlog
say "build: $(git rev-parse --short HEAD); N=$N (batches of $BATCH, $LOAD_CLIENTS clients, values of $VALUE_SIZE bytes); $ROUNDS rounds of $DURATION at $CLIENTS clients; $(nproc) CPUs"

"$txlog" local --dir "$WORK/c" --http-base-port 0 --raft-base-port 0 --no-redis --txlogd "$WORK/bin/txlogd" >"$OUT/local.log" 2>&1 &
pids+=($!)
poll 60 test -s "$WORK/c/n1/http.addr" -a -s "$WORK/c/n2/http.addr" -a -s "$WORK/c/n3/http.addr"
targets=$(for i in 1 2 3; do printf 'http://%s,' "$(cat "$WORK/c/n$i/http.addr")"; done)
targets=${targets%,}
export TXLOG_TARGETS=$targets
poll 60 "$txlog" endpoint health

t0=$(now)
"$txlog" bench -n "$N" --batch "$BATCH" --clients "$LOAD_CLIENTS" --keys "$N" --value-size "$VALUE_SIZE" --progress 30s --json >"$OUT/load.json" 2>"$OUT/load.err"
say "load: $(field txs <"$OUT/load.json") transactions in $(since "$t0") s"

t0=$(now)
"$txlog" backup --timeout 30m "$WORK/m.backup" >"$OUT/backup.json"
took=$(since "$t0")
size=$(stat -c %s "$WORK/m.backup")
index=$(field index <"$OUT/backup.json")
say "backup: $size bytes (index $index) in $took s"
t0=$(now)
"$txlog" backup --verify "$WORK/m.backup" >/dev/null
say "verify: $(since "$t0") s"

rport=$(freeport)
t0=$(now)
"$txlog" restore "$WORK/m.backup" --data-dir "$WORK/r/r1" --id r1 --raft-addr "127.0.0.1:$rport" >"$OUT/restore.json"
say "txlog restore: $(since "$t0") s"
t1=$(now)
"$WORK/bin/txlogd" --id r1 --data-dir "$WORK/r/r1" --raft-addr "127.0.0.1:$rport" --http-addr 127.0.0.1:0 >"$OUT/r1.log" 2>&1 &
rpid=$!
pids+=("$rpid")
restored() {
	local st
	st=$(curl -sf "http://$(cat "$WORK/r/r1/http.addr")/v1/cluster") || return 1
	grep -q '"state": *"leader"' <<<"$st" || return 1
	[ "$(field applied_index <<<"$st")" -ge "$index" ]
}
poll 600 restored
say "restored txlogd: leader with index $index applied $(since "$t1") s after its start ($(since "$t0") s from the restore's start)"
kill "$rpid"

# run MODE ROUND: one throughput run; prints tx/s.
run() {
	local mode=$1 round=$2 out=$OUT/tp-$2-$1.json bench backups=0
	"$txlog" bench --clients "$CLIENTS" --duration "$DURATION" --warmup "$WARMUP" --progress 0 --json >"$out" 2>"$out.err" &
	bench=$!
	if [ "$mode" = with ]; then
		while kill -0 "$bench" 2>/dev/null; do
			"$txlog" backup --timeout 10m "$WORK/during.backup" >/dev/null && backups=$((backups + 1))
		done
	fi
	wait "$bench"
	echo "$(field tx_per_sec <"$out") $backups"
}
declare -A tp=()
say "== throughput runs (round, mode: tx/s, backups taken)"
for round in $(seq 1 "$ROUNDS"); do
	for mode in without with; do
		r=$(run "$mode" "$round")
		tp[$mode]+="${r%% *}"$'\n'
		say "$round $mode: $r"
	done
done
median() { printf '%s' "$1" | awk 'NF' | sort -g | awk '{ a[NR] = $1 } END { printf "%.0f", NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
without=$(median "${tp[without]}")
with=$(median "${tp[with]}")
say "== medians: $without tx/s without a backup, $with tx/s with back-to-back backups: $(awk -v a="$with" -v b="$without" 'BEGIN { printf "%.2f", a / b }') of it"
echo "output in $OUT"
