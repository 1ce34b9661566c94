# Shared by verify.sh and without.sh (sourced, not run): where each directory
# of third_party/ comes from, and how to rebuild it from its upstream release.
#
# A directory NAME holds the release of module MODULE at the version txlog's
# go.mod requires, less the paths listed in NAME/patches/omit, plus the patch
# groups NAME/patches/NN-GROUP.patch applied in order. NN-GROUP.txlog.patch,
# where there is one, is txlog's own change (at the repository's root) that
# stops using what group GROUP adds; only without.sh applies it.

# libs: NAME=MODULE for each directory.
libs=(
	hashicorp-raft=github.com/hashicorp/raft
	bbolt=go.etcd.io/bbolt
)

# module NAME: the module that third_party/NAME patches.
module() {
	local l
	for l in "${libs[@]}"; do
		if [ "${l%%=*}" = "$1" ]; then
			echo "${l#*=}"
			return
		fi
	done
	echo "third_party: no directory $1 (known: ${libs[*]%%=*})" >&2
	return 1
}

# upstream_dir NAME: the module cache's copy of NAME's release, downloaded
# through the module proxy if need be. Run from the repository's root.
upstream_dir() {
	local mod ver dir
	mod=$(module "$1") || return 1
	ver=$(go list -m -f '{{.Version}}' "$mod") || return 1
	dir=$(go mod download -json "$mod@$ver" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
	if [ -z "$dir" ] || [ ! -d "$dir" ]; then
		echo "third_party/$1: cannot download $mod@$ver" >&2
		return 1
	fi
	echo "$dir"
}

# patches PATCHDIR: NAME's patch groups, in order (without the .txlog ones).
patches() {
	local p
	for p in "$1"/[0-9][0-9]-*.patch; do
		case $p in *.txlog.patch | *"[0-9][0-9]-*.patch") continue ;; esac
		echo "$p"
	done
}

# needs PATCH GROUP: PATCH's heading (the lines before its first diff) has a
# line "Needs: ..." naming GROUP (such as 02-fast-codec): it changes what
# GROUP adds, so it cannot go in without it.
needs() {
	sed -n '/^diff --git /q; p' "$1" | grep -q "^Needs:.*\b$2\b"
}

# rebuild NAME PATCHDIR DEST [SKIP]: DEST (which must not exist) becomes
# NAME's release with PATCHDIR's omissions and patches, all but group SKIP
# (a file name such as 01-parallel-append.patch) and the groups that need it
# (needs). A patch must apply exactly, except one that follows SKIP: its
# context may be SKIP's lines, so it is applied with GNU patch and fuzz if
# need be (it still may not be rejected).
rebuild() {
	local name=$1 pdir=$2 dest=$3 skip=${4:-} up p skipped=""
	up=$(upstream_dir "$name") || return 1
	cp -R "$up" "$dest"
	chmod -R u+w "$dest"
	if [ -f "$pdir/omit" ]; then
		while IFS= read -r p; do
			case $p in '' | '#'*) continue ;; esac
			rm -rf "${dest:?}/$p"
		done <"$pdir/omit"
	fi
	for p in $(patches "$pdir"); do
		if [ "$(basename "$p")" = "$skip" ]; then
			skipped=1
			continue
		fi
		if [ -n "$skipped" ] && needs "$p" "${skip%.patch}"; then
			echo "third_party/$name: $(basename "$p") left out too: it needs ${skip%.patch}" >&2
			continue
		fi
		# GIT_CEILING_DIRECTORIES: dest is no repository's work tree, whatever
		# surrounds it.
		if (cd "$dest" && GIT_CEILING_DIRECTORIES=$(dirname "$dest") git apply --whitespace=nowarn "$p") 2>"$dest.err"; then
			continue
		fi
		if [ -n "$skipped" ] && (cd "$dest" && patch -s -p1 --fuzz=3 --forward --batch --no-backup-if-mismatch -r - <"$p"); then
			echo "third_party/$name: $(basename "$p") applied with fuzz, without $skip" >&2
			continue
		fi
		cat "$dest.err" >&2
		echo "third_party/$name: $(basename "$p") does not apply" >&2
		return 1
	done
	if [ -n "$skip" ] && [ -z "$skipped" ]; then
		echo "third_party/$name: no patch group $skip" >&2
		return 1
	fi
}
