#!/usr/bin/env bash
# Runs the whole test suite. On a fresh machine with only Go installed it first
# installs what the tests need (redis-server, fuse3, chromium and iproute2 from
# Debian's packages).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=""
command -v redis-server >/dev/null 2>&1 || missing="$missing redis-server"
# fuse3 (fusermount3) for the lazyfs mounts of chaos/lazyfs and the power-loss run.
command -v fusermount3 >/dev/null 2>&1 || missing="$missing fuse3"
# chromium for the dashboard's browser test (systemtest/dashboard_test.go).
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
# iproute2 (ip) for the network namespaces of the three-host test (systemtest/threehosts_test.go).
command -v ip >/dev/null 2>&1 || missing="$missing iproute2"
if [ -n "$missing" ]; then
	echo "== installing$missing"
	if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt wants to change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...
go vet -tags txlogfaults ./replication/ # the fault-injection build of the tests (replication/faults.go)
(cd tools && go vet ./...)
(cd third_party/hashicorp-raft && go vet .)

echo "== third_party: each directory is its upstream release plus its patches"
third_party/verify.sh
third_party/verify_test.sh

echo "== go test -race"
if [ $# -gt 0 ]; then
	go test -race -count=1 -timeout 20m ./... "$@"
else
	# systemtest, the process-level tests, takes longer than all the other
	# packages together (about 15 minutes under -race on 2 cores). Its test
	# binary is built once and its tests run in two halves (alternate names)
	# beside the other packages, so that the suite does not end waiting on it
	# alone.
	st=$(mktemp -d)
	go test -race -c -o "$st/systemtest.test" ./systemtest
	names=$(sed -n 's/^func \(Test[A-Za-z0-9_]*\)(t \*testing\.T) {$/\1/p' systemtest/*_test.go | sort)
	declared=$(grep -h '^func Test' systemtest/*_test.go | grep -cv '^func TestMain(')
	if [ "$(echo "$names" | wc -l)" -ne "$declared" ]; then
		echo "systemtest: $declared tests declared but $(echo "$names" | wc -l) found for the halves: write each as func TestX(t *testing.T) {"
		exit 1
	fi
	half() { echo "$names" | awk -v k="$1" 'NR % 2 == k' | paste -sd'|'; }
	pids=()
	began=$SECONDS
	for k in 0 1; do
		(
			cd systemtest
			"$st/systemtest.test" -test.count=1 -test.timeout=20m -test.run "^($(half $k))\$" >"$st/half$k.log" 2>&1 && r=0 || r=$?
			echo "$SECONDS" >"$st/half$k.seconds"
			exit "$r"
		) &
		pids+=($!)
	done
	rc=0
	go test -race -count=1 -timeout 20m $(go list ./... | grep -v '/systemtest$') || rc=1
	for k in 0 1; do
		if wait "${pids[$k]}"; then
			echo "ok  	systemtest, half $((k + 1)) of 2, $(($(cat "$st/half$k.seconds") - began)) s"
		else
			rc=1
			cat "$st/half$k.log"
			echo "FAIL	systemtest, half $((k + 1)) of 2"
		fi
	done
	rm -rf "$st"
	if [ "$rc" -ne 0 ]; then exit 1; fi
fi
(cd tools && go test -count=1 ./...)

echo "== deploy/prometheus: the alert rules and the Grafana dashboard parse (own module)"
(cd deploy/prometheus/check && go test -count=1 .)

echo "== the patched hashicorp/raft (third_party/hashicorp-raft/PATCHES.md)"
# The patch's tests, and upstream's core cluster tests with the patch on in
# every test cluster. (Upstream's whole suite takes minutes and has tests that
# fail as root or by timing, with or without the patch: run it by hand.)
(cd third_party/hashicorp-raft && RAFT_PARALLEL_LEADER_APPEND=1 go test -race -count=1 \
	-run '^(TestParallelLeaderAppend_.*|TestCommitment.*|TestFastCodec.*|FuzzFastCodecRequest|FuzzFastCodecResponse|FuzzBoundedDecodeMsgpack|TestBoundedDecode_.*|TestNetworkTransport_.*|TestRaft_(SingleNode|TripleNode|LeaderFail|BehindFollower|ApplyConcurrent|RemoveFollower|RemoveLeader|SnapshotRestore|AutoSnapshot|UserSnapshot|SendSnapshotAndLogsFollower|ReJoinFollower|LeaderLeaseExpire|Barrier|LeadershipTransferWithWrites|CacheLogWithStoreError))$' .)

echo "== the patched bbolt (third_party/bbolt/PATCHES.md)"
# Upstream's tests of the root package, in their short form.
(cd third_party/bbolt && go test -count=1 -short .)

