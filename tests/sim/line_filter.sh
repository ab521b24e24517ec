#!/usr/bin/env bash
# line_filter.sh KEEP REST MERGED BIN[:ARG]...: the sim backend's line filter
# (monitor/sim/sim.h, backend_sim.h mon_sim_lf_access: an L1 hit taken in
# the hook) and the solo thread's mode (backend_sim_lf.c: filter, single or
# batch, chosen by time) against the simulator taking every access
# (AMEBA_SIM_FILTER=0): every BIN (run with ARG, if given) writes the same
# oracle counts both ways - every metric of every object and thread - and
# the same output, under the bench geometry (bench/sim_validate/
# cachegrind.conf, the lean path's: the filter needs it) with the TLB model
# on and off (it runs only with it off), through the assembly line entry
# and the C one (AMEBA_SIM_ASM=0), in each mode pinned (AMEBA_SIM_MODE)
# and chosen with windows of 16 lean misses (a switch every few dozen).
# And each mode is what ran: where the owner looks (mon_sim_lf_look, every
# window) KEEP (a program of hits), the filter pinned, has taken hits
# through it (at least 3 per 4 entries written) and single finds it off;
# the batch runs pinned, the assembly miss fills lines, takes L1 hits and
# writes a dirty victim back, M in the LLC (x86-64, not with
# AMEBA_SIM_ASM=0), and every path writes as many dirty victims back (the
# LLC's M state, which no count shows); REST (mostly misses), chosen,
# probes every mode and takes the cheapest challenger that beat the
# incumbent on both sides of it, else the incumbent; AMEBA_SIM_FILTER=0 and two
# nodes (skylake-sp: no lean path) never look. ASLR off (setarch -R) and environments of one
# size, so that both runs see the same addresses. MERGED (two threads in
# time order, a program of hits): the merger's filter
# (sim_core.h sim_mf_hit_run) takes at least half of its directly merged
# accesses with the TLB model off, none with it on or AMEBA_SIM_FILTER=0
# (ordered mode's statistics, AMEBA_SIM_VERBOSE=1); on x86-64 through the
# assembly (a write's E -> M too, and a write to a tracked line), never with
# AMEBA_SIM_ASM=0.
#
# usage: line_filter.sh KEEP REST MERGED BIN[:ARG]...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=oracle_lib.sh
. "$here/oracle_lib.sh"
bench_setup

# trace NAME FUNC FORMAT ARGS VAR=VALUE...: a line per stop of gdb in FUNC
# while $bin runs (TLB model off), ARGS printed by FORMAT, in $out/NAME
trace() {
	local name=$1 func=$2 fmt=$3 args=$4
	shift 4
	printf '%s\n' 'set breakpoint pending on' 'set pagination off' "break $func" \
		'commands 1' silent "printf \"$name $fmt\\n\", $args" continue end run \
		>"$out/$name.gdb"
	(export AMEBA_SIM_TLB=0 "$@" AMEBA_ORACLE="$out/probe.json"
	 gdb -q -batch -x "$out/$name.gdb" --args "$bin" "${arg[@]}" 2>&1) |
		awk -v n="$name" '$1 == n { sub(/^[^ ]+ /, ""); print }' >"$out/$name"
}
# looks VAR=VALUE...: "on hits notes" per look of the filter, in $out/looks
# (on 1 or 0: the filter's on is MON_SIM_LF_ON or MON_SIM_LF_ON_ASM when on);
# the hits are the L1 clock's steps since the last look less the entries
# written (every access the L1 takes steps it once; without an entry
# written since the entries were cleared, nothing can hit: 0)
looks() {
	trace looks mon_sim_lf_look "%d %lu %lu" \
		"c->lf.on != 0, c->lf.notes ? c->l1.clock - c->lf.clock0 - c->lf.notes : 0, c->lf.notes" "$@"
}
# chosen VAR=VALUE...: per choice "mode n incumbent challenger1 challenger2
# cost0 .. cost4" (the probe's modes, the cheapest window of each step -
# incumbent, challenger 1, incumbent, challenger 2, incumbent -
# 18446744073709551615 for a step not run), in $out/chosen
chosen() {
	trace chosen mode_chosen "%d %d %d %d %d %lu %lu %lu %lu %lu" \
		"m, st.n, st.order[0], st.order[1], st.order[2], st.cost[0], st.cost[1], \
st.cost[2], st.cost[3], st.cost[4]" "$@"
}

