#!/bin/sh
# abi_symbols.sh - the runtime defines and exports the whole tsan ABI.
#
# usage: abi_symbols.sh LIBAMEBA_RT_A LIBAMEBA_RT_SO SYMBOLS_TXT
#
# Checks, for every symbol of SYMBOLS_TXT (gcc's libtsan plus clang 14's
# runtime) and the hooks only clang emits (volatile, unaligned volatile and
# compound read-write variants, under -mllvm options):
#   - the archive defines it (nm: T or W), so that an instrumented program
#     links against libameba-rt alone;
#   - the shared library exports it (nm -D), so that MON_EXPORT is in place
#     under -fvisibility=hidden and LD_PRELOAD works.
# And that the objects of tsan_atomic.c and tsan_abi.c need no libatomic and
# no out-of-line __sync helper (no undefined __atomic_* / __sync_*).
set -u
[ $# -eq 3 ] || { echo "usage: abi_symbols.sh LIB.a LIB.so SYMBOLS_TXT" >&2; exit 2; }
archive=$1 shared=$2 list=$3

tmp=$(mktemp -d "${TMPDIR:-/tmp}/abi_symbols.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

# The expected set.
grep -v '^[[:space:]]*$' "$list" >"$tmp/want"
for size in 1 2 4 8 16; do
	for kind in volatile_read volatile_write read_write unaligned_read_write; do
		echo "__tsan_${kind}${size}"
	done
	# gcc and clang never emit an unaligned 1-byte access
	if [ "$size" != 1 ]; then
		echo "__tsan_unaligned_volatile_read${size}"
		echo "__tsan_unaligned_volatile_write${size}"
	fi
done >>"$tmp/want"
sort -u "$tmp/want" -o "$tmp/want"
nr_want=$(wc -l <"$tmp/want")
# A list that lost its content would make every check below vacuous.
if [ "$nr_want" -lt 190 ]; then
	echo "FAIL: only $nr_want symbols to check; is $list complete?" >&2
	exit 1
fi

nm --defined-only "$archive" 2>/dev/null | awk '$2 ~ /^[TW]$/ { print $3 }' | sort -u >"$tmp/defined"
nm -D --defined-only "$shared" 2>/dev/null | awk '$2 ~ /^[TW]$/ { print $3 }' | sort -u >"$tmp/exported"

fail=0
missing=$(comm -23 "$tmp/want" "$tmp/defined")
if [ -n "$missing" ]; then
	echo "FAIL: not defined in $archive:" >&2
	echo "$missing" | head -n 40 >&2
	fail=1
fi
unexported=$(comm -23 "$tmp/want" "$tmp/exported")
if [ -n "$unexported" ]; then
	echo "FAIL: not exported by $shared:" >&2
	echo "$unexported" | head -n 40 >&2
	fail=1
fi

# Undefined symbols of the two ABI objects inside the archive.
nm -A -u "$archive" 2>/dev/null | grep -E 'tsan_(abi|atomic)\.c\.o' >"$tmp/undef"
if ! grep -q 'tsan_atomic\.c\.o' "$tmp/undef"; then
	# an object with no undefined symbols at all would not appear; the
	# atomics need at least mon_access, so its absence means it is missing
	echo "FAIL: tsan_atomic.c.o not found in $archive" >&2
	fail=1
fi
if grep -Eq ' (__atomic_|__sync_)' "$tmp/undef"; then
	echo "FAIL: the ABI objects call out-of-line atomics (libatomic / libgcc):" >&2
	grep -E ' (__atomic_|__sync_)' "$tmp/undef" >&2
	fail=1
fi

[ $fail -eq 0 ] && echo "ok: $nr_want symbols defined and exported; no libatomic calls"
exit $fail
