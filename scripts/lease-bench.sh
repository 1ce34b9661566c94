#!/usr/bin/env bash
# Measures txlog's leases (issue 32; docs/leases.md, "Measurements") with
# tools/leasebench on a fresh local three-node cluster:
#   - acquire and renew p50/p99 at one client next to a plain write's;
#   - takeover by a standby after SIGTERM and after SIGKILL of the holder
#     (`txlog exclusive`), medians of TRIES tries;
#   - LEASES leases held by HOLDERS holders, renewed every TTL/3, during KILLS
#     leader kills: leases lost although renewed in time (target 0), and the
#     write throughput of WRITERS plain clients as a fraction of the same run
#     without the leases.
#
# Settings (environment):
#   N=1000 TRIES=20 TTL=5s LEASES=1000 HOLDERS=50 KILLS=10 WRITERS=8
#   KILL_INTERVAL=3s  quiet time after each kill's recovery
#   PARTS=latency,takeover,many
#   WORK=<temp dir>   where the cluster keeps its data (removed at the end)
# With the defaults it takes about 6 minutes. For a quick look:
#   N=100 TRIES=3 LEASES=100 HOLDERS=10 KILLS=2 scripts/lease-bench.sh
# Run it on a quiet machine: the numbers are latencies.
set -euo pipefail
. "$(dirname "$0")/bench-prologue.sh" lease-bench

bench_build cmd/txlog cmd/txlogd tools/leasebench
bench_machine

"$BIN/leasebench" --txlogd "$BIN/txlogd" --txlog "$BIN/txlog" --dir "$WORK" \
	--parts "${PARTS:-latency,takeover,many}" --n "${N:-1000}" --tries "${TRIES:-20}" --ttl "${TTL:-5s}" \
	--leases "${LEASES:-1000}" --holders "${HOLDERS:-50}" --kills "${KILLS:-10}" --writers "${WRITERS:-8}" \
	--kill-interval "${KILL_INTERVAL:-3s}" "$@"

bench_load_after
