# settings.sh - sourced by run.sh, others.sh, ipa.sh and ab.sh: what they
# measure. Needs `here` (this directory). Sets conf (the geometry both sides
# simulate: bench/sim_validate/cachegrind.conf) and kernels (LONG_KERNELS,
# default all eight of kernels.c), sim_env (the instrumented kernels'
# environment: the sim backend, that geometry, 3C and the TLB model off, as
# cachegrind has neither), cg_opts (cachegrind's: the same geometry); and
# compare, which times one program both ways (run.sh, others.sh).
# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154  # here, tmp, rounds, me: set by, conf, kernels, sim_env, base: used by, the scripts that source this
conf=$here/../sim_validate/cachegrind.conf
kernels=${LONG_KERNELS:-"gemm jacobi stream rmw chase hashtab jacobi_2t rmw_2t"}
sim_env=(AMEBA_BACKEND=sim AMEBA_PRESET="$conf" AMEBA_SIM_3C=0 AMEBA_SIM_TLB=0)
# shellcheck disable=SC2054  # the commas are cachegrind's
cg_opts=(--tool=cachegrind --cache-sim=yes --D1=32768,8,64 --LL=8388608,16,64 --I1=32768,8,64
	--cachegrind-out-file=/dev/null)

# bench_args MIN MAX USAGE ARG...: with -h or --help first, prints the
# calling script's header (its comment lines from the second to `set -u`)
# and exits 0; with fewer than MIN or more than MAX ARGs, prints USAGE and
# exits 2
bench_args() {
	local min=$1 max=$2 use=$3
	shift 3
	case ${1:-} in
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	esac
	if [ $# -lt "$min" ] || [ $# -gt "$max" ]; then
		echo "usage: $use ($(basename "$0") --help)" >&2
		exit 2
	fi
}

# secs CMD...: CPU seconds (user + system) of one run, or wall seconds when
# base is wall; its stdout in $tmp/out
secs() {
	/usr/bin/time -f "%U %S %e" -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err" ||
		{ echo "$me: $* failed" >&2; tail -n 5 "$tmp/err" >&2; return 1; }
	awk -v b="$base" '{ printf "%.3f\n", (b == "wall") ? $3 : $1 + $2 }' "$tmp/time"
}

# stats V...: "best spread" of the values
stats() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { printf "%.3f %.3f\n", v[1], (v[1] > 0) ? (v[NR] - v[1]) / v[1] : 0 }'
}

# time_base K: what K is timed in - wall seconds for a kernel of threads
# (*_2t, *_32t: cachegrind runs them one at a time, the simulator side by
# side), else CPU seconds
time_base() {
	case $1 in *_[0-9]t | *_[0-9][0-9]t) echo wall ;; *) echo cpu ;; esac
}

# compare K NATIVE AMEBA ARG...: K (a kernel, or one of others.sh's
# programs; *_2t, *_32t: timed in wall seconds, else CPU) run as NATIVE ARG...
# once, then `rounds` rounds of NATIVE under cachegrind and AMEBA under the
# simulator with the oracle (AMEBA's output must be NATIVE's); prints the
# lines run.sh documents, and leaves cachegrind's best time in compare_cg_s.
# Returns 1 when a run fails or an output differs.
compare() {
	local k=$1 nat=$2 ame=$3 t want r cg=() sim=() cg_best cg_spread sim_best sim_spread acc
	shift 3
	base=$(time_base "$k")
	echo "time_base_$k: $base"
	t=$(secs "$nat" "$@") || return 1
	want=$(md5sum <"$tmp/out")
	echo "native_s_$k: $t"
	for r in $(seq 1 "$rounds"); do
		t=$(secs valgrind "${cg_opts[@]}" "$nat" "$@") || return 1
		cg+=("$t")
		t=$(secs env "${sim_env[@]}" AMEBA_ORACLE="$tmp/oracle.json" "$ame" "$@") || return 1
		sim+=("$t")
		if [ "$(md5sum <"$tmp/out")" != "$want" ]; then
			echo "$me: $k: the instrumented build's output is not the native one's" \
				"(round $r: $(head -c 60 "$tmp/out"))" >&2
			return 1
		fi
		# progress on stderr: a whole run takes 10-50 minutes
		echo "$me: $k round $r of $rounds: cachegrind ${cg[-1]} s, simulator ${sim[-1]} s ($base)" >&2
	done
	read -r cg_best cg_spread < <(stats "${cg[@]}")
	read -r sim_best sim_spread < <(stats "${sim[@]}")
	acc=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(o["total"].get("mem_ref",0) for o in d["objects"]))' "$tmp/oracle.json")
	compare_cg_s=$cg_best
	echo "cachegrind_s_$k: $cg_best"
	echo "cachegrind_spread_$k: $cg_spread"
	echo "sim_s_$k: $sim_best"
	echo "sim_spread_$k: $sim_spread"
	awk -v c="$cg_best" -v s="$sim_best" -v k="$k" -v a="$acc" 'BEGIN {
		printf "speedup_vs_cachegrind_%s: %.2f\n", k, (s > 0) ? c / s : 0
		printf "accesses_%s: %.0f\n", k, a
		printf "ns_per_access_%s: %.1f\n", k, (a > 0) ? s / a * 1e9 : 0 }'
}
