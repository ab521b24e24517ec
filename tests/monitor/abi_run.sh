#!/bin/sh
# abi_run.sh - runs a program built through `ameba cc` and checks it.
#
# usage: abi_run.sh --expected FILE [--native PROG] [--active] [--calls SYM,...] -- PROG [ARGS...]
#
#   --expected FILE  PROG's stdout must equal FILE byte for byte
#   --native PROG    the natively built twin: it must also exit 0, and its
#                    stdout must equal PROG's byte for byte
#   --active         run PROG with AMEBA_ORACLE set (the runtime delivers
#                    every access to the count backend) and require that the
#                    oracle file is written
#   --calls SYMS     PROG's code must contain direct calls to each of these
#                    hooks (proves the compiler emitted them and they bound
#                    to libameba-rt)
# Always: PROG exits 0, and no call to a __tsan_ hook goes through the PLT
# (the runtime is linked into the executable, so the calls must be direct).
set -u

expected= native= active=0 calls=
while [ $# -gt 0 ]; do
	case "$1" in
	--expected) expected=$2; shift 2 ;;
	--native) native=$2; shift 2 ;;
	--active) active=1; shift ;;
	--calls) calls=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "abi_run.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ $# -ge 1 ] || { echo "abi_run.sh: no program given" >&2; exit 2; }
prog=$1
shift

tmp=$(mktemp -d "${TMPDIR:-/tmp}/abi_run.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0

if [ "$active" = 1 ]; then
	AMEBA_ORACLE=$tmp/oracle.json "$prog" "$@" >"$tmp/out" 2>"$tmp/err"
else
	env -u AMEBA_ORACLE "$prog" "$@" >"$tmp/out" 2>"$tmp/err"
fi
rc=$?
if [ $rc -ne 0 ]; then
	echo "FAIL: $prog exited with $rc; stderr:" >&2
	head -n 20 "$tmp/err" >&2
	fail=1
fi

if [ -n "$expected" ] && ! cmp -s "$tmp/out" "$expected"; then
	echo "FAIL: output of $prog differs from $expected:" >&2
	diff "$expected" "$tmp/out" | head -n 20 >&2
	fail=1
fi

if [ -n "$native" ]; then
	env -u AMEBA_ORACLE "$native" "$@" >"$tmp/native_out" 2>"$tmp/native_err"
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "FAIL: native $native exited with $rc" >&2
		head -n 20 "$tmp/native_err" >&2
		fail=1
	fi
	if ! cmp -s "$tmp/out" "$tmp/native_out"; then
		echo "FAIL: instrumented and native outputs differ:" >&2
		diff "$tmp/native_out" "$tmp/out" | head -n 20 >&2
		fail=1
	fi
fi

if [ "$active" = 1 ] && [ ! -s "$tmp/oracle.json" ]; then
	echo "FAIL: AMEBA_ORACLE was set but $prog wrote no oracle file" >&2
	fail=1
fi

objdump -d --no-show-raw-insn "$prog" >"$tmp/disasm" 2>/dev/null || {
	echo "FAIL: objdump -d $prog failed" >&2
	fail=1
}
if grep -Eq 'call[a-z]*[[:space:]]+[0-9a-f]+ <__tsan_[a-z0-9_]+@plt>' "$tmp/disasm"; then
	echo "FAIL: hooks called through the PLT:" >&2
	grep -Eo '<__tsan_[a-z0-9_]+@plt>' "$tmp/disasm" | sort -u | head -n 5 >&2
	fail=1
fi
if [ -n "$calls" ]; then
	for sym in $(echo "$calls" | tr ',' ' '); do
		if ! grep -Eq "(call|jmp)[a-z]*[[:space:]]+[0-9a-f]+ <$sym>" "$tmp/disasm"; then
			echo "FAIL: no direct call to $sym in $prog" >&2
			fail=1
		fi
	done
fi

[ $fail -eq 0 ] && echo "ok: $(basename "$prog")$( [ "$active" = 1 ] && echo ' (active)')"
exit $fail
