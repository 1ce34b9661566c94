# The start and end of the bench scripts (alert-bench.sh, lease-bench.sh,
# stream-bench.sh), sourced by them after `set -euo pipefail`, never run by
# itself:
#
#   . "$(dirname "$0")/bench-prologue.sh" NAME
#
# It changes to the repository's root, makes BIN, a temporary directory for
# the binaries, and WORK unless the environment names one (WORK is where the
# clusters keep their data), both named after NAME, and removes BIN and the
# WORK it made when the script exits (a WORK given is kept). Then:
#
#   bench_build PATH...   builds each package PATH of the repository (cmd/...)
#                         or of the tools module (tools/...) into BIN
#   bench_machine         prints the commit and the machine, and the load
#   bench_load_after      prints the load at the end

cd "$(dirname "${BASH_SOURCE[0]}")/.."

BIN=$(mktemp -d -t "txlog-$1-bin-XXXXXX")
made_work=""
if [ -z "${WORK:-}" ]; then
	WORK=$(mktemp -d -t "txlog-$1-XXXXXX")
	made_work=$WORK
fi
bench_cleanup() {
	rm -rf "$BIN"
	if [ -n "$made_work" ]; then rm -rf "$made_work"; fi
}
trap bench_cleanup EXIT

bench_build() {
	echo "== building"
	local p
	for p in "$@"; do
		case $p in
		tools/*) (cd tools && go build -o "$BIN/${p##*/}" "./${p#tools/}") ;;
		*) go build -o "$BIN/${p##*/}" "./$p" ;;
		esac
	done
}

bench_machine() {
	echo "== machine"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with local changes)')"
	echo "cores: $(nproc), kernel $(uname -r), $(go version | awk '{print $3}'), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
}

bench_load_after() {
	echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
}
