#!/usr/bin/env bash
# lean_l2_3c.sh BIN[:ARG]...: the sim backend's lean miss path with an L2
# (monitor/sim/sim_lean.h lean_l2_miss: SIM_LEAN_FIT_L2 and
# SIM_LEAN_FIT_8_8_16_L2) and with 3C (the shadow and the miss's class in
# sim_lean_body) against the general path (AMEBA_SIM_LEAN=0): every BIN
# (run with ARG, if given) writes the same oracle counts both ways - every
# metric of every object and thread - with the TLB model on and off, in
# four settings:
#   zen4, 3C off        8-way L1 and L2, a 16-way LLC: the kind with those
#                       as constants, the L2 as users' host presets have
#                       one; the solo thread's mode pinned to the line
#                       filter (AMEBA_SIM_MODE=filter: it applies with the
#                       TLB model off), which then runs (gdb stops in its
#                       miss, mon_sim_lf_miss)
#   zen4, 3C on         the same kind with the 3C shadow (the default run's)
#   lean_l2.conf        a small 4-way L2 whose victims are often still in
#                       the L1 (SIM_LEAN_FIT_L2), 3C off, the mode chosen
#                       as by default; the access batch runs (gdb stops in
#                       mon_batch_flush with AMEBA_SIM_BATCH_MISS=100)
#   cachegrind.conf, 3C on   no L2 (SIM_LEAN_FIT_8_16: 3C keeps the
#                       filter's kind off)
# The lean kind is the one that ran: gdb stops in its miss half
# (line_miss_8_8_16_l2, line_miss_l2, line_miss_8_16: not inline, where
# lean_l2_miss's inline copies do not all take a breakpoint), and never
# with AMEBA_SIM_LEAN=0; sim_test's test_lean_l2 checks that nearly every
# access of such a core takes the lean path, with every class of 3C
# miss. ASLR off, as lean_path.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=oracle_lib.sh
. "$here/oracle_lib.sh"
bench_setup
bench_conf=$AMEBA_PRESET

status=0
for spec in "$@"; do
	parse_spec "$spec"
	for setting in "zen4 0 line_miss_8_8_16_l2" "zen4 1 line_miss_8_8_16_l2" \
		"$here/lean_l2.conf 0 line_miss_l2" "$bench_conf 1 line_miss_8_16"; do
		read -r AMEBA_PRESET AMEBA_SIM_3C fn <<<"$setting"
		export AMEBA_PRESET AMEBA_SIM_3C
		unset AMEBA_SIM_MODE
		echo "lean_l2_3c: $name: under $(basename "$AMEBA_PRESET"), 3C=$AMEBA_SIM_3C"
		if [ "$AMEBA_PRESET" = zen4 ] && [ "$AMEBA_SIM_3C" = 0 ]; then
			export AMEBA_SIM_MODE=filter
			expect_ran hit mon_sim_lf_miss "the line filter never ran with an L2" \
				AMEBA_SIM_TLB=0 || status=1
		elif [ "$fn" = line_miss_l2 ]; then
			expect_ran hit mon_batch_flush "the batch never ran with an L2" \
				AMEBA_SIM_BATCH_MISS=100 || status=1
		fi
		expect_ran hit "$fn" "the lean path never ran" AMEBA_SIM_LEAN=1 || status=1
		expect_ran "not hit" "$fn" "AMEBA_SIM_LEAN=0 ran the lean path" \
			AMEBA_SIM_LEAN=0 || status=1
		same_both_ways AMEBA_SIM_LEAN lean || status=1
	done
done
exit $status
