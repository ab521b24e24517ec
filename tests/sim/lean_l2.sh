#!/usr/bin/env bash
# lean_l2.sh BIN[:ARG]...: the sim backend's lean miss path with an L2
# (monitor/sim/sim_lean.h lean_l2_miss: SIM_LEAN_FIT_L2 and
# SIM_LEAN_FIT_8_8_16_L2) against the general path (AMEBA_SIM_LEAN=0):
# every BIN (run with ARG, if given) writes the same oracle counts both
# ways - every metric of every object and thread - with the TLB model on
# and off, under two geometries with an L2 and 3C off: the zen4 preset (8-way
# L1 and L2, a 16-way LLC: the kind with those as constants, and the L2 the
# way users' host presets have one) and tests/sim/lean_l2.conf (a small
# 4-way L2 whose victims are often still in the L1). The lean path with an
# L2 is the one that ran: gdb stops in the line entries' miss half of the
# geometry's L2 kind (line_miss_8_8_16_l2, line_miss_l2: not inline, where
# lean_l2_miss's inline copies do not all take a breakpoint), and never
# with AMEBA_SIM_LEAN=0; sim_test's test_lean_l2 checks that nearly every
# access of such a core takes the lean path. Under zen4 the solo thread's
# mode is pinned to the line filter (AMEBA_SIM_MODE=filter: it applies with
# the TLB model off), which then runs (gdb stops in its miss,
# mon_sim_lf_miss); under lean_l2.conf the mode is chosen as by default,
# and the access batch runs (gdb stops in mon_batch_flush with
# AMEBA_SIM_BATCH_MISS=100, where it never rests).
# ASLR off, as lean_path.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=oracle_lib.sh
. "$here/oracle_lib.sh"
bench_setup

status=0
for spec in "$@"; do
	parse_spec "$spec"
	for geom in zen4:line_miss_8_8_16_l2 "$here/lean_l2.conf:line_miss_l2"; do
		export AMEBA_PRESET=${geom%:*}
		fn=${geom##*:}
		echo "lean_l2: $name: under $(basename "$AMEBA_PRESET")"
		if [ "$AMEBA_PRESET" = zen4 ]; then
			export AMEBA_SIM_MODE=filter
			expect_ran hit mon_sim_lf_miss "the line filter never ran with an L2" \
				AMEBA_SIM_TLB=0 || status=1
		else
			unset AMEBA_SIM_MODE
			expect_ran hit mon_batch_flush "the batch never ran with an L2" \
				AMEBA_SIM_BATCH_MISS=100 || status=1
		fi
		expect_ran hit "$fn" "the lean path with an L2 never ran" AMEBA_SIM_LEAN=1 ||
			status=1
		expect_ran "not hit" "$fn" "AMEBA_SIM_LEAN=0 ran the lean path" \
			AMEBA_SIM_LEAN=0 || status=1
		same_both_ways AMEBA_SIM_LEAN lean || status=1
	done
done
exit $status
