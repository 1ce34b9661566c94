#!/usr/bin/env bash
# Builds a release: static binaries of txlogd and txlog and their SHA256SUMS.
#
#   scripts/release.sh VERSION [OUTDIR]
#
# VERSION names the release (v1.2.0, 1.2.0-rc.1: letters, digits and . _ + -).
# OUTDIR (default dist/) receives txlogd-VERSION-OS-ARCH and
# txlog-VERSION-OS-ARCH for each platform, and SHA256SUMS in sha256sum's format
# (`cd OUTDIR && sha256sum -c SHA256SUMS` checks them).
#
# Each binary is built with CGO_ENABLED=0 (static: no libc, runs on any Linux of
# its architecture and in a scratch image), -trimpath (no path of the build
# machine inside) and -ldflags -X stamping the Version (VERSION) of package
# internal/buildinfo and, inside a git checkout, its Revision (the commit) and
# Modified (true when the tree has uncommitted changes); `txlogd --version` and
# `txlog --version` print them.
#
# TXLOG_REVISION, when set, is stamped as the Revision instead of git's answer.
# TXLOG_RELEASE_PLATFORMS (default "linux/amd64 linux/arm64") limits the
# platforms, as GOOS/GOARCH separated by spaces or commas. The release test
# (cmd/txlogd/release_test.go) runs this script for the host's platform alone,
# and the Dockerfile's build stage runs it for the image's: the three build the
# same way.
set -euo pipefail

usage() {
  echo "usage: scripts/release.sh VERSION [OUTDIR]" >&2
  exit 2
}

[[ $# -ge 1 && $# -le 2 ]] || usage
version=$1
outdir=${2:-dist}
if [[ ! $version =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]]; then
  echo "release.sh: VERSION $(printf '%q' "$version"): want letters, digits and . _ + - (e.g. v1.2.0)" >&2
  exit 2
fi
platforms=${TXLOG_RELEASE_PLATFORMS:-linux/amd64 linux/arm64}
platforms=${platforms//,/ }
for p in $platforms; do
  if [[ ! $p =~ ^[a-z0-9]+/[a-z0-9]+$ ]]; then
    echo "release.sh: platform $(printf '%q' "$p"): want GOOS/GOARCH (e.g. linux/amd64)" >&2
    exit 2
  fi
done

root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)

bi=github.com/txlog/txlog/internal/buildinfo
ldflags="-s -w -X $bi.Version=$version"
if [[ -n ${TXLOG_REVISION:-} ]]; then
  # A build without the git history (the Dockerfile's: .git stays out of
  # its context) is told the commit.
  if [[ ! $TXLOG_REVISION =~ ^[0-9a-f]{7,64}$ ]]; then
    echo "release.sh: TXLOG_REVISION $(printf '%q' "$TXLOG_REVISION"): want a commit hash" >&2
    exit 2
  fi
  ldflags+=" -X $bi.Revision=$TXLOG_REVISION"
elif rev=$(git -C "$root" rev-parse HEAD 2>/dev/null); then
  ldflags+=" -X $bi.Revision=$rev"
  if [[ -n $(git -C "$root" status --porcelain 2>/dev/null) ]]; then
    ldflags+=" -X $bi.Modified=true"
  fi
fi

names=()
for p in $platforms; do
  goos=${p%/*}
  goarch=${p#*/}
  for cmd in txlogd txlog; do
    name="$cmd-$version-$goos-$goarch"
    echo "release.sh: $name" >&2
    (cd "$root" && CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch \
      go build -trimpath -ldflags "$ldflags" -o "$outdir/$name" "./cmd/$cmd")
    names+=("$name")
  done
done

if command -v sha256sum >/dev/null; then
  sum=(sha256sum)
else
  sum=(shasum -a 256)
fi
(cd "$outdir" && "${sum[@]}" "${names[@]}" >SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
echo "release.sh: $outdir/SHA256SUMS" >&2
