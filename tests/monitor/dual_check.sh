#!/bin/sh
# dual_check.sh DUAL NATIVE [FUNC] - the dual path in a running program
# (test_dual.c; dual_loops.c with FUNC "-").
#   - DUAL (built by `ameba cc -O2`, gcc or clang: two bodies per function) passes its own
#     checks: 1,000 bursts switched on and off while four threads run one
#     long loop nest each, the known loop counted exactly in every burst
#     and not at all between them;
#   - its result (stdout's first line) is NATIVE's (the same source built
#     by the plain compiler);
#   - its loop nest (FUNC, default sweeps; "-": not checked) has both
#     bodies: packed double multiplies (the clean body, vectorised) and
#     hook calls (the instrumented one).
set -u
dual=${1:?usage: dual_check.sh DUAL NATIVE}
native=${2:?usage: dual_check.sh DUAL NATIVE}
func=${3:-sweeps}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dual_check.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0

"$native" >"$tmp/native.out" || { echo "FAIL: $native exited $?"; exit 1; }
AMEBA_MRI=0 "$dual" >"$tmp/dual.out" 2>"$tmp/dual.err"
rc=$?
cat "$tmp/dual.err"
[ $rc -eq 0 ] || { echo "FAIL: $dual exited $rc"; fail=1; }
# (the first line: the checks' tally follows it)
if [ "$(head -n 1 "$tmp/native.out")" != "$(head -n 1 "$tmp/dual.out")" ]; then
	echo "FAIL: output differs: native $(head -n 1 "$tmp/native.out"), dual $(head -n 1 "$tmp/dual.out")"
	fail=1
fi
if [ "$func" != - ]; then
	objdump -d --no-show-raw-insn "$dual" | awk "/<$func>:/,/^\$/" >"$tmp/func.s"
	grep -Eq 'v?mulpd' "$tmp/func.s" || { echo "FAIL: $func has no packed multiply (clean body)"; fail=1; }
	grep -Eq '__tsan_(unaligned_)?write(8|16)' "$tmp/func.s" || { echo "FAIL: $func has no hook call (instrumented body)"; fail=1; }
fi
tail -n +2 "$tmp/dual.out"
[ $fail -eq 0 ] && echo "dual_check: ok (output $(head -n 1 "$tmp/dual.out"))"
exit $fail
