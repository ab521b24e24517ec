#!/bin/bash
# run.sh validate|speed BIN_DIR - the cache simulator against cachegrind.
#
# BIN_DIR holds kernels.c built twice:
#   kernels_native   gcc -O2 -fno-tree-vectorize (what cachegrind runs)
#   kernels_ameba    ameba cc -O2 (what the sim backend runs)
# Both use the geometry of cachegrind.conf: D1 32 KiB 8-way, LL 8 MiB
# 16-way, 64-byte lines, LRU (cachegrind --D1=32768,8,64 --LL=8388608,16,64).
#
# validate: per single-threaded kernel k (dense, strided, random, stencil,
#   chase) the data misses of kernels.c's code counted by cachegrind
#   (cg_d1_miss_k, cg_ll_miss_k) and by the simulator (sim_d1_miss_k,
#   sim_ll_miss_k, the totals of the AMEBA_ORACLE file), and
#   d1_miss_diff_pct_k / ll_miss_diff_pct_k = 100 * (sim - cachegrind) /
#   cachegrind.
# speed: per kernel (the five above, then the 2-thread dense_2t and
#   stencil_2t) the best of BENCH_RUNS (default 5) times natively
#   (native_s_k), under cachegrind --cache-sim=yes (cachegrind_s_k) and
#   instrumented with the sim backend (sim_s_k, 3C and TLB off as
#   cachegrind has neither, oracle written at
#   exit), the three run back to back in each round so that they share
#   the machine's load; speedup_vs_cachegrind_k = cachegrind_s_k / sim_s_k; and
#   sim_accesses_per_s_per_thread_k, the accesses the simulator handled
#   (mem_ref of the oracle) per second of sim_s_k and per thread.
#   Single-threaded kernels are timed in CPU seconds (user + system): the
#   development VMs are shared, and CPU time is what other load disturbs
#   least. The 2-thread kernels are timed in wall seconds: in host order
#   (AMEBA_SIM_ORDER=host) the threads simulate in parallel, where
#   cachegrind serialises them; in time order, the default, one merger
#   simulates both, as cachegrind does. They need two idle cores to mean
#   anything.
#
# SIM_KERNELS overrides the list of kernels. Prints `name: value` lines;
# timing never fails the run, a missing tool or a wrong checksum does
# (exit 1).
case ${1:-} in -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
set -u
mode=${1:?usage: run.sh validate|speed BIN_DIR}
dir=${2:?usage: run.sh validate|speed BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
conf=$here/cachegrind.conf
case $mode in
speed) kernels=${SIM_KERNELS:-"dense strided random stencil chase dense_2t stencil_2t"} ;;
*) kernels=${SIM_KERNELS:-"dense strided random stencil chase"} ;;
esac
runs=${BENCH_RUNS:-5}
cg_opts=(--tool=cachegrind --cache-sim=yes --D1=32768,8,64 --LL=8388608,16,64 --I1=32768,8,64)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_sim.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
status=0

command -v valgrind >/dev/null || { echo "run.sh: valgrind not found" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "run.sh: /usr/bin/time not found" >&2; exit 1; }
[ -x "$dir/kernels_native" ] && [ -x "$dir/kernels_ameba" ] || {
	echo "run.sh: $dir/kernels_native or kernels_ameba missing" >&2; exit 1; }

sim_env=(AMEBA_BACKEND=sim AMEBA_PRESET="$conf" AMEBA_SIM_3C=0 AMEBA_SIM_TLB=0)

# cg_misses FILE: "d1 ll" data misses of the code in kernels.c
cg_misses() {
	awk '/^events:/ { for (i = 2; i <= NF; i++) ev[i - 1] = $i; next }
	     /^fl=/ { f = $0; next }
	     /^[0-9]/ { if (f ~ /kernels\.c$/) for (i = 2; i <= NF; i++) s[ev[i - 1]] += $i }
	     END { printf "%d %d\n", s["D1mr"] + s["D1mw"], s["DLmr"] + s["DLmw"] }' "$1"
}

# oracle_refs FILE: "accesses threads": mem_ref summed over every object,
# and the number of threads that made any
oracle_refs() {
	python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
refs, threads = 0, set()
for o in d["objects"]:
    refs += o["total"].get("mem_ref", 0)
    threads.update(t for t, v in o.get("threads", {}).items() if v.get("mem_ref", 0))
print(refs, max(len(threads), 1))
PY
}

