#!/usr/bin/env bash
# Tests verify.sh: on a copy of third_party/bbolt it passes as it is, and
# fails, naming the file, once the copy is tampered with: a changed line, a
# file that no patch adds, a patch group left out, a patch that does not apply.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d -t txlog-tp-test-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

fresh() {
	rm -rf "$tmp/tp"
	mkdir -p "$tmp/tp"
	cp -R "$here/bbolt" "$tmp/tp/bbolt"
}
# expect WHAT WANT: verify.sh on the copy passes (WANT "ok") or fails with WANT
# in its output.
expect() {
	local what=$1 want=$2 rc=0
	TP_DIR=$tmp/tp "$here/verify.sh" bbolt >"$tmp/out" 2>&1 || rc=$?
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
sed -i 's/const cursorStackDepth = 4/const cursorStackDepth = 5/' "$tmp/tp/bbolt/cursor.go"
expect "a changed line" cursor.go

fresh
echo "package bbolt" >"$tmp/tp/bbolt/extra.go"
expect "a file no patch adds" extra.go

fresh
rm "$tmp/tp/bbolt/patches/01-cursor-stack.patch"
expect "a patch group left out" cursor.go

fresh
sed -i 's/^+\tstackBuf \[cursorStackDepth\]elemRef$/+\tstackBuf [8]elemRef/' "$tmp/tp/bbolt/patches/01-cursor-stack.patch"
expect "a patch that says something else" cursor.go

fresh
sed -i 's/^ type Cursor struct {$/ type Cursor struct { \/\/ not upstream/' "$tmp/tp/bbolt/patches/01-cursor-stack.patch"
expect "a patch that does not apply" "does not apply"
