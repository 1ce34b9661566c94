#!/usr/bin/env bash
# Measures what security costs on the write path: one build of txlogd, each
# setting of `txlog bench --local --local-security` (off, token, tls, mtls,
# mtls+token; "all" is mtls+token with --local-peer-tls) at 1 and at 64
# clients, in rounds whose order rotates, so that a machine that slows down or
# speeds up weighs on every setting alike. It prints every run, then per
# setting the medians of throughput, p50 and p99 and their ratios to off:
# the figures of docs/security.md, "The cost of security".
#
# Usage: scripts/security-cost.sh
# Settings (environment):
#   ROUNDS=3                     rounds (each runs every setting once per client count)
#   MODES="off token tls mtls mtls+token all"
#   CLIENTS="1 64"
#   DURATION=8s WARMUP=2s        of each run
#   OUT=<temp dir>               each run's output and summary.txt (kept)
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
read -ra modes <<<"${MODES:-off token tls mtls mtls+token all}"
read -ra clients <<<"${CLIENTS:-1 64}"
DURATION=${DURATION:-8s}
WARMUP=${WARMUP:-2s}
WORK=$(mktemp -d -t txlog-sec-XXXXXX)
OUT=${OUT:-$(mktemp -d -t txlog-sec-out-XXXXXX)}
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/bin" "$OUT"

go build -o "$WORK/bin/txlog" ./cmd/txlog
go build -o "$WORK/bin/txlogd" ./cmd/txlogd
echo "build: $(git rev-parse --short HEAD); $ROUNDS rounds of ${modes[*]} at ${clients[*]} clients, $DURATION each" | tee "$OUT/summary.txt"

# run MODE CLIENTS ROUND: prints "tx/s p50 p99".
run() {
	local mode=$1 c=$2 round=$3 out data rc
	local -a sec=(--local-security "$mode")
	if [ "$mode" = all ]; then sec=(--local-security mtls+token --local-peer-tls); fi
	out="$OUT/r$round-$mode-c$c.txt"
	data=$(mktemp -d "$WORK/run-XXXXXX")
	"$WORK/bin/txlog" bench --local --local-dir "$data" --txlogd "$WORK/bin/txlogd" "${sec[@]}" \
		--clients "$c" --duration "$DURATION" --warmup "$WARMUP" --progress 0 >"$out" 2>&1 && rc=0 || rc=$?
	rm -rf "$data"
	local tp lat
	tp=$(sed -n 's/^throughput  *\([0-9.]*\) tx\/s.*/\1/p' "$out")
	# bench exits 1 when any request failed: a run that still measured is
	# kept (and said), one that did not stops the script.
	if [ "$rc" -ne 0 ]; then
		if [ -z "$tp" ]; then
			echo "run $mode at $c clients, round $round, failed; see $out" >&2
			exit 1
		fi
		echo "run $mode at $c clients, round $round: some requests failed (exit $rc), kept; see $out" >&2
	fi
	lat=$(sed -n 's/^tx latency  *p50 \([0-9.]*\)ms  p90 [0-9.]*ms  p99 \([0-9.]*\)ms.*/\1 \2/p' "$out")
	if [ -z "$lat" ]; then lat=$(sed -n 's/^latency  *p50 \([0-9.]*\)ms  p90 [0-9.]*ms  p99 \([0-9.]*\)ms.*/\1 \2/p' "$out"); fi
	echo "$tp $lat"
}

declare -A res=()
echo "== runs (round, setting, clients: tx/s p50_ms p99_ms)" | tee -a "$OUT/summary.txt"
for round in $(seq 1 "$ROUNDS"); do
	n=${#modes[@]}
	for i in $(seq 0 $((n - 1))); do
		mode=${modes[$(((i + round - 1) % n))]}
		for c in "${clients[@]}"; do
			r=$(run "$mode" "$c" "$round")
			res[$mode,$c]+="$r"$'\n'
			echo "$round $mode $c $r" | tee -a "$OUT/summary.txt"
		done
	done
done

# median FIELD LINES: the median of field FIELD (1-3) of LINES.
median() {
	printf '%s' "$2" | awk -v f="$1" 'NF { print $f }' | sort -g | awk '{ a[NR] = $1 } END { printf "%.2f", NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
{
	echo "== medians, and the ratio to off"
	for c in "${clients[@]}"; do
		base_tp=$(median 1 "${res[off,$c]:-}")
		base_p50=$(median 2 "${res[off,$c]:-}")
		base_p99=$(median 3 "${res[off,$c]:-}")
		for mode in "${modes[@]}"; do
			tp=$(median 1 "${res[$mode,$c]}")
			p50=$(median 2 "${res[$mode,$c]}")
			p99=$(median 3 "${res[$mode,$c]}")
			awk -v m="$mode" -v c="$c" -v tp="$tp" -v p50="$p50" -v p99="$p99" -v btp="$base_tp" -v b50="$base_p50" -v b99="$base_p99" \
				'BEGIN { printf "%3s clients %-11s %9.0f tx/s (%.2f)  p50 %6.2f ms (%.2f)  p99 %6.2f ms (%.2f)\n", c, m, tp, btp ? tp / btp : 0, p50, b50 ? p50 / b50 : 0, p99, b99 ? p99 / b99 : 0 }'
		done
	done
} | tee -a "$OUT/summary.txt"
echo "full output in $OUT"
