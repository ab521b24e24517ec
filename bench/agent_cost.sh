#!/usr/bin/env bash
# What the agent costs: a default `ameba run` (strategy objects, 100 ms
# intervals, the built-in properties) on longer runs of ground-truth
# workloads. The agent measures its own CPU time (getrusage, user + system)
# and the target's wall time (fork to exit) and writes both into the report
# (agent_cpu_s, target.wall_s); this script prints them side by side.
#
# usage: agent_cost.sh AMEBA TEST_BIN [WORKLOAD SCALE]...
# Prints `name: value` lines; agent_cpu_share_pct is the contract figure
# (target: <= 1% of the target's run time).
set -eu
AMEBA=$1 BIN=$2
shift 2
[ $# -ge 2 ] || set -- false_sharing 10 imbalance 10
T=$(mktemp -d "${TMPDIR:-/tmp}/ameba-agent-cost-XXXXXX")
trap 'rm -rf "$T"' EXIT
num() { sed -n "s/^[[:space:]]*\"$1\":[[:space:]]*\([0-9.eE+-]*\),\{0,1\}$/\1/p" "$2" | head -1; }
worst=0
while [ $# -ge 2 ]; do
	wl=$1 scale=$2
	shift 2
	"$AMEBA" run -q -o "$T/$wl.json" -- "$BIN/wl_$wl" "$scale" > /dev/null
	cpu=$(num agent_cpu_s "$T/$wl.json")
	wall=$(num wall_s "$T/$wl.json")
	iters=$(num iterations "$T/$wl.json")
	share=$(awk -v c="$cpu" -v w="$wall" 'BEGIN { printf "%.3f", (w > 0 ? 100 * c / w : 0) }')
	per_iter=$(awk -v c="$cpu" -v n="$iters" 'BEGIN { printf "%.3f", (n > 0 ? 1000 * c / n : 0) }')
	echo "agent_cpu_s_${wl}: $cpu"
	echo "target_wall_s_${wl}: $wall"
	echo "iterations_${wl}: $iters"
	echo "agent_cpu_ms_per_iteration_${wl}: $per_iter"
	echo "agent_cpu_share_pct_${wl}: $share"
	worst=$(awk -v a="$worst" -v b="$share" 'BEGIN { print ((b > a) ? b : a) }')
done
echo "agent_cpu_share_pct: $worst"
