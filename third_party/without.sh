#!/usr/bin/env bash
# Makes a git revision of txlog with one patch group of third_party/ taken
# out, so that scripts/ab.sh measures what the group buys:
#
#   rev=$(third_party/without.sh hashicorp-raft/02-fast-codec)
#   scripts/ab.sh HEAD "$rev"
#
# Usage: third_party/without.sh [-b BRANCH] NAME/GROUP [BASE]
#   NAME/GROUP  a patch group: third_party/NAME/patches/GROUP.patch
#               (GROUP with or without its .patch)
#   BASE        the revision to start from (default HEAD)
#   -b BRANCH   also point BRANCH at the result (default: no branch; the
#               commit is printed, and git keeps it for ab.sh to build)
#
# In a temporary worktree of BASE, third_party/NAME becomes the upstream
# release plus every group but GROUP (patches.sh, rebuild), and GROUP's
# .txlog.patch, if it has one, changes txlog's own code to do without what the
# group adds. It checks that txlogd builds and that upstream's tests in
# third_party/NAME compile, commits (detached, on no branch unless -b), prints
# the commit and removes the worktree.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
. "$here/patches.sh"

branch=""
if [ "${1:-}" = "-b" ]; then
	branch=$2
	shift 2
fi
if [ $# -lt 1 ] || [ "${1#*/}" = "$1" ]; then
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
fi
name=${1%%/*}
group=${1#*/}
group=${group%.patch}
base=${2:-HEAD}
module "$name" >/dev/null
base=$(git rev-parse --verify "$base^{commit}")

tmp=$(mktemp -d -t txlog-without-XXXXXX)
wt=$tmp/tree
cleanup() {
	git worktree remove --force "$wt" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
git worktree add -q --detach "$wt" "$base"

pdir=$wt/third_party/$name/patches
if [ ! -f "$pdir/$group.patch" ]; then
	echo "without.sh: no patch group third_party/$name/patches/$group.patch at $base" >&2
	exit 1
fi
rebuild "$name" "$pdir" "$tmp/lib" "$group.patch"
# The directory's own files (PATCHES.md, UPSTREAM.md, patches/) stay.
find "$wt/third_party/$name" -mindepth 1 -maxdepth 1 \
	! -name PATCHES.md ! -name UPSTREAM.md ! -name patches -exec rm -rf {} +
(cd "$tmp/lib" && tar cf - .) | (cd "$wt/third_party/$name" && tar xf -)
if [ -f "$pdir/$group.txlog.patch" ]; then
	git -C "$wt" apply --whitespace=nowarn "third_party/$name/patches/$group.txlog.patch"
fi

echo "without.sh: go build ./cmd/txlogd" >&2
(cd "$wt" && go build -o /dev/null ./cmd/txlogd)
echo "without.sh: upstream's tests in third_party/$name compile" >&2
(cd "$wt/third_party/$name" && go test -count=1 -run '^$' ./... >/dev/null)

git -C "$wt" add -A
who=()
if ! git config user.email >/dev/null; then who=(-c user.name=without.sh -c user.email=without.sh@localhost); fi
git -C "$wt" "${who[@]}" commit -q -m "third_party/$name: without $group (third_party/without.sh; for scripts/ab.sh, not for merging)"
rev=$(git -C "$wt" rev-parse HEAD)
if [ -n "$branch" ]; then
	git branch -f "$branch" "$rev"
fi
echo "$rev"
