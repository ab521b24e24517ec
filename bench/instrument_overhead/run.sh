#!/bin/sh
# run.sh BIN_DIR - what instrumentation costs while the runtime is dormant.
#
# BIN_DIR holds the kernels (kernels.c) built several ways:
#   native          gcc -O2
#   dormant         ameba cc -O2 (gcc), no analysis attached: the headline
#                   (the dual path where this ameba has it, docs/dual-path.md)
#   dormant_single  ameba cc -O2 --ameba-single-path: one instrumented body
#   dormant_noentry the same, --param=tsan-instrument-func-entry-exit=0
#   floor           gcc -O2 -fsanitize=thread with empty hooks and no runtime:
#                   the cost of the calls alone
#   native_clang, dormant_clang, dormant_clang_single   the same three with clang
#   dormant_clang_thinlto   clang ThinLTO with the hooks' fast path inlined
# and runs each kernel (dense, chase, mt, flat) BENCH_RUNS times (default 5;
# chase 3), keeping the median run. Prints `name: value` lines:
#   native_s_<k>, dormant_s_<k>, dormant_ratio_<k>      the contract
#   dormant_ns_per_access_<k>   (dormant - native) / accesses
#   single_ratio_<k>            dormant_single against native
#   floor_ratio_<k>, noentry_ratio_<k>, clang_dormant_ratio_<k>,
#   clang_single_ratio_<k>, clang_thinlto_ratio_<k>  (the clang ratios
#                   against native clang)
#   active_s_<k>, active_ratio_<k>  one run with AMEBA_ORACLE (count backend)
#   switch_{latency,cpu}_us_{p50,p99,max}_<mode>_<W>t  (switch.c, dual path
#                   only, prefixed gcc_ or clang_) how long a switch to measuring
#                   takes to reach W running threads in a loop nest or one flat
#                   loop: wall time and the threads' CPU time
# Timing never fails the run; a wrong checksum does (exit 1).
case ${1:-} in -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
set -u
dir=${1:?usage: run.sh BIN_DIR}
runs=${BENCH_RUNS:-5}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_io.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
status=0

# best BIN KERNEL SCALE N [env...]: prints "secs checksum accesses" of the
# median of N runs
best() {
	bin=$1 kernel=$2 scale=$3 n=$4
	shift 4
	i=0
	while [ $i -lt "$n" ]; do
		if ! env "$@" "$dir/$bin" "$kernel" "$scale" >>"$tmp/runs"; then
			echo "run.sh: $bin $kernel failed" >&2
			return 1
		fi
		i=$((i + 1))
	done
	# the median: this VM has spells in which everything runs ~30% faster,
	# and the fastest of a few runs lands in one for some builds only
	sort -n "$tmp/runs" | awk '{ l[NR] = $0 } END { print l[int((NR + 1) / 2)] }'
	rm -f "$tmp/runs"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }'; }

for kernel in dense chase mt flat; do
	n=$runs
	[ "$kernel" = chase ] && n=$(( runs < 3 ? runs : 3 ))
	# long enough (0.5-2 s native) that a VM's noise and start-up stay small
	case $kernel in dense) sc=16 ;; mt) sc=8 ;; flat) sc=4 ;; *) sc=2 ;; esac
	echo "scale_$kernel: $sc"
	native=$(best native "$kernel" "$sc" "$n") || { status=1; continue; }
	set -- $native
	native_s=$1 sum=$2 accesses=$3
	echo "native_s_$kernel: $native_s"

	for variant in dormant dormant_single dormant_noentry floor native_clang dormant_clang \
		dormant_clang_single dormant_clang_thinlto; do
		[ -x "$dir/$variant" ] || continue
		r=$(best "$variant" "$kernel" "$sc" "$n" AMEBA_ORACLE=) || { status=1; continue; }
		set -- $r
		if [ "$2" != "$sum" ]; then
			echo "run.sh: $variant $kernel checksum $2, native $sum" >&2
			status=1
		fi
		eval "s_$variant=$1"
	done
	echo "dormant_s_$kernel: $s_dormant"
	echo "dormant_ratio_$kernel: $(ratio "$s_dormant" "$native_s")"
	awk -v d="$s_dormant" -v n="$native_s" -v a="$accesses" -v k="$kernel" \
		'BEGIN { printf "dormant_ns_per_access_%s: %.2f\n", k, (d - n) / a * 1e9 }'
	[ -n "${s_dormant_single:-}" ] &&
		echo "single_ratio_$kernel: $(ratio "$s_dormant_single" "$native_s")"
	[ -n "${s_dormant_noentry:-}" ] &&
		echo "noentry_ratio_$kernel: $(ratio "$s_dormant_noentry" "$native_s")"
	[ -n "${s_floor:-}" ] && echo "floor_ratio_$kernel: $(ratio "$s_floor" "$native_s")"
	if [ -n "${s_native_clang:-}" ] && [ -n "${s_dormant_clang:-}" ]; then
		echo "clang_native_s_$kernel: $s_native_clang"
		echo "clang_dormant_s_$kernel: $s_dormant_clang"
		echo "clang_dormant_ratio_$kernel: $(ratio "$s_dormant_clang" "$s_native_clang")"
		[ -n "${s_dormant_clang_single:-}" ] &&
			echo "clang_single_ratio_$kernel: $(ratio "$s_dormant_clang_single" "$s_native_clang")"
		if [ -n "${s_dormant_clang_thinlto:-}" ]; then
			echo "clang_thinlto_s_$kernel: $s_dormant_clang_thinlto"
			echo "clang_thinlto_ratio_$kernel: $(ratio "$s_dormant_clang_thinlto" "$s_native_clang")"
		fi
	fi

	# Active: every access through mon_access into the count backend (at
	# scale 1: against the native time scaled down).
	r=$(best dormant "$kernel" 1 1 AMEBA_ORACLE="$tmp/oracle.json") || { status=1; continue; }
	set -- $r
	echo "active_s_$kernel: $1"
	echo "active_ratio_$kernel: $(awk -v a="$1" -v b="$native_s" -v s="$sc" \
		'BEGIN { printf "%.2f", (b > 0) ? a * s / b : 0 }')"
	unset s_dormant s_dormant_single s_dormant_noentry s_floor s_native_clang s_dormant_clang \
		s_dormant_clang_single s_dormant_clang_thinlto
done

# The dual path's switch: one worker (a CPU of its own on a 2-CPU machine)
# and four (scheduling delays included), in a loop nest and in one flat loop.
for cc in gcc clang; do
	[ -x "$dir/switch_$cc" ] || continue
	for mode in nest flat; do
		for w in 1 4; do
			AMEBA_MRI=0 "$dir/switch_$cc" "$w" "$mode" | sed "s/^/${cc}_/" || status=1
		done
	done
done
# The way back: the worker's rate after a switch off over its clean rate.
for cc in gcc clang; do
	[ -x "$dir/switch_back_$cc" ] || continue
	AMEBA_MRI=0 "$dir/switch_back_$cc" | sed "s/^/${cc}_/" || status=1
done
exit $status
