#!/usr/bin/env bash
# Checks that each directory of third_party/ is its upstream release (the
# version go.mod requires, from the module cache or the module proxy) plus the
# patch groups in its patches/, applied in order: so that the next upstream
# release is a mechanical rebase of those patches, and nothing else changed.
# PATCHES.md, UPSTREAM.md and patches/ itself are not compared.
#
# Usage: third_party/verify.sh [NAME...]   (default: every directory)
# Environment: TP_DIR, the directory holding the copies to check (default:
# this script's; a test points it at a tampered copy).
# It exits non-zero, listing the files that differ, if any directory is not
# its release plus its patches.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
. "$here/patches.sh"
tp=${TP_DIR:-$here}

names=("$@")
if [ ${#names[@]} -eq 0 ]; then names=("${libs[@]%%=*}"); fi
tmp=$(mktemp -d -t txlog-tp-verify-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

fail=0
for name in "${names[@]}"; do
	if ! rebuild "$name" "$tp/$name/patches" "$tmp/$name"; then
		fail=1
		continue
	fi
	if diff -rq -x PATCHES.md -x UPSTREAM.md -x patches "$tmp/$name" "$tp/$name" >"$tmp/$name.diff"; then
		echo "third_party/$name: the release plus $(patches "$tp/$name/patches" | wc -l) patch groups"
	else
		echo "third_party/$name differs from its release plus its patches:" >&2
		sed "s|$tmp/$name|upstream+patches|g; s|$tp/$name|third_party/$name|g" "$tmp/$name.diff" >&2
		fail=1
	fi
done
exit $fail