status=0
keep=$1 rest=$2 merged=$3
shift 3
for spec in "$@"; do
	parse_spec "$spec"
	same_both_ways AMEBA_SIM_FILTER filter || status=1
	export AMEBA_SIM_ASM=0
	same_both_ways AMEBA_SIM_FILTER "filter, the C line entry" || status=1
	unset AMEBA_SIM_ASM
	export AMEBA_SIM_MODE_WINDOW=16
	for mode in filter single batch auto; do
		export AMEBA_SIM_MODE=$mode
		same_both_ways AMEBA_SIM_FILTER "mode $mode, windows of 16" || status=1
	done
	unset AMEBA_SIM_MODE AMEBA_SIM_MODE_WINDOW
done

parse_spec "$keep"
looks AMEBA_SIM_MODE=filter
# nine looks in ten find it on, with hits: at least 3 per 4 entries
# written (the first window's comes before its first look)
awk 'BEGIN { n = 0; good = 0 } { n++; if ($1 == 1 && $2 > 0 && 4 * $2 >= 3 * $3) good++ }
     END { exit !(n >= 10 && 10 * good >= 9 * n) }' "$out/looks" ||
	{ echo "line_filter: $name: the filter did not serve hits: $(head -3 "$out/looks" | tr '\n' ' ')" >&2; status=1; }
looks AMEBA_SIM_MODE=single
# after the first look, off: no hits, no entries
awk 'BEGIN { n = 0; bad = 0 } NR > 1 { n++; if ($1 != 0 || $2 != 0 || $3 != 0) bad++ }
     END { exit !(n >= 10 && bad == 0) }' "$out/looks" ||
	{ echo "line_filter: $name: single mode used the filter: $(sed -n 2,4p "$out/looks" | tr '\n' ' ')" >&2; status=1; }
if [ "$(uname -m)" = x86_64 ]; then
	# the filter's miss in assembly (backend_sim_x86.c), its read's copy
	# and its write's, fills lines by default, never with the C line entry
	for rw in rd wr; do
		expect_ran hit sim_lf_miss_x86_${rw}_fill "the assembly miss ($rw) never filled a line" \
			AMEBA_SIM_TLB=0 AMEBA_SIM_MODE=filter || status=1
		expect_ran "not hit" sim_lf_miss_x86_${rw}_fill \
			"AMEBA_SIM_ASM=0 ran the assembly miss ($rw)" \
			AMEBA_SIM_TLB=0 AMEBA_SIM_MODE=filter AMEBA_SIM_ASM=0 || status=1
	done
	# and one of them takes an L1 hit the filter did not hold (its entry
	# another line's; in the stencil, only the write's copy meets one)
	expect_ran hit "sim_lf_miss_x86_rd_hit sim_lf_miss_x86_wr_hit" \
		"the assembly miss never took an L1 hit" AMEBA_SIM_TLB=0 AMEBA_SIM_MODE=filter ||
		status=1
	# and writes a dirty victim back into its LLC set, M (which no count
	# shows: the oracle cannot tell a writeback skipped): at the first,
	# the LLC's way (r11 the set, rax the way) holds the victim's line,
	# the L1's way of it (r10 the L1 set, the victim's way parked in
	# xmm15) still M
	# (never stopping, gdb fails on the registers: nothing printed)
	# shellcheck disable=SC2016,SC2030,SC2031  # gdb's $ variables; a subshell's exports
	wb=$(export AMEBA_SIM_TLB=0 AMEBA_SIM_MODE=filter AMEBA_ORACLE="$out/probe.json"
	     gdb -q -batch -ex 'set breakpoint pending on' -ex 'break sim_lf_miss_x86_rd_wb' \
		-ex 'break sim_lf_miss_x86_wr_wb' \
		-ex run -ex 'set $llc = *(unsigned int *)($r11 + 4 * $rax)' \
		-ex 'set $l1 = *(unsigned long *)($r10 + 8 * $xmm15.v2_int64[0])' \
		-ex 'printf "wb %lu %lu %lu\n", $llc & 3, $l1 & 3, ($llc >> 2) ^ ($l1 >> 14)' \
		--args "$bin" "${arg[@]}" 2>&1 | awk '$1 == "wb" { print $2, $3, $4 }' || true)
	[ "$wb" = "3 3 0" ] ||
		{ echo "line_filter: $name: the assembly miss's dirty victim: '$wb', want '3 3 0'" \
		       "(LLC state, L1 state, the lines' difference)" >&2; status=1; }
