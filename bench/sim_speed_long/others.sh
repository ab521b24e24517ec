#!/bin/bash
# others.sh [WORK_DIR] - the exact simulator against cachegrind on long runs
# of programs this repository did not write (issue 24: a ratio met only on
# one's own kernels is not met): bzip2 1.0.8 and Lua 5.4's interpreter,
# Debian's sources (the package archive, `apt-get source`, fetched once
# into WORK_DIR: default build/bench/others), each built twice as run.sh's
# kernels are, gcc -O2 -g (what cachegrind runs) and `ameba cc -O2 -g` (the
# sim backend with the oracle on), and timed as run.sh times a kernel:
#   bzip2_c   bzip2 -9 -c of text.txt, 20 MB of words drawn by a fixed
#             generator from a fixed list (the same file on every machine)
#   bzip2_d   bzip2 -d -c of text.txt's bzip2 output three times over
#   lua       lua others.lua 30: numeric Lua on tables made once (a matrix
#             product, a sieve, a table of integer keys); the string hash's
#             seed fixed (-Dluai_makeseed), so that runs repeat
# Prints for each what run.sh prints for a kernel (time_base_, native_s_,
# cachegrind_s_, sim_s_, their spreads, speedup_vs_cachegrind_, accesses_,
# ns_per_access_), and on stderr each round's two times as it ends.
# OTHERS_ROUNDS (default 3) rounds; OTHERS_SCALE
# (default 1) scales the text and the Lua rounds; OTHERS_CASES (default
# all three) picks. About 10 minutes at scale 1. Needs apt-get (the
# archive reachable: deb-src lines are added for this script only, in
# WORK_DIR/apt) the first time, valgrind, python3, /usr/bin/time and
# build/bin/ameba (AMEBA: another; the programs are rebuilt when it or its
# runtime is newer). Exits 1 when a build, a run or an output check fails.
set -u
me=others.sh
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=settings.sh
. "$here/settings.sh"
bench_args 0 1 "others.sh [WORK_DIR]" "$@"
root=$(cd "$here/../.." && pwd)
work=${1:-$root/build/bench/others}
rounds=${OTHERS_ROUNDS:-3}
scale=${OTHERS_SCALE:-1}
cases=${OTHERS_CASES:-"bzip2_c bzip2_d lua"}
ameba=${AMEBA:-$root/build/bin/ameba}
rt=$(dirname "$ameba")/../lib/ameba/libameba-rt.a
case $rounds in '' | *[!0-9]* | 0) echo "$me: OTHERS_ROUNDS=$rounds: a count, 1 or more" >&2
	exit 2 ;; esac
for tool in valgrind python3 apt-get; do
	command -v $tool >/dev/null || { echo "$me: $tool not found" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "$me: /usr/bin/time not found (apt-get install time)" >&2; exit 1; }
[ -x "$ameba" ] || { echo "$me: $ameba missing (build the repository first)" >&2; exit 1; }
mkdir -p "$work" || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_others.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

# fetch PKG: PKG's source tarball in $work (apt-get source --download-only,
# with the archive's deb-src lines in a list of this script's own)
fetch() {
	local apt=$work/apt o
	ls "$work/$1"_*.orig.tar.* >/dev/null 2>&1 && return 0
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" || return 1
	echo "deb-src http://deb.debian.org/debian bookworm main" >"$apt/sources.list"
	o=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o Debug::NoLocking=1)
	[ -s "$apt/lists/updated" ] || { apt-get "${o[@]}" update >"$tmp/apt" 2>&1 &&
		date >"$apt/lists/updated"; } ||
		{ echo "$me: apt-get update of deb-src failed (is the archive reachable?):" >&2
		tail -n 3 "$tmp/apt" >&2; return 1; }
	(cd "$work" && apt-get "${o[@]}" source --download-only "$1") >"$tmp/apt" 2>&1 ||
		{ echo "$me: apt-get source $1 failed:" >&2; tail -n 3 "$tmp/apt" >&2; return 1; }
}

