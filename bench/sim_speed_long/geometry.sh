#!/usr/bin/env bash
# geometry.sh DIR - what an exact run costs under the host's own preset (the
# geometry `ameba run` simulates by default: an L2, 3C and the TLB model
# on), against cachegrind given the host's L1 data cache and last level
# (read from /sys/devices/system/cpu/cpu0/cache), on run.sh's kernels
# (docs/simulator.md, "The geometry users run").
#
# DIR holds run.sh's two builds of kernels.c: long_ameba (`build/bin/ameba
# cc --compiler gcc -O2 -g -pthread bench/sim_speed_long/kernels.c -o
# DIR/long_ameba`) and long_native (`gcc -O2 -g -fno-tree-vectorize -pthread
# ... -o DIR/long_native`). Each kernel (GEOM_KERNELS, default "gemm jacobi
# chase stream"; single-threaded ones) runs at its own scale (gemm 0.2,
# jacobi 0.4, chase 0.4, stream 0.2, rmw 0.3, hashtab 0.3; GEOM_SCALE
# multiplies them) for GEOM_ROUNDS rounds (default 2), cachegrind and the
# simulator's six settings back to back in each round: by default, with
# AMEBA_SIM_3C=0, and with AMEBA_SIM_TLB=0 as well, each also with
# AMEBA_SIM_LEAN=0 (every access on the general path); GEOM_SETTINGS
# names some of them (default "default default_general no3c
# no3c_general no3c_notlb no3c_notlb_general"). Prints, for each kernel k,
# the best round in CPU seconds:
#   geom_cachegrind_s_<k>
#   geom_default_s_<k>, geom_default_general_s_<k>
#   geom_no3c_s_<k>, geom_no3c_general_s_<k>
#   geom_no3c_notlb_s_<k>, geom_no3c_notlb_general_s_<k>
#   geom_default_over_cachegrind_<k>   the default run's time over cachegrind's
#                                      (when the default setting runs)
# and on stderr each round's times. About 10 minutes on the Zen 2 VM.
# Needs valgrind and /usr/bin/time; exits 1 when a run fails.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=settings.sh
. "$here/settings.sh"
bench_args 1 1 "geometry.sh DIR" "$@"
me=geometry.sh base=cpu
dir=$1 rounds=${GEOM_ROUNDS:-2} scale=${GEOM_SCALE:-1}
for b in long_ameba long_native; do
	[ -x "$dir/$b" ] || { echo "$me: $dir/$b missing (geometry.sh --help)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the host's L1 data cache and last level, as cachegrind's --D1 and --LL
cache_of() {	# cache_of LEVEL TYPE: size,assoc,line in bytes
	local d
	for d in /sys/devices/system/cpu/cpu0/cache/index*; do
		if [ "$(cat "$d/level")" = "$1" ] && [ "$(cat "$d/type")" = "$2" ]; then
			awk '{ n = $1 + 0; u = substr($1, length($1)) }
			     END { printf "%d", n * (u == "K" ? 1024 : u == "M" ? 1048576 : 1) }' \
				"$d/size"
			echo ",$(cat "$d/ways_of_associativity"),$(cat "$d/coherency_line_size")"
			return 0
		fi
	done
	return 1
}
d1=$(cache_of 1 Data) || { echo "$me: no L1 data cache in sysfs" >&2; exit 1; }
ll=$(cache_of 3 Unified || cache_of 2 Unified) ||
	{ echo "$me: no unified cache in sysfs" >&2; exit 1; }
echo "$me: cachegrind --D1=$d1 --LL=$ll; the simulator under the host preset" >&2

declare -A best
all_settings="default default_general no3c no3c_general no3c_notlb no3c_notlb_general"
read -r -a settings <<<"${GEOM_SETTINGS:-$all_settings}"
for st in "${settings[@]}"; do
	case " $all_settings " in *" $st "*) ;;
	*) echo "$me: GEOM_SETTINGS: $st: one of $all_settings" >&2; exit 2 ;; esac
done
env_of() {
	case $1 in
	default) echo "" ;;
	default_general) echo "AMEBA_SIM_LEAN=0" ;;
	no3c) echo "AMEBA_SIM_3C=0" ;;
	no3c_general) echo "AMEBA_SIM_3C=0 AMEBA_SIM_LEAN=0" ;;
	no3c_notlb) echo "AMEBA_SIM_3C=0 AMEBA_SIM_TLB=0" ;;
	no3c_notlb_general) echo "AMEBA_SIM_3C=0 AMEBA_SIM_TLB=0 AMEBA_SIM_LEAN=0" ;;
	esac
}
keep() {	# keep KEY SECONDS: the best so far
	local old=${best[$1]:-}
	if [ -z "$old" ] || awk -v a="$2" -v b="$old" 'BEGIN { exit !(a < b) }'; then
		best[$1]=$2
	fi
}
for r in $(seq "$rounds"); do
	for k in ${GEOM_KERNELS:-gemm jacobi chase stream}; do
		case $k in
		gemm | stream) s=0.2 ;; jacobi | chase) s=0.4 ;; rmw | hashtab) s=0.3 ;;
		*) echo "$me: $k: not a single-threaded kernel of kernels.c" >&2; exit 2 ;;
		esac
		s=$(awk -v a="$s" -v b="$scale" 'BEGIN { printf "%g", a * b }')
		# shellcheck disable=SC2054  # the commas are cachegrind's
		t=$(secs valgrind --tool=cachegrind --cache-sim=yes --D1="$d1" --LL="$ll" \
			--cachegrind-out-file=/dev/null "$dir/long_native" "$k" "$s") || exit 1
		keep "cachegrind_$k" "$t"
		line="$k $s: cachegrind $t"
		for st in "${settings[@]}"; do
			# shellcheck disable=SC2046  # the setting's words
			t=$(secs env AMEBA_BACKEND=sim AMEBA_ORACLE="$tmp/oracle.json" $(env_of "$st") \
				"$dir/long_ameba" "$k" "$s") || exit 1
			keep "${st}_$k" "$t"
			line="$line, $st $t"
		done
		echo "$me: round $r/$rounds: $line" >&2
	done
done
for k in ${GEOM_KERNELS:-gemm jacobi chase stream}; do
	echo "geom_cachegrind_s_$k: ${best[cachegrind_$k]}"
	for st in "${settings[@]}"; do
		echo "geom_${st}_s_$k: ${best[${st}_$k]}"
	done
	[ -n "${best[default_$k]:-}" ] &&
		awk -v a="${best[default_$k]}" -v b="${best[cachegrind_$k]}" -v k="$k" \
			'BEGIN { printf "geom_default_over_cachegrind_%s: %.2f\n", k, a / b }'
done