fi
# as many dirty victims offered to the LLC whatever path took them (the
# core's nr_llc_wb at exit, gdb in rt_exit: no count reads the LLC's M
# state): the filter's miss, in assembly and in C, the line entries, the
# batch, the general path
wbs() {
	trace wbs rt_exit "%lu" "((struct mon_sim_core *)mon_self->backend_data)->nr_llc_wb" "$@"
	cat "$out/wbs"
}
wb0=$(wbs AMEBA_SIM_MODE=filter) wbsame=1
for v in "AMEBA_SIM_MODE=filter AMEBA_SIM_ASM=0" AMEBA_SIM_FILTER=0 AMEBA_SIM_MODE=single \
	AMEBA_SIM_MODE=batch AMEBA_SIM_LEAN=0; do
	# shellcheck disable=SC2086  # one or two variables
	wb=$(wbs $v)
	# shellcheck disable=SC2015  # the message when any test fails
	[ -n "$wb0" ] && [ "$wb0" -gt 0 ] && [ "$wb" = "$wb0" ] ||
		{ echo "line_filter: $name: ${wb:-?} dirty victims written back with $v," \
		       "${wb0:-?} in filter mode" >&2; status=1; wbsame=0; }
done
[ "$wbsame" = 0 ] ||
	echo "line_filter: $name: ${wb0:-?} dirty victims written back, the same on every path"
expect_ran hit mon_batch_flush "the batch never ran in batch mode" AMEBA_SIM_TLB=0 \
	AMEBA_SIM_MODE=batch || status=1
expect_ran "not hit" mon_batch_flush "the batch ran in filter mode" AMEBA_SIM_TLB=0 \
	AMEBA_SIM_MODE=filter || status=1
looks AMEBA_SIM_FILTER=0
[ ! -s "$out/looks" ] || { echo "line_filter: $name: AMEBA_SIM_FILTER=0 ran the filter" >&2; status=1; }
looks AMEBA_PRESET=skylake-sp
[ ! -s "$out/looks" ] || { echo "line_filter: $name: the filter ran with an L2" >&2; status=1; }

# merger TLB VAR=VALUE...: "plain taken" of the merger's statistics
merger() {
	local tlb=$1
	shift
	env AMEBA_SIM_TLB="$tlb" AMEBA_SIM_VERBOSE=1 AMEBA_ORACLE="$out/probe.json" "$@" \
		"$bin" "${arg[@]}" 2>&1 >/dev/null |
		sed -n 's/.* \([0-9]*\) plain accesses merged directly, \([0-9]*\) of them.*/\1 \2/p'
}
parse_spec "$merged"
read -r plain taken < <(merger 0) || true
echo "line_filter: $name: the merger's filter took ${taken:-?} of ${plain:-?} accesses"
[ -n "${plain:-}" ] && [ "$plain" -gt 100000 ] && [ $((2 * taken)) -ge "$plain" ] ||
	{ echo "line_filter: $name: the merger's filter took ${taken:-?} of ${plain:-?}" \
		"(want half)" >&2; status=1; }
for off in "1" "0 AMEBA_SIM_FILTER=0"; do
	# shellcheck disable=SC2086  # the TLB setting, then the variable
	read -r plain taken < <(merger $off) || true
	[ "${taken:-x}" = 0 ] ||
		{ echo "line_filter: $name: the merger's filter took ${taken:-?} with TLB=$off" >&2; status=1; }
done
if [ "$(uname -m)" = x86_64 ]; then
	# its hits in assembly (backend_sim_x86.c sim_mf_hits_x86), a write's
	# E -> M among them; the C loop with AMEBA_SIM_ASM=0
	expect_ran hit sim_mf_hits_x86_e2m "the merger's assembly hits never made E M" \
		AMEBA_SIM_TLB=0 || status=1
	# and writes to tracked lines whose words are published
	expect_ran hit sim_mf_hits_x86_tw "the merger's assembly hits never took a tracked write" \
		AMEBA_SIM_TLB=0 || status=1
	expect_ran "not hit" sim_mf_hits_x86 "AMEBA_SIM_ASM=0 ran the merger's assembly hits" \
		AMEBA_SIM_TLB=0 AMEBA_SIM_ASM=0 || status=1
fi

parse_spec "$rest"
chosen
# at least three choices, each the cheapest challenger that was cheaper
# than the incumbent's steps on both sides of it, else the incumbent;
# every mode probed (the batch too: the program's one thread owns it),
# every step measured
awk -v max=18446744073709551615 '
	{ n++; best = $3; bc = max
	  for (j = 1; j < $2; j++) {
		x = $(5 + 2 * j) + 0
		if (x < $(4 + 2 * j) + 0 && x < $(6 + 2 * j) + 0 && x < bc + 0) { best = $(3 + j); bc = x }
	  }
	  if ($1 != best) bad++
	  if ($2 != 3) bad++
	  for (i = 6; i <= 10; i++) if ($i == max) bad++ }
	END { exit !(n >= 3 && bad == 0) }' "$out/chosen" ||
	{ echo "line_filter: $name: a choice not the bracketed cheapest mode, or a mode" \
		"not probed: $(head -3 "$out/chosen" | tr '\n' ' ')" >&2; status=1; }
exit $status