# build NAME DIR FLAGS... -- SOURCES...: $work/NAME_native and NAME_ameba
build() {
	local name=$1 src=$2 flags=() files=()
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
	shift
	for f in "$@"; do files+=("$src/$f"); done
	if [ "$work/${name}_ameba" -nt "$ameba" ] && [ "$work/${name}_ameba" -nt "$rt" ] &&
		[ -x "$work/${name}_native" ]; then
		return 0
	fi
	if ! gcc -O2 -g "${flags[@]}" "${files[@]}" -o "$work/${name}_native" -lm -ldl ||
		! "$ameba" cc --compiler gcc -O2 -g "${flags[@]}" "${files[@]}" \
			-o "$work/${name}_ameba" -lm -ldl; then
		echo "$me: building $name failed" >&2
		return 1
	fi
}

fetch bzip2 && fetch lua5.4 || exit 1
for t in "$work"/bzip2_*.orig.tar.gz "$work"/lua5.4_*.orig.tar.gz; do
	[ -e "$t.unpacked" ] || { tar -C "$work" -xzf "$t" && touch "$t.unpacked"; } || exit 1
done
bz=$(find "$work" -maxdepth 1 -type d -name 'bzip2-*' | head -1)
lua=$(find "$work" -maxdepth 1 -type d -name 'lua-5.4*' | head -1)/src
build bzip2 "$bz" -D_FILE_OFFSET_BITS=64 -- blocksort.c huffman.c crctable.c randtable.c \
	compress.c decompress.c bzlib.c bzip2.c || exit 1
lua_src=()
for f in "$lua"/*.c; do
	case $f in */luac.c) ;; *) lua_src+=("${f##*/}") ;; esac
done
build lua "$lua" -DLUA_USE_LINUX '-Dluai_makeseed(L)=0x5eedu' -- "${lua_src[@]}" || exit 1

# the text: 20 MB x scale of words from a fixed list, drawn by an LCG
python3 - "$work/text.txt" "$scale" <<'EOF' || exit 1
import sys
path, scale = sys.argv[1], float(sys.argv[2])
words = ("cache line miss set way tag hit store load thread object array row column "
         "the of and to in is that for it as with was on be at by this had not are but "
         "from or have an they which one you were her all she there would their we him "
         "been has when who will more no if out so said what up its about into than them "
         "can only other new some could time these two may then do first any my now such "
         "like our over man me even most made after also did many before must through back "
         "years where much your way well down should because each just those people how "
         "too little state good very make world still own see men work long get here between").split()
n, x, out, size = int(20e6 * scale), 12345, [], 0
while size < n:
    x = (x * 1103515245 + 12345) % 2147483648
    w = words[(x >> 16) % len(words)]
    out.append(w)
    size += len(w) + 1
    if len(out) % 13 == 0:
        out.append("\n")
open(path, "w").write(" ".join(out))
EOF
"$work/bzip2_native" -9 -c "$work/text.txt" >"$tmp/one.bz2" || exit 1
cat "$tmp/one.bz2" "$tmp/one.bz2" "$tmp/one.bz2" >"$work/text3.bz2" || exit 1
lua_rounds=$(awk -v s="$scale" 'BEGIN { r = int(30 * s); print (r < 1) ? 1 : r }')

status=0
for c in $cases; do
	case $c in
	bzip2_c) compare "$c" "$work/bzip2_native" "$work/bzip2_ameba" -9 -c "$work/text.txt" ;;
	bzip2_d) compare "$c" "$work/bzip2_native" "$work/bzip2_ameba" -d -c "$work/text3.bz2" ;;
	lua) compare "$c" "$work/lua_native" "$work/lua_ameba" "$here/others.lua" "$lua_rounds" ;;
	*) echo "$me: OTHERS_CASES: $c is not bzip2_c, bzip2_d or lua" >&2; false ;;
	esac || status=1
done
exit $status
