#!/usr/bin/env bash
# split_lines.sh BIN SPEC: the line filter's split entries (backend_sim_lf.c
# mon_sim_lf_split_hit) - BIN (split_lines.c) under the bench geometry, the
# filter pinned on, counts each block's accesses as SPEC says (oracle_expect,
# ORACLE_EXPECT), and the split entries took most of them: at a few
# thousand rounds, gdb counts the calls of mon_sim_lf_split_hit and of its
# miss (split_miss), and at least half of the calls must be hits. The same
# counts with the filter off, in every mode: line_filter.sh.
set -euo pipefail
bin=$1 spec=$2
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export AMEBA_BACKEND=sim AMEBA_PRESET="$here/../../bench/sim_validate/cachegrind.conf" \
	AMEBA_SIM_TLB=0 AMEBA_SIM_3C=0 AMEBA_SIM_MODE=filter
"$here/../monitor/oracle_check.sh" "$bin" "$spec"
read -r calls misses < <(AMEBA_ORACLE="$out/probe.json" gdb -q -batch \
	-ex 'set breakpoint pending on' -ex 'break mon_sim_lf_split_hit' -ex 'break split_miss' \
	-ex 'ignore 1 100000000' -ex 'ignore 2 100000000' -ex run -ex 'info breakpoints' \
	--args "$bin" 3000 2>&1 | awk '/already hit/ { n[k++] = $4 } END { print n[0] + 0, n[1] + 0 }')
echo "split_lines: $calls calls of the split entries' hit, $misses of them missed"
if [ "$calls" -lt 3000 ] || [ $((2 * misses)) -gt "$calls" ]; then
	echo "split_lines: the split entries took $((calls - misses)) of $calls accesses" \
		"(want at least 3000 calls, half of them hits)" >&2
	exit 1
fi
