#!/usr/bin/env bash
# Measures how txlog serves readers of its log (issue 33; docs/consuming.md,
# "Measurements") with tools/streambench, each part on a fresh local
# three-node cluster:
#   - subscribers: WRITERS clients write single-put transactions to the leader
#     while 0, 1, 10 or 100 SSE subscribers (GET /v1/log/stream) read on the
#     followers, in the order of SUBS, the baselines (0) between the others:
#     the writers' throughput as a fraction of the neighbouring baselines, and
#     the p50/p99 delay from the writer's committed answer to the delivery;
#   - catchup: CATCHUP_N transactions written in batches, then read from
#     offset 0 on a follower by a consumer.Consumer, by the stream and by the
#     paged GET /v1/log: entries per second of each.
#
# Settings (environment):
#   SUBS=0,1,0,10,0,100,0  WRITERS=64  WARMUP=5s  DURATION=20s
#   CATCHUP_N=1000000  READERS=consumer,stream,log
#   PARTS=subscribers,catchup
#   WORK=<temp dir>   where the clusters keep their data (removed at the end;
#                     the catchup part needs a few GB)
# With the defaults it takes about 6 minutes. For a quick look:
#   SUBS=0,1,0,10,0 DURATION=3s WARMUP=1s CATCHUP_N=20000 scripts/stream-bench.sh
# Run it on a quiet machine: the numbers are throughputs and latencies, and
# the bench shares the machine's CPUs with the nodes.
set -euo pipefail
. "$(dirname "$0")/bench-prologue.sh" stream-bench

bench_build cmd/txlogd tools/streambench
bench_machine

"$BIN/streambench" -txlogd "$BIN/txlogd" -dir "$WORK" \
	-parts "${PARTS:-subscribers,catchup}" -subs "${SUBS:-0,1,0,10,0,100,0}" -writers "${WRITERS:-64}" \
	-warmup "${WARMUP:-5s}" -duration "${DURATION:-20s}" \
	-catchup-n "${CATCHUP_N:-1000000}" -readers "${READERS:-consumer,stream,log}" "$@"

bench_load_after
