#!/usr/bin/env bash
# fork_exec.sh NATIVE INSTRUMENTED ORACLE_EXPECT
# Output must match the native build; with AMEBA_ORACLE=.../o.%p.json the
# parent, each forked child and the exec'd image write their own files with
# the counts of their own process (a child inherits the counts made before
# the fork, as it inherits the memory).
set -uo pipefail
native=$1 instr=$2 expect=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
want=$("$native")
got=$(AMEBA_ORACLE="$tmp/o.%p.json" timeout 120 "$instr"); rc=$?
[ "$rc" = 0 ] || { echo "fork_exec: instrumented run exited $rc" >&2; fail=1; }
[ "$want" = "$got" ] || { echo "fork_exec: output differs: native [$want] vs [$got]" >&2; fail=1; }
nr=$(ls "$tmp"/o.*.json 2>/dev/null | wc -l)
[ "$nr" = 7 ] || { echo "fork_exec: $nr oracle files, want 7 (parent, 5 children, exec image)" >&2; fail=1; }
printf 'bin parent_block 0 writes 100\nbin parent_block 0 reads 0\n' > "$tmp/parent.spec"
printf 'bin parent_block 0 writes 100\nbin parent_block 0 reads 50\nbin child_block 0 writes 50\nbin thread_block 0 writes 0\n' > "$tmp/child.spec"
printf 'bin exec_block 0 writes 20\nbin exec_block 0 reads 20\nobjects parent_block - count 0\n' > "$tmp/exec.spec"
for f in "$tmp"/o.*.json; do
  if grep -q '"exec_block' "$f"; then spec=exec
  elif grep -q '"child_block' "$f"; then spec=child
  else spec=parent; fi
  "$expect" "$f" "$tmp/$spec.spec" > "$tmp/res" 2>&1 || { echo "fork_exec: $spec file $f:" >&2; cat "$tmp/res" >&2; fail=1; }
done
# the thread a child started wrote its own block: thread 2 in the child (1 = churn)
for f in "$tmp"/o.*.json; do
  grep -q '"child_block' "$f" || continue
  printf 'bin thread_block 2 writes 10\n' > "$tmp/t.spec"
  "$expect" "$f" "$tmp/t.spec" > "$tmp/res" 2>&1 || { cat "$tmp/res" >&2; fail=1; }
done
[ $fail = 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
