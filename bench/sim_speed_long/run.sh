#!/bin/bash
# run.sh BIN_DIR - the exact simulator against cachegrind on long runs
# (issue 24): cachegrind's ~0.3 s start-up is then <= 2% of its time, and
# the ratio measures the access path.
#
# BIN_DIR holds kernels.c (this directory) built twice:
#   long_native   gcc -O2 -fno-tree-vectorize (what cachegrind runs: the
#                 same scalar accesses the instrumented build reports)
#   long_ameba    ameba cc -O2 (the sim backend, forced to the instrumented
#                 body from the start by the oracle)
# Geometry: bench/sim_validate/cachegrind.conf on both sides (D1 32 KiB
# 8-way, LL 8 MiB 16-way, 64-byte lines, LRU; no L2; 3C and the TLB model
# off, AMEBA_SIM_TLB=0: cachegrind simulates neither), cachegrind
# --D1=32768,8,64 --LL=8388608,16,64.
#
# Per kernel k (LONG_KERNELS, default: gemm jacobi stream rmw chase
# hashtab jacobi_2t rmw_2t): the native checksum first (the instrumented
# run must print it), then LONG_ROUNDS (default 3) rounds of cachegrind and
# the simulator, the two back to back in each round so that they share the
# machine's load, in CPU seconds (user + system) - wall seconds for the
# 2-thread kernels (*_2t: cachegrind runs their threads one at a time, the
# simulator's threads and merger run side by side; what the user waits for
# is the wall time). Prints
#   time_base_<k>             cpu or wall
#   native_s_<k>              one native run
#   cachegrind_s_<k>, sim_s_<k>   the best round of each, and the spread
#   cachegrind_spread_<k>, sim_spread_<k>   (worst - best) / best
#   speedup_vs_cachegrind_<k>  cachegrind_s / sim_s (target >= 1.5)
#   accesses_<k>               the accesses the simulator handled (mem_ref
#                              over every object in the oracle file)
#   ns_per_access_<k>          sim_s / accesses
# LONG_SCALE (default 1) scales every kernel (0.05 for a quick look).
# Timing never fails the run; a missing tool or a wrong checksum does.
set -u
dir=${1:?usage: run.sh BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=settings.sh
. "$here/settings.sh"
rounds=${LONG_ROUNDS:-3}
scale=${LONG_SCALE:-1}
cg_opts=(--tool=cachegrind --cache-sim=yes --D1=32768,8,64 --LL=8388608,16,64 --I1=32768,8,64
	--cachegrind-out-file=/dev/null)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_long.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
status=0

command -v valgrind >/dev/null || { echo "run.sh: valgrind not found" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "run.sh: /usr/bin/time not found" >&2; exit 1; }
[ -x "$dir/long_native" ] && [ -x "$dir/long_ameba" ] || {
	echo "run.sh: $dir/long_native or long_ameba missing (cmake --build build --target bench-sim-speed-long)" >&2
	exit 1; }

# secs CMD...: CPU seconds (user + system) of one run, or wall seconds when
# base is wall; its stdout in $tmp/out
secs() {
	/usr/bin/time -f "%U %S %e" -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err" ||
		{ echo "run.sh: $* failed" >&2; tail -n 5 "$tmp/err" >&2; return 1; }
	awk -v b="$base" '{ printf "%.3f\n", (b == "wall") ? $3 : $1 + $2 }' "$tmp/time"
}

# stats V...: "best spread" of the values
stats() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { printf "%.3f %.3f\n", v[1], (v[1] > 0) ? (v[NR] - v[1]) / v[1] : 0 }'
}

for k in $kernels; do
	case $k in *_2t) base=wall ;; *) base=cpu ;; esac
	echo "time_base_$k: $base"
	t=$(secs "$dir/long_native" "$k" "$scale") || { status=1; continue; }
	want=$(cat "$tmp/out")
	echo "native_s_$k: $t"
	cg=() sim=()
	for r in $(seq 1 "$rounds"); do
		t=$(secs valgrind "${cg_opts[@]}" "$dir/long_native" "$k" "$scale") || { status=1; continue 2; }
		cg+=("$t")
		t=$(secs env "${sim_env[@]}" \
			AMEBA_ORACLE="$tmp/oracle.json" "$dir/long_ameba" "$k" "$scale") || { status=1; continue 2; }
		sim+=("$t")
		if [ "$(cat "$tmp/out")" != "$want" ]; then
			echo "run.sh: $k: checksum $(cat "$tmp/out"), native $want" >&2
			status=1
		fi
	done
	read -r cg_best cg_spread < <(stats "${cg[@]}")
	read -r sim_best sim_spread < <(stats "${sim[@]}")
	acc=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(o["total"].get("mem_ref",0) for o in d["objects"]))' "$tmp/oracle.json")
	echo "cachegrind_s_$k: $cg_best"
	echo "cachegrind_spread_$k: $cg_spread"
	echo "sim_s_$k: $sim_best"
	echo "sim_spread_$k: $sim_spread"
	awk -v c="$cg_best" -v s="$sim_best" -v k="$k" -v a="$acc" 'BEGIN {
		printf "speedup_vs_cachegrind_%s: %.2f\n", k, (s > 0) ? c / s : 0
		printf "accesses_%s: %.0f\n", k, a
		printf "ns_per_access_%s: %.1f\n", k, (a > 0) ? s / a * 1e9 : 0 }'
done
exit $status
