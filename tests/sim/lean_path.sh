#!/usr/bin/env bash
# lean_path.sh BIN[:ARG]...: the sim backend's lean miss path
# (monitor/sim/sim_lean.h sim_lean_body: inline in the sim backend's miss
# half and in mon_sim_access_lean) against the general one
# (AMEBA_SIM_LEAN=0): every BIN (run with ARG, if given)
# writes the same oracle counts both ways - every metric of every object and
# thread - under the bench geometry (bench/sim_validate/cachegrind.conf: no
# L2, 3C off, the geometry the lean path serves) with the TLB model on and
# off (AMEBA_SIM_TLB=0), and the lean path is the one that ran (gdb stops in
# one of its inline copies by default, never with AMEBA_SIM_LEAN=0), and the
# same with the L1 victim chosen by SSE2 alone (AMEBA_SIM_SSE41=0). Under
# skylake-sp (two nodes) it never runs; with an L2 or 3C: lean_l2_3c.sh. ASLR off (setarch -R) and environments of one size, so that
# both runs see the same addresses. A BIN with a second thread (ordered
# mode) has the merger's lean path (mon_sim_access_lean_coh) run as well
# with the TLB model off, not with AMEBA_SIM_LEAN=0, and the same counts
# both ways; at least one BIN must be such a program.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=oracle_lib.sh
. "$here/oracle_lib.sh"
bench_setup

status=0 merger=0
for spec in "$@"; do
	parse_spec "$spec"
	# (the merger's lean path serves the filter's geometry: no TLB model)
	if [ "$(export AMEBA_ORACLE="$out/probe.json" AMEBA_SIM_TLB=0
		ran mon_sim_access_lean_coh "$bin" "${arg[@]}")" = hit ]; then
		merger=1
		echo "lean_path: $name: the merger's lean path ran"
		expect_ran "not hit" mon_sim_access_lean_coh "AMEBA_SIM_LEAN=0 ran the merger's lean path" \
			AMEBA_SIM_TLB=0 AMEBA_SIM_LEAN=0 || status=1
	fi
	expect_ran hit sim_lean_body "the lean path never ran" AMEBA_SIM_LEAN=1 || status=1
	expect_ran "not hit" sim_lean_body "AMEBA_SIM_LEAN=0 ran the lean path" \
		AMEBA_SIM_LEAN=0 || status=1
	expect_ran "not hit" sim_lean_body "the lean path ran with two nodes" \
		AMEBA_PRESET=skylake-sp || status=1
	same_both_ways AMEBA_SIM_LEAN lean || status=1
	# the victim by pminsd (where the host has SSE4.1) or SSE2 alone
	same_both_ways AMEBA_SIM_SSE41 "the SSE4.1 victim" || status=1
	# the TLB model off: no tlb_miss counted, every other count the same
	# as with it on but the cycles (the runs above)
	python3 - "$out/1.json" <<'PY' || { echo "lean_path: $name: tlb_miss counted with the TLB off" >&2; status=1; }
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(1 if any(o["total"].get("tlb_miss", 0) for o in d["objects"]) else 0)
PY
done
[ $merger = 1 ] || { echo "lean_path: no program ran the merger's lean path" >&2; status=1; }
exit $status
