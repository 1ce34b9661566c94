#!/usr/bin/env bash
# Compares two builds of txlogd under the same load, in A/B pairs: each pair
# runs `txlog bench --local` once on each build, on fresh three-node clusters,
# and the order swaps from one pair to the next, so that a machine that slows
# down or speeds up during the run weighs on both alike. It prints every run,
# then each pair's ratios new/old (throughput, the nodes' CPU per transaction,
# p50) and their medians: the A/B figures of docs/performance.md.
#
# Usage: scripts/ab.sh OLD NEW [txlog bench flags]
#   OLD, NEW   git revisions to build txlogd from; "." is the work tree as it is
#   flags      the workload (default: --clients 64), for example
#              --clients 1, or --clients 16 --batch 100
#
# The load generator (txlog) is built once, from the work tree, and drives
# both. Settings (environment):
#   PAIRS=8          A/B pairs
#   OLD_ENV, NEW_ENV environment settings (VAR=value ...) for the runs of one
#                    build: the load generator and the nodes it starts (a
#                    runtime setting such as GOGC, measured with OLD and NEW
#                    the same build)
#   OLD_FLAGS, NEW_FLAGS
#                    extra txlog bench flags for the runs of one build, after
#                    the workload's: what security costs, on one build, is
#                    OLD_FLAGS= NEW_FLAGS="--local-security tls" scripts/ab.sh . .
#                    (tls, mtls, token or mtls+token; --local-peer-tls adds
#                    TLS between the nodes)
#   DURATION=10s     measured time of a run, after WARMUP=2s
#   WORK=<temp dir>  builds and cluster data (removed at the end unless given)
#   OUT=<temp dir>   each run's full output, and summary.txt (kept)
#
# A change that moves a cost coming every few seconds (a flush, a snapshot)
# needs runs of 30 s or more: a short run may not see it at all
# (docs/performance.md, "How many runs"). Build nothing else while it runs.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 2 ]; then
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 2
fi
old=$1 new=$2
shift 2
flags=("$@")
if [ ${#flags[@]} -eq 0 ]; then flags=(--clients 64); fi
PAIRS=${PAIRS:-8}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}

made_work=""
if [ -z "${WORK:-}" ]; then
	WORK=$(mktemp -d -t txlog-ab-XXXXXX)
	made_work=$WORK
fi
OUT=${OUT:-$(mktemp -d -t txlog-ab-out-XXXXXX)}
mkdir -p "$WORK/bin" "$OUT"
trees=()
cleanup() {
	for t in "${trees[@]}"; do git worktree remove --force "$t" >/dev/null 2>&1 || true; done
	if [ -n "$made_work" ]; then rm -rf "$made_work"; fi
}
trap cleanup EXIT

# build REV NAME: txlogd of revision REV as $WORK/bin/NAME; says which in
# $built (not in a subshell: trees must keep the worktree it adds).
build() {
	local rev=$1 name=$2 dir
	if [ "$rev" = "." ]; then
		go build -o "$WORK/bin/$name" ./cmd/txlogd
		built="$name: the work tree ($(git rev-parse --short HEAD) and its changes)"
		return
	fi
	dir="$WORK/src-$name"
	git worktree add --detach --quiet "$dir" "$rev"
	trees+=("$dir")
	(cd "$dir" && go build -o "$WORK/bin/$name" ./cmd/txlogd)
	built="$name: $(git rev-parse --short "$rev") ($rev)"
}

echo "== building"
go build -o "$WORK/bin/txlog" ./cmd/txlog
build "$old" old
echo "$built" | tee "$OUT/summary.txt"
build "$new" new
echo "$built" | tee -a "$OUT/summary.txt"
if [ -n "${OLD_ENV:-}${NEW_ENV:-}" ]; then echo "environment: old ${OLD_ENV:-(none)}, new ${NEW_ENV:-(none)}" | tee -a "$OUT/summary.txt"; fi
if [ -n "${OLD_FLAGS:-}${NEW_FLAGS:-}" ]; then echo "bench flags: old ${OLD_FLAGS:-(none)}, new ${NEW_FLAGS:-(none)}" | tee -a "$OUT/summary.txt"; fi
if [ -n "${OLD_NODE_FLAGS:-}${NEW_NODE_FLAGS:-}" ]; then echo "txlogd flags: old ${OLD_NODE_FLAGS:-(none)}, new ${NEW_NODE_FLAGS:-(none)}" | tee -a "$OUT/summary.txt"; fi
echo "workload: txlog bench --local ${flags[*]} --duration $DURATION --warmup $WARMUP; $PAIRS pairs" | tee -a "$OUT/summary.txt"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/summary.txt"

# run NAME PAIR: one bench run on build NAME; prints "tx/s cpu kernel switches
# p50 steal".
run() {
	local name=$1 pair=$2 data out
	data=$(mktemp -d "$WORK/run-XXXXXX")
	out="$OUT/pair$pair-$name.txt"
	local -a envs=() extra=() nodeflags=()
	local rc
	if [ "$name" = old ]; then
		read -ra envs <<<"${OLD_ENV:-}"
		read -ra extra <<<"${OLD_FLAGS:-}"
		read -ra nodeflags <<<"${OLD_NODE_FLAGS:-}"
	else
		read -ra envs <<<"${NEW_ENV:-}"
		read -ra extra <<<"${NEW_FLAGS:-}"
		read -ra nodeflags <<<"${NEW_NODE_FLAGS:-}"
	fi
	if [ ${#nodeflags[@]} -gt 0 ]; then nodeflags=(-- "${nodeflags[@]}"); fi
	env "${envs[@]}" "$WORK/bin/txlog" bench --local --local-dir "$data" --txlogd "$WORK/bin/$name" \
		"${flags[@]}" "${extra[@]}" --duration "$DURATION" --warmup "$WARMUP" --progress 0 "${nodeflags[@]}" >"$out" 2>&1 && rc=0 || rc=$?
	rm -rf "$data"
	local tp cpu p50 steal
	tp=$(sed -n 's/^throughput  *\([0-9.]*\) tx\/s.*/\1/p' "$out")
	# bench exits 1 when any request failed; a run that still measured is
	# kept (and said), one that did not stops the comparison.
	if [ "$rc" -ne 0 ]; then
		if [ -z "$tp" ]; then
			echo "run $name of pair $pair failed; see $out" >&2
			exit 1
		fi
		echo "run $name of pair $pair: some requests failed (exit $rc), kept; see $out" >&2
	fi
	cpu=$(sed -n 's/^nodes CPU.*(\([0-9]*\)µs per tx, \([0-9]*\)µs of it in the kernel; \([0-9.]*\) context switches.*/\1 \2 \3/p' "$out")
	p50=$(sed -n 's/^tx latency  *p50 \([0-9.]*\)ms.*/\1/p' "$out")
	if [ -z "$p50" ]; then p50=$(sed -n 's/^latency  *p50 \([0-9.]*\)ms.*/\1/p' "$out"); fi
	steal=$(sed -n 's/^machine  *\([0-9.]*\)% of its CPU time stolen.*/\1/p' "$out")
	echo "$tp $cpu $p50 ${steal:--}"
}

echo "== runs (pair, build: tx/s, node CPU µs/tx, of it kernel µs/tx, context switches/tx, p50 ms, % of the machine's CPU time the host stole)" | tee -a "$OUT/summary.txt"
ratios=()
for pair in $(seq 1 "$PAIRS"); do
	order=(old new)
	if [ $((pair % 2)) -eq 0 ]; then order=(new old); fi
	declare -A got=()
	for name in "${order[@]}"; do
		got[$name]=$(run "$name" "$pair")
		echo "$pair $name ${got[$name]}" | tee -a "$OUT/summary.txt"
	done
	ratios+=("$(echo "${got[old]} ${got[new]}" | awk '{ printf "%.3f %.3f %.3f %s %s", $7/$1, $8/$2, $11/$5, $6, $12 }')")
	unset got
done

echo "== new/old, pair by pair, and the medians" | tee -a "$OUT/summary.txt"
# row NAME FIELD BETTER: the pairs' ratios in FIELD (1-3), their median, and
# how many are better than 1 (BETTER: up or down).
row() {
	local name=$1 field=$2 better=$3 vals sorted n med k
	vals=$(printf '%s\n' "${ratios[@]}" | cut -d' ' -f"$field")
	sorted=$(echo "$vals" | sort -g)
	n=$(echo "$sorted" | wc -l)
	med=$(echo "$sorted" | awk -v n="$n" '{ a[NR] = $1 } END { printf "%.2f", n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }')
	if [ "$better" = up ]; then
		k=$(echo "$vals" | awk '$1 > 1' | wc -l)
		better="above 1"
	else
		k=$(echo "$vals" | awk '$1 < 1' | wc -l)
		better="below 1"
	fi
	printf '%-25s %s  median %s (%d of %d %s)\n' "$name" "$(echo "$vals" | awk '{ printf " %.2f", $1 }')" "$med" "$k" "$n" "$better"
}
{
	row throughput 1 up
	row "node CPU per transaction" 2 down
	row p50 3 down
	# The pairs in which the host stole under 2% of the machine's CPU time
	# during both runs: a run with steal is slower (each percent of it cost
	# about 2.6% of the throughput; docs/performance.md, "The machine"), and
	# these pairs compare the builds on equal terms.
	calm=()
	for r in "${ratios[@]}"; do
		read -r _ _ _ so sn <<<"$r"
		if [ "$so" != - ] && [ "$sn" != - ] && awk -v a="$so" -v b="$sn" 'BEGIN { exit !(a < 2 && b < 2) }'; then calm+=("$r"); fi
	done
	if [ ${#calm[@]} -gt 0 ]; then
		ratios=("${calm[@]}")
		echo "-- the ${#calm[@]} pairs with under 2% steal in both runs"
		row throughput 1 up
		row "node CPU per transaction" 2 down
	else
		echo "-- no pair had under 2% steal in both runs"
	fi
} | tee -a "$OUT/summary.txt"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/summary.txt"
echo "full output in $OUT"
