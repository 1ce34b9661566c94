#!/usr/bin/env bash
# Tests verify.sh: on a copy of third_party/hashicorp-raft it passes as it is,
# and fails, naming the file, once the copy is tampered with: a changed line, a
# file that no patch adds, a patch group left out, a patch that does not apply.
# Then that a rebuild without one group (without.sh's) leaves out that group alone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d -t txlog-tp-test-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

fresh() {
	rm -rf "$tmp/tp"
	mkdir -p "$tmp/tp"
	cp -R "$here/hashicorp-raft" "$tmp/tp/hashicorp-raft"
}
# expect WHAT WANT: verify.sh on the copy passes (WANT "ok") or fails with WANT
# in its output.
expect() {
	local what=$1 want=$2 rc=0
	TP_DIR=$tmp/tp "$here/verify.sh" hashicorp-raft >"$tmp/out" 2>&1 || rc=$?
	if [ "$want" = ok ]; then
		if [ $rc -ne 0 ]; then
			echo "FAIL $what: verify.sh exit $rc, want 0:"; cat "$tmp/out"; exit 1
		fi
	elif [ $rc -eq 0 ] || ! grep -q -- "$want" "$tmp/out"; then
		echo "FAIL $what: verify.sh exit $rc, want non-zero naming $want:"; cat "$tmp/out"; exit 1
	fi
	echo "ok   $what"
}

fresh
expect "the copy as it is" ok

fresh
sed -i 's/^\tmaxFastLen = 1 << 30$/\tmaxFastLen = 1 << 29/' "$tmp/tp/hashicorp-raft/fast_codec.go"
expect "a changed line" fast_codec.go

fresh
echo "package raft" >"$tmp/tp/hashicorp-raft/extra.go"
expect "a file no patch adds" extra.go

fresh
rm "$tmp/tp/hashicorp-raft/patches/02-fast-codec.patch"
expect "a patch group left out" fast_codec.go

fresh
sed -i 's/^+const maxFastLen = 1 << 30$/+const maxFastLen = 1 << 29/' "$tmp/tp/hashicorp-raft/patches/02-fast-codec.patch"
expect "a patch that says something else" fast_codec.go

fresh
sed -i 's/^ \tmsgpackUseNewTimeFormat bool$/ \tmsgpackUseNewTimeFormat bool \/\/ not upstream/' "$tmp/tp/hashicorp-raft/patches/02-fast-codec.patch"
expect "a patch that does not apply" "does not apply"

# rebuild without a group (what without.sh commits) leaves the group's lines
# out and keeps the others', also where a later group's context is the
# left-out group's (03 after 01, applied with fuzz).
cd "$here/.."
. "$here/patches.sh"
rebuild hashicorp-raft "$here/hashicorp-raft/patches" "$tmp/no-parallel" 01-parallel-append.patch 2>"$tmp/out"
r=$tmp/no-parallel/replication.go
if grep -q getLogToSend "$r" || ! grep -q 'logs := make(\[\]Log, n)' "$r" || ! grep -q 'r.logs.GetLog(i, oldLog)' "$r" ||
	grep -q ParallelLeaderAppend "$tmp/no-parallel/config.go" || [ ! -f "$tmp/no-parallel/fast_codec.go" ]; then
	echo "FAIL hashicorp-raft without 01-parallel-append:"; cat "$tmp/out"; exit 1
fi
echo "ok   hashicorp-raft without 01-parallel-append"

# A rebuild without 02-fast-codec leaves out 04-bounded-decode too (its heading
# says "Needs: 02-fast-codec"), and only those two.
rebuild hashicorp-raft "$here/hashicorp-raft/patches" "$tmp/no-codec" 02-fast-codec.patch 2>"$tmp/out"
d=$tmp/no-codec
if [ -f "$d/fast_codec.go" ] || [ -f "$d/bounded_decode_test.go" ] || grep -q decodeHandle "$d/net_transport.go" ||
	! grep -q "left out too: it needs 02-fast-codec" "$tmp/out" || ! grep -q getLogToSend "$d/replication.go" ||
	! grep -q 'logs := make(\[\]Log, n)' "$d/replication.go"; then
	echo "FAIL hashicorp-raft without 02-fast-codec:"; cat "$tmp/out"; exit 1
fi
echo "ok   hashicorp-raft without 02-fast-codec (and 04-bounded-decode, which needs it)"
