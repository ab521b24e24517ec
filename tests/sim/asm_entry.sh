#!/usr/bin/env bash
# asm_entry.sh BIN[:ARG]...: the sim backend's assembly line entry (x86-64,
# backend_sim.c sim_line_fast_x86) against its C line entry
# (AMEBA_SIM_ASM=0): every single-threaded BIN (run with ARG, if given)
# writes the same oracle counts both ways, under skylake-sp with the 3C
# shadow on (the entry falls back to C for a shadow update) and under the
# bench geometry (bench/sim_validate/cachegrind.conf: no L2, LRU stamps
# that a lost TLB or L1 touch changes), and the assembly entry is the one
# that ran (gdb
# stops in it by default, never with AMEBA_SIM_ASM=0). ASLR off (setarch
# -R) and environments of one size, so that both runs see the same
# addresses: heap and stack placement change the set mapping.
set -euo pipefail
[ "$(uname -m)" = x86_64 ] || { echo "asm_entry: not x86-64: no assembly entry to test"; exit 0; }
command -v gdb >/dev/null || { echo "asm_entry: gdb not found (apt-get install gdb)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
bench_conf=$here/../../bench/sim_validate/cachegrind.conf
export AMEBA_BACKEND=sim AMEBA_PRESET=skylake-sp

# shellcheck source=oracle_lib.sh
. "$here/oracle_lib.sh"

status=0
for spec in "$@"; do
	parse_spec "$spec"
	expect_ran hit sim_line_fast_x86 "the assembly entry never ran" AMEBA_SIM_ASM=1 || status=1
	expect_ran "not hit" sim_line_fast_x86 "AMEBA_SIM_ASM=0 ran the assembly entry" \
		AMEBA_SIM_ASM=0 || status=1
	for cfg in "skylake-sp 1" "$bench_conf 0"; do
		read -r preset c3 <<<"$cfg"
		for as in 1 0; do
			AMEBA_PRESET=$preset AMEBA_SIM_3C=$c3 AMEBA_SIM_ASM=$as AMEBA_ORACLE=$out/$as.json \
				setarch -R "$bin" "${arg[@]}" >"$out/$as.out"
		done
		cmp -s "$out/1.out" "$out/0.out" || { echo "asm_entry: $name: output differs" >&2; status=1; }
		if refs=$(same "$out/1.json" "$out/0.json"); then
			echo "asm_entry: $name, $(basename "$preset") 3C=$c3: identical, $refs accesses"
		else
			echo "asm_entry: $name, $(basename "$preset") 3C=$c3: oracles differ" >&2
			status=1
		fi
	done
done
exit $status
