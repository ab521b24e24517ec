#!/bin/bash
# ipa.sh BIN_DIR - instructions per simulated access of the long kernels
# (issue 24), counted by callgrind: a figure this VM's timing noise (runs
# of one build spread by up to 50%) does not move, for judging a change to
# the access path before bench-sim-speed-long times it.
#
# BIN_DIR holds long_ameba (run.sh's instrumented build). Each kernel k
# (LONG_KERNELS, default: gemm jacobi stream rmw chase hashtab jacobi_2t
# rmw_2t; the 2-thread ones' merger counts as other, all threads summed) runs once
# under callgrind at scale IPA_SCALE (default 0.02: ~7-36 million
# accesses, 10-60 s each) in run.sh's setting: the sim backend and the
# oracle, bench/sim_validate/cachegrind.conf, 3C and the TLB model off,
# the solo thread's mode pinned (IPA_MODE, default filter: auto chooses by
# time, which callgrind's would not repeat; single and batch the others).
# The program's own instructions are included. Prints
#   instructions_per_access_<k>   all instructions / accesses simulated
#   ipa_<part>_<k>                the same for each part, by function with
#                                 what it inlines: miss (the miss half and
#                                 the lean path; in ordered mode the
#                                 merger's misses), entry (the single
#                                 entry's hit, sim_line_fast_x86), batch
#                                 (the batch's hits), hooks (__tsan_*), log
#                                 (ordered mode's threads: mon_seq_*),
#                                 merger (its loop, turns and filter, the
#                                 hits through the remembered lines),
#                                 program (kernels.c), other
#   accesses_<k>                  mem_ref over every object of the oracle
# With IPA_MARGINAL=1 each kernel runs again at twice the scale, and the
# same figures prefixed marginal_ count only what the second run did
# beyond the first (its instructions and accesses less the first's): the
# steady state of a long run, without the start-up, the set-up of the
# kernel's data and a first pass that differs from the others (stream at
# 0.02: 177.7 an access with its array's initial writes, 220.4 marginal).
# For the single-threaded kernels: the 2-thread ones' counts include the
# merger's waits under callgrind's schedule (one thread at a time), which
# a difference of two runs magnifies (jacobi_2t's merger, 0.04 less 0.02:
# 198.4 and ~96 an access in two runs).
# Exits 1 when a tool is missing or a run fails.
case ${1:-} in -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
set -u
dir=${1:?usage: ipa.sh BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=settings.sh
. "$here/settings.sh"
scale=${IPA_SCALE:-0.02}
for tool in valgrind callgrind_annotate python3; do
	command -v "$tool" >/dev/null || { echo "ipa.sh: $tool not found (apt-get install valgrind python3)" >&2; exit 1; }
done
[ -x "$dir/long_ameba" ] || {
	echo "ipa.sh: $dir/long_ameba missing (cmake --build build --target bench-sim-ipa)" >&2
	exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_ipa.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
status=0

# measure K SCALE OUT: one callgrind run of kernel K at SCALE; its parts'
# instructions and the accesses, as JSON, in OUT
measure() {
	local k=$1 sc=$2 out=$3
	echo "ipa.sh: $k at $sc under callgrind ..." >&2
	if ! env "${sim_env[@]}" \
		AMEBA_SIM_MODE="${IPA_MODE:-filter}" \
		AMEBA_ORACLE="$tmp/oracle.json" valgrind --tool=callgrind \
		--callgrind-out-file="$tmp/cg.out" "$dir/long_ameba" "$k" "$sc" \
		>"$tmp/out" 2>"$tmp/err"; then
		echo "ipa.sh: $k failed under callgrind at $sc:" >&2
		tail -n 5 "$tmp/err" >&2
		return 1
	fi
	callgrind_annotate --threshold=100 "$tmp/cg.out" >"$tmp/ann" 2>/dev/null
	python3 - "$k" "$tmp/ann" "$tmp/oracle.json" "$out" <<'PY'
import json, re, sys
k, ann, oracle, out = sys.argv[1:5]
acc = sum(o["total"].get("mem_ref", 0) for o in json.load(open(oracle))["objects"])
if acc == 0:
    sys.exit(f"ipa.sh: {k}: no accesses in the oracle")
parts = dict.fromkeys(("miss", "entry", "batch", "hooks", "log", "merger", "program", "other"), 0)
merger = ("merge_run", "merge_round", "merge_running", "mon_seq_merger_main", "try_resume",
          "blocked_may_resume", "seq_access_rest", "sim_mf_note", "merge_plain", "merge_duel",
          "merge_entry", "run_end", "sim_mf_hits_x86")
total = 0
for line in open(ann):
    m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(PROGRAM TOTALS|(\S+):(\S+))", line)
    if not m:
        continue
    n = int(m.group(1).replace(",", ""))
    if m.group(2) == "PROGRAM TOTALS":
        total = n
        continue
    src, fn = m.group(3), m.group(4)
    if fn in merger or fn.startswith("mon_sim_seq_access"):
        part = "merger"
    elif fn.startswith("mon_seq_"):
        part = "log"
    elif "line_miss" in fn or "lf_miss" in fn or "lean" in fn or "mon_sim_access" in fn or "llc_" in fn:
        part = "miss"
    elif fn.startswith("sim_line_fast"):
        part = "entry"
    elif fn.startswith("sim_batch_hits"):
        part = "batch"
    elif fn.startswith("__tsan"):
        part = "hooks"
    elif src.endswith("kernels.c"):
        part = "program"
    else:
        part = "other"
    parts[part] += n
json.dump({"total": total, "parts": parts, "acc": acc}, open(out, "w"))
PY
}

# show PREFIX K A [B]: the figures of run A, or with B those of what B
# added to A (its instructions and accesses beyond A's)
show() {
	python3 - "$@" <<'PY'
import json, sys
pre, k, fa = sys.argv[1:4]
a = json.load(open(fa))
if len(sys.argv) > 4:
    b = json.load(open(sys.argv[4]))
    acc = b["acc"] - a["acc"]
    if acc <= 0:
        sys.exit(f"ipa.sh: {k}: no more accesses at the second scale")
    total = b["total"] - a["total"]
    parts = {p: b["parts"][p] - a["parts"][p] for p in a["parts"]}
else:
    acc, total, parts = a["acc"], a["total"], a["parts"]
print(f"{pre}instructions_per_access_{k}: {total / acc:.1f}")
for p, n in parts.items():
    print(f"{pre}ipa_{p}_{k}: {n / acc:.1f}")
print(f"{pre}accesses_{k}: {acc}")
PY
}

for k in $kernels; do
	measure "$k" "$scale" "$tmp/a.json" || { status=1; continue; }
	show "" "$k" "$tmp/a.json" || status=1
	[ "${IPA_MARGINAL:-0}" = 1 ] || continue
	sc2=$(awk -v s="$scale" 'BEGIN { print 2 * s }')
	measure "$k" "$sc2" "$tmp/b.json" || { status=1; continue; }
	show marginal_ "$k" "$tmp/a.json" "$tmp/b.json" || status=1
done
exit $status
