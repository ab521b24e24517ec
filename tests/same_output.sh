#!/usr/bin/env bash
# same_output.sh NATIVE INSTRUMENTED [ARGS...]
# The instrumented build must print exactly what the native build prints, and
# exit the same way, both dormant and with the counting backend attached
# (AMEBA_ORACLE set).
set -uo pipefail
native=$1 instr=$2; shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$native" "$@" > "$tmp/native.out" 2> "$tmp/native.err"; rc_n=$?
"$instr" "$@" > "$tmp/dormant.out" 2> "$tmp/dormant.err"; rc_d=$?
AMEBA_ORACLE="$tmp/oracle.json" "$instr" "$@" > "$tmp/active.out" 2> "$tmp/active.err"; rc_a=$?
fail=0
for run in dormant active; do
  if ! cmp -s "$tmp/native.out" "$tmp/$run.out"; then
    echo "same_output: $instr ($run) prints differently from $native:" >&2
    diff "$tmp/native.out" "$tmp/$run.out" | head -20 >&2
    fail=1
  fi
done
if [ "$rc_n" != "$rc_d" ] || [ "$rc_n" != "$rc_a" ]; then
  echo "same_output: exit status native=$rc_n dormant=$rc_d active=$rc_a" >&2
  cat "$tmp/dormant.err" "$tmp/active.err" | head -20 >&2
  fail=1
fi
[ -s "$tmp/oracle.json" ] || { echo "same_output: no oracle file from the active run" >&2; fail=1; }
[ $fail = 0 ] && echo "same output: $(basename "$instr") ($(wc -c < "$tmp/native.out") bytes)"
exit $fail