# oracle_misses FILE: "d1 ll" summed over every object
oracle_misses() {
	python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
tot = lambda m: sum(o["total"].get(m, 0) for o in d["objects"])
print(tot("l1d_miss"), tot("llc_miss"))
PY
}

pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0) ? 100.0 * (a - b) / b : 0 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }'; }
# per_s N SECONDS THREADS: N / SECONDS / THREADS, rounded
per_s() { awk -v n="$1" -v s="$2" -v t="$3" 'BEGIN { printf "%.0f", (s > 0) ? n / s / t : 0 }'; }

# secs CMD...: seconds of one run, stdout to $tmp/out: CPU seconds (user +
# system), or wall seconds when $clock is "wall" (see the header).
clock=cpu
secs() {
	/usr/bin/time -f "%U %S %e" -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err" ||
		{ echo "run.sh: $* failed" >&2; cat "$tmp/err" >&2; return 1; }
	awk -v clock="$clock" '{ printf "%.3f\n", clock == "wall" ? $3 : $1 + $2 }' "$tmp/time"
}

# min A B: the smaller of two second counts ("" counts as none yet)
min() {
	if [ -z "$2" ] || awk -v t="$1" -v b="$2" 'BEGIN { exit !(t < b) }'; then echo "$1"; else echo "$2"; fi
}

for k in $kernels; do
	want=$("$dir/kernels_native" "$k") || { status=1; continue; }
	case $mode in
	validate)
		valgrind "${cg_opts[@]}" --cachegrind-out-file="$tmp/cg.$k" "$dir/kernels_native" "$k" \
			>"$tmp/out" 2>"$tmp/err" || { echo "run.sh: cachegrind $k failed" >&2; status=1; continue; }
		env "${sim_env[@]}" AMEBA_ORACLE="$tmp/oracle.$k.json" "$dir/kernels_ameba" "$k" >"$tmp/out" ||
			{ echo "run.sh: sim $k failed" >&2; status=1; continue; }
		[ "$(cat "$tmp/out")" = "$want" ] || { echo "run.sh: $k: wrong checksum" >&2; status=1; }
		read -r cg_d1 cg_ll < <(cg_misses "$tmp/cg.$k")
		# (no line of kernels.c in cachegrind's output: a diff of 0% would
		# then compare nothing)
		[ "$cg_d1" -gt 0 ] || { echo "run.sh: $k: cachegrind counted no D1 miss in kernels.c" \
			"($dir/kernels_native built without -g?)" >&2; status=1; continue; }
		read -r sim_d1 sim_ll < <(oracle_misses "$tmp/oracle.$k.json")
		echo "cg_d1_miss_$k: $cg_d1"
		echo "sim_d1_miss_$k: $sim_d1"
		echo "cg_ll_miss_$k: $cg_ll"
		echo "sim_ll_miss_$k: $sim_ll"
		echo "d1_miss_diff_pct_$k: $(pct "$sim_d1" "$cg_d1")"
		echo "ll_miss_diff_pct_$k: $(pct "$sim_ll" "$cg_ll")"
		;;
	speed)
		case $k in *_2t) clock=wall ;; *) clock=cpu ;; esac
		# native, cachegrind and the simulator back to back, BENCH_RUNS
		# times, the best of each: the three see the same load
		n="" c="" s="" failed=0
		for ((i = 0; i < runs; i++)); do
			t=$(secs "$dir/kernels_native" "$k") || { failed=1; break; }
			n=$(min "$t" "$n")
			t=$(secs valgrind "${cg_opts[@]}" --cachegrind-out-file=/dev/null \
				"$dir/kernels_native" "$k") || { failed=1; break; }
			c=$(min "$t" "$c")
			t=$(secs env "${sim_env[@]}" AMEBA_ORACLE="$tmp/oracle.json" \
				"$dir/kernels_ameba" "$k") || { failed=1; break; }
			s=$(min "$t" "$s")
		done
		[ $failed = 0 ] || { status=1; continue; }
		[ "$(cat "$tmp/out")" = "$want" ] || { echo "run.sh: $k: wrong checksum" >&2; status=1; }
		read -r refs nthr < <(oracle_refs "$tmp/oracle.json")
		echo "native_s_$k: $n"
		echo "cachegrind_s_$k: $c"
		echo "sim_s_$k: $s"
		echo "speedup_vs_cachegrind_$k: $(ratio "$c" "$s")"
		echo "sim_accesses_per_s_per_thread_$k: $(per_s "$refs" "$s" "$nthr")"
		;;
	*)
		echo "usage: run.sh validate|speed BIN_DIR" >&2
		exit 2
		;;
	esac
done
exit $status
