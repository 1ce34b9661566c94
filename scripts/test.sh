#!/usr/bin/env bash
# Runs the whole test suite. On a fresh machine with only Go installed it first
# installs what the tests need (redis-server from Debian's packages).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-server >/dev/null 2>&1; then
	echo "== installing redis-server"
	if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends redis-server >/dev/null
fi

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt wants to change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...
(cd tools && go vet ./...)

echo "== go test -race"
go test -race -count=1 -timeout 20m ./... "$@"
(cd tools && go test -count=1 ./...)
