#!/usr/bin/env bash
# Measures txlog against NATS JetStream and etcd on this machine, in one
# interleaved run, with one load generator (tools/compare), and writes a
# markdown table of the medians (docs/performance.md, "Against JetStream and
# etcd").
#
# Systems, each a fresh three-node cluster on loopback ports chosen at run
# time, with its data in a temporary directory removed at the end:
#   txlog-stream  txlog, fsync on, through client.Client shared by the clients
#   txlog-async   the same Client's SubmitAsync with 64 writes in flight
#   txlog-http    txlog, fsync on, POST /v1/tx with net/http round the nodes
#   nats          nats-server (JetStream, R3 file stream, sync_interval: always),
#                 js.Publish with the clients sharing one connection
#   nats-async    the same, js.PublishAsync with 64 publishes in flight
#   etcd          etcd (default settings, fsync on), clientv3 shared
# Closed-loop single writes of 256-byte values at 1, 16 and 64 clients. For
# each repeat and client count the systems run one after the other, the order
# turned by one at each repeat; each run warms up, measures, and samples the
# three server processes' utime+stime for the server CPU per transaction, and
# the load generator's own for the client CPU per transaction.
#
# nats-server and etcd are built from the Go module proxy, once, into a cache
# directory outside the repository (CACHE); nothing of them is in the tree.
#
# Settings (environment):
#   REPEATS=2          runs of each system at each client count
#   DURATION=10s       measured time of a run, after WARMUP=2s
#   CLIENTS="1 16 64"  client counts
#   SYSTEMS="txlog-stream txlog-async txlog-http nats nats-async etcd"
#   CACHE=<user cache dir>/txlog-compare   where the built servers are kept
#   OUT=<temp dir>     where runs.jsonl, summary.md and the floors (floor*.json,
#                      floor.md: tools/floor in the data directory's file
#                      system before the runs, between the repeats and after,
#                      and the 1-client p50 target they give) go (kept)
#   NATS_VERSION=v2.15.3  ETCD_VERSION=v3.7.3
#
# With the defaults, 36 runs of about 16 s each: about 10 minutes after the
# builds. Timings are noisy on a small shared machine: compare the ratios of
# one run.
set -euo pipefail
cd "$(dirname "$0")/.."

REPEATS=${REPEATS:-2}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
CLIENTS=${CLIENTS:-"1 16 64"}
SYSTEMS=${SYSTEMS:-"txlog-stream txlog-async txlog-http nats nats-async etcd"}
NATS_VERSION=${NATS_VERSION:-v2.15.3}
ETCD_VERSION=${ETCD_VERSION:-v3.7.3}
CACHE=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/txlog-compare}
OUT=${OUT:-$(mktemp -d -t txlog-compare-out-XXXXXX)}

WORK=$(mktemp -d -t txlog-compare-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$CACHE/bin" "$OUT"
BIN="$WORK/bin"
mkdir -p "$BIN"

echo "== building"
nats_bin="$CACHE/bin/nats-server-$NATS_VERSION"
if [ ! -x "$nats_bin" ]; then
	GOBIN="$WORK/gobin" go install "github.com/nats-io/nats-server/v2@$NATS_VERSION"
	mv "$WORK/gobin/nats-server" "$nats_bin"
fi
etcd_bin="$CACHE/bin/etcd-$ETCD_VERSION"
if [ ! -x "$etcd_bin" ]; then
	# etcd's server module has replace directives, so `go install mod@version`
	# refuses it: build its main package from a module of our own that
	# requires it.
	mod="$CACHE/etcd-$ETCD_VERSION"
	mkdir -p "$mod"
	printf 'module compare/etcd\n\ngo %s\n' "$(go env GOVERSION | sed 's/^go//')" >"$mod/go.mod"
	(cd "$mod" && GOFLAGS="${GOFLAGS:-} -mod=mod" go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" &&
		GOFLAGS="${GOFLAGS:-} -mod=mod" go build -o "$etcd_bin" go.etcd.io/etcd/server/v3)
fi
go build -o "$BIN/txlogd" ./cmd/txlogd
(cd tools && go build -o "$BIN/compare" ./compare && go build -o "$BIN/floor" ./floor && go build -o "$BIN/benchsummary" ./benchsummary)

{
	echo "cores: $(nproc)"
	echo "kernel: $(uname -r)"
	echo "go: $(go version | awk '{print $3}')"
	echo "nats-server: $("$nats_bin" --version 2>&1 | head -1)"
	echo "etcd: $("$etcd_bin" --version 2>&1 | awk '/etcd Version/ {print $3}')"
	echo "disk: $(df -h "$WORK" | awk 'NR==2 {print $1}') ($(findmnt -n -o FSTYPE -T "$WORK" 2>/dev/null || stat -f -c %T "$WORK"))"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "repeats: $REPEATS, duration: $DURATION after $WARMUP of warmup, clients: $CLIENTS"
} | tee "$OUT/machine.txt"

echo "== floor (in the data directory's file system)"
"$BIN/floor" --dir "$WORK" --json >"$OUT/floor.json"
"$BIN/benchsummary" --floor "$OUT/floor.json"

read -r -a systems <<<"$SYSTEMS"
: >"$OUT/runs.jsonl"
during=()
for rep in $(seq 1 "$REPEATS"); do
	if [ "$rep" -gt 1 ]; then
		# The floor between the repeats too: the 1-client target is taken
		# from the medians of every floor of the run.
		"$BIN/floor" --dir "$WORK" --json >"$OUT/floor-$rep.json"
		during+=(--floor-during "$OUT/floor-$rep.json")
	fi
	for c in $CLIENTS; do
		for j in "${!systems[@]}"; do
			s=${systems[$(((j + rep - 1) % ${#systems[@]}))]}
			printf '== repeat %d, %d clients, %s: ' "$rep" "$c" "$s"
			if out=$("$BIN/compare" run --system "$s" --clients "$c" --duration "$DURATION" --warmup "$WARMUP" \
				--dir "$WORK" --nats-server "$nats_bin" --etcd "$etcd_bin" --txlogd "$BIN/txlogd" 2>"$WORK/err"); then
				printf '%s\n' "$out" >>"$OUT/runs.jsonl"
				printf '%s\n' "$out" | sed -E 's/.*"tx_per_sec":([0-9.e+-]+).*"p50_ms":([0-9.e+-]+),"p99_ms":([0-9.e+-]+).*/\1 \2 \3/' |
					awk '{printf "%.0f tx/s, p50 %.2f ms, p99 %.2f ms\n", $1, $2, $3}'
			else
				echo "failed"
				sed 's/^/    /' "$WORK/err" | tail -20
			fi
		done
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt"
echo "== floor again, after the runs"
"$BIN/floor" --dir "$WORK" --json >"$OUT/floor-after.json"
"$BIN/benchsummary" --floor "$OUT/floor.json" --floor "$OUT/floor-after.json" "${during[@]}" | tee "$OUT/floor.md"

echo "== summary (medians of $REPEATS runs; ratios of throughput to JetStream's best at each client count)"
"$BIN/compare" table "$OUT/runs.jsonl" | tee "$OUT/summary.md"
echo "results in $OUT"
