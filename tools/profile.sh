#!/usr/bin/env bash
# Profiles a loaded three-node txlog cluster: CPU, allocations, blocking and
# mutex contention of the leader and of one follower, while `txlog bench`
# drives the cluster (docs/performance.md).
#
# It builds txlog and txlogd, starts a cluster with `txlog local` on free ports
# in a new directory, each node with `--debug-addr 127.0.0.1:0` (net/http/pprof
# on a listener of its own, its address in <data-dir>/debug.addr: the shipped
# binary, with its own GC settings), and for each workload runs txlog bench for
# SECONDS+10 s while it takes SECONDS-long delta profiles of the leader and a
# follower. Then it prints `go tool pprof -top` of each.
#
# Settings (environment):
#   SECONDS=20                      length of each profile
#   WORKLOADS="--clients 64|--clients 16 --batch 100"
#                                   txlog bench flags of each workload, |-separated
#   WORK=<temp dir>                 cluster data and binaries
#   OUT=<temp dir>                  profiles and their top lists (kept)
set -euo pipefail
cd "$(dirname "$0")/.."

# bash's own SECONDS counts from the environment's value, or from 0: it is
# never unset, so 0 here (the script just started) means not given.
SECONDS_=$SECONDS
if [ "$SECONDS_" -eq 0 ]; then SECONDS_=20; fi
WORKLOADS=${WORKLOADS:-"--clients 64|--clients 16 --batch 100"}
made_work=""
if [ -z "${WORK:-}" ]; then
	WORK=$(mktemp -d -t txlog-profile-XXXXXX)
	made_work=$WORK
fi
OUT=${OUT:-$(mktemp -d -t txlog-profile-out-XXXXXX)}
BIN="$WORK/bin"
mkdir -p "$BIN" "$OUT"

local_pid=""
cleanup() {
	if [ -n "$local_pid" ]; then
		kill -INT "$local_pid" 2>/dev/null || true
		wait "$local_pid" 2>/dev/null || true
	fi
	if [ -n "$made_work" ]; then rm -rf "$made_work"; fi
}
trap cleanup EXIT

echo "== building"
go build -o "$BIN/txlog" ./cmd/txlog
go build -o "$BIN/txlogd" ./cmd/txlogd

echo "== starting the cluster"
"$BIN/txlog" local --dir "$WORK/cluster" --http-base-port 0 --raft-base-port 0 --txlogd "$BIN/txlogd" \
	-- --debug-addr 127.0.0.1:0 >"$OUT/local.out" 2>"$OUT/local.err" &
local_pid=$!

# Wait for each node's HTTP and debug address and for a ready cluster.
deadline=$((SECONDS + 60))
urls=()
until [ ${#urls[@]} -eq 3 ]; do
	urls=()
	for n in n1 n2 n3; do
		f="$WORK/cluster/$n/http.addr"
		if [ -s "$f" ] && [ -s "$WORK/cluster/$n/debug.addr" ] && curl -sf "http://$(cat "$f")/readyz" >/dev/null; then
			urls+=("http://$(cat "$f")")
		fi
	done
	if [ $SECONDS -gt $deadline ]; then
		echo "cluster not ready; see $OUT/local.err" >&2
		exit 1
	fi
	sleep 0.2
done
targets=$(
	IFS=,
	echo "${urls[*]}"
)
leader=$(curl -sf "${urls[0]}/v1/cluster" | sed -n 's/.*"leader_id":"\([^"]*\)".*/\1/p')
follower=n1
if [ "$leader" = n1 ]; then follower=n2; fi
echo "targets $targets, leader $leader, profiled follower $follower"

i=0
IFS='|' read -ra workloads <<<"$WORKLOADS"
for wl in "${workloads[@]}"; do
	i=$((i + 1))
	name="w$i"
	echo "== workload $name: txlog bench $wl"
	# shellcheck disable=SC2086 # $wl is a list of flags
	"$BIN/txlog" bench --targets "$targets" --duration $((SECONDS_ + 10))s --progress 0 $wl >"$OUT/$name-bench.txt" &
	bench_pid=$!
	sleep 5 # let the load settle before the profiles start
	pids=()
	for role in leader follower; do
		id=$leader
		if [ $role = follower ]; then id=$follower; fi
		addr=$(cat "$WORK/cluster/$id/debug.addr")
		curl -sf -o "$OUT/$name-$role-cpu.pprof" "http://$addr/debug/pprof/profile?seconds=$SECONDS_" &
		pids+=($!)
		for p in allocs block mutex; do
			curl -sf -o "$OUT/$name-$role-$p.pprof" "http://$addr/debug/pprof/$p?seconds=$SECONDS_" &
			pids+=($!)
		done
	done
	wait "${pids[@]}"
	wait "$bench_pid"
	cat "$OUT/$name-bench.txt"
	for role in leader follower; do
		for p in cpu allocs block mutex; do
			f="$OUT/$name-$role-$p.pprof"
			args=(-top -nodecount=30)
			if [ $p = allocs ]; then args+=(-sample_index=alloc_space); fi
			go tool pprof "${args[@]}" "$f" >"$f.top.txt" 2>/dev/null || true
			echo "-- $name $role $p: $f.top.txt"
			sed -n '1,18p' "$f.top.txt"
		done
	done
done
echo "profiles in $OUT"
