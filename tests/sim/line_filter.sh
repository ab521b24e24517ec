#!/usr/bin/env bash
# line_filter.sh KEEP REST BIN[:ARG]...: the sim backend's line filter
# (monitor/sim/sim.h, backend_sim.h mon_sim_lf_hit: an L1 hit taken in the
# hook) against the simulator taking every access (AMEBA_SIM_FILTER=0):
# every BIN (run with ARG, if given) writes the same oracle counts both
# ways - every metric of every object and thread - and the same output,
# under the bench geometry (bench/sim_validate/cachegrind.conf, the lean
# path's: the filter needs it) with the TLB model on and off (it runs only
# with it off), through the assembly line entry and the C one
# (AMEBA_SIM_ASM=0). And the filter is what ran: where the owner judges it
# (mon_sim_lf_look, every 4,096 lean misses) KEEP (a program of hits) has
# taken hits through it and never rests it; REST (mostly misses, or hits
# that are writes to E lines) rests it, and comes back; AMEBA_SIM_FILTER=0
# and an L2 (skylake-sp) never judge one. ASLR off (setarch -R) and
# environments of one size, so that both runs see the same addresses.
#
# usage: line_filter.sh KEEP REST BIN[:ARG]...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=oracle_lib.sh
. "$here/oracle_lib.sh"
bench_setup

# looks VAR=VALUE...: one line "on hits notes" per look of the filter while
# $bin runs (TLB model off), in $out/looks
looks() {
	cat >"$out/looks.gdb" <<'GDB'
set breakpoint pending on
set pagination off
break mon_sim_lf_look
commands 1
silent
printf "look %d %lu %lu\n", c->lf.on, c->lf.hits, c->lf.notes
continue
end
run
GDB
	(export AMEBA_SIM_TLB=0 "$@" AMEBA_ORACLE="$out/probe.json"
	 gdb -q -batch -x "$out/looks.gdb" --args "$bin" "${arg[@]}" 2>&1) |
		awk '$1 == "look" { print $2, $3, $4 }' >"$out/looks"
}

status=0
keep=$1 rest=$2
shift 2
for spec in "$@"; do
	parse_spec "$spec"
	same_both_ways AMEBA_SIM_FILTER filter || status=1
	export AMEBA_SIM_ASM=0
	same_both_ways AMEBA_SIM_FILTER "filter, the C line entry" || status=1
	unset AMEBA_SIM_ASM
done

parse_spec "$keep"
looks
# nine looks in ten find it on, with hits: at least 3 per 4 entries
# written (the policy; stencil's first window, 0 hits in 4,096 entries,
# rests it once)
awk 'BEGIN { n = 0; good = 0 } { n++; if ($1 == 1 && $2 > 0 && 4 * $2 >= 3 * $3) good++ }
     END { exit !(n >= 10 && 10 * good >= 9 * n) }' "$out/looks" ||
	{ echo "line_filter: $name: the filter did not serve hits, or rested: $(head -3 "$out/looks" | tr '\n' ' ')" >&2; status=1; }
looks AMEBA_SIM_FILTER=0
[ ! -s "$out/looks" ] || { echo "line_filter: $name: AMEBA_SIM_FILTER=0 ran the filter" >&2; status=1; }
looks AMEBA_PRESET=skylake-sp
[ ! -s "$out/looks" ] || { echo "line_filter: $name: the filter ran with an L2" >&2; status=1; }

parse_spec "$rest"
looks
# rests (a look finds it off) and comes back (a later look finds it on)
awk '{ if ($1 == 0) off = 1; else if (off) back = 1 } END { exit !(off && back) }' "$out/looks" ||
	{ echo "line_filter: $name: the filter did not rest and come back" >&2; status=1; }
same_both_ways AMEBA_SIM_FILTER "filter, resting" || status=1
exit $status
