#!/usr/bin/env bash
# norep.sh BIN...        fails when the program's own code in an instrumented
# norep.sh --workloads DIR  executable holds an x86 string instruction
#                           (rep movs, rep stos, repz cmps, repnz scas, lods):
# such an instruction reads or writes memory below the ThreadSanitizer hooks,
# so ameba would not see the access (docs/ameba-cc.md). With --workloads,
# every instrumented workload build in DIR (wl_*, not *_native) is checked.
#
# The program's own code is every function with line information (nm -l)
# outside the runtime, which lies between mon_text_begin and mon_text_end
# (monitor/rt_text_begin.c): the program's sources and the header code
# instantiated in them. libc and other DSOs are not in the executable.
set -uo pipefail
if [ "${1:-}" = --workloads ]; then
  dir=${2:?norep.sh --workloads DIR}
  set -- $(ls -d "$dir"/wl_* 2> /dev/null | grep -v '_native$')
  [ $# -gt 0 ] || { echo "norep.sh: no instrumented workload in $dir (build first)" >&2; exit 1; }
fi
[ $# -gt 0 ] || { echo "usage: norep.sh BIN... | --workloads DIR" >&2; exit 2; }
nr_bad=0 nr_fn=0
for bin in "$@"; do
  syms=$(nm -l --defined-only "$bin") || { echo "norep.sh: cannot read $bin" >&2; exit 1; }
  lo=$(awk '$3 == "mon_text_begin" { print $1 }' <<< "$syms")
  hi=$(awk '$3 == "mon_text_end" { print $1 }' <<< "$syms")
  [ -n "$lo" ] && [ -n "$hi" ] || { echo "norep.sh: $bin has no ameba runtime (mon_text_begin/end)" >&2; exit 1; }
  # "address name file:line" of the program's functions (nm pads addresses
  # to one width, so they compare as strings)
  fns=$(awk -F'\t' -v lo="$lo" -v hi="$hi" '
    NF >= 2 { split($1, f, " "); if (f[2] !~ /^[tTwW]$/) next
              a = f[1] ""; if (a >= lo "" && a <= hi "") next
              print f[1], f[3], $2 }' <<< "$syms")
  [ -n "$fns" ] || { echo "norep.sh: $bin: no function with line information" >&2; exit 1; }
  nr_fn=$((nr_fn + $(wc -l <<< "$fns")))
  out=$(objdump -d --no-show-raw-insn "$bin" | awk -v bin="$bin" '
    FNR == NR { a = $1; sub(/^0+/, "", a); user[a] = $2 " (" $3 ")"; next }
    /^[0-9a-f]+ <.*>:$/ { a = $1; sub(/^0+/, "", a); cur = (a in user) ? user[a] : ""; next }
    cur != "" && /:\t(rep[a-z]* +)?(movs|stos|cmps|scas|lods)[bwlq]?( |$)/ {
      insn = $0; sub(/^ *[0-9a-f]+:\t/, "", insn)
      printf "%s: %s: %s\n", bin, cur, insn }' <(echo "$fns") -)
  if [ -n "$out" ]; then
    echo "$out"
    nr_bad=$((nr_bad + $(wc -l <<< "$out")))
  fi
done
echo "norep.sh: $# executable(s), $nr_fn function(s) of the program checked, $nr_bad string instruction(s)"
[ "$nr_bad" = 0 ]
