#!/usr/bin/env bash
# compare_reports.sh - did a change alter what ameba reports? Runs `ameba run`
# (sim backend, the tests' design geometry) on the single-threaded
# ground-truth workloads with two builds, RUNS times each, and prints per
# workload the top findings (rank, property, object) of every run and the
# spread of their severities, then whether the two builds agree.
#
# usage: scripts/compare_reports.sh BEFORE_BUILD AFTER_BUILD [WORKLOAD...]
#   BUILD      a build directory holding bin/ameba and tests/bin/wl_*
#   RUNS=N     runs per build and workload (default 2)
#   TOP=N      findings compared per run (default 3)
#
# A search measures in intervals of wall-clock time, so two runs of one
# build may differ in their values; the builds agree on a workload when
# every run of both names the same findings in the same order and the
# severities of one build lie within the other's spread widened by SLACK
# (default 0.02, absolute). Exit 1 if any workload disagrees.
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
case ${1:-} in -h | --help) usage; exit 0 ;; esac
set -u
[ $# -ge 2 ] || { usage; exit 2; }
A=$(cd "$1" && pwd) B=$(cd "$2" && pwd)
shift 2
RUNS=${RUNS:-2} TOP=${TOP:-3} SLACK=${SLACK:-0.02}
SRC=$(cd "$(dirname "$0")/.." && pwd)
WLS=("$@")
[ ${#WLS[@]} -gt 0 ] || WLS=(conflict tlb_transpose hot_arrays stencil_grids hash_table
	phased_solver loop_order mmap_input wrapper_alloc)
command -v jq > /dev/null || { echo "compare_reports.sh: needs jq" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/ameba-cmp-XXXXXX")
trap 'rm -rf "$T"' EXIT
export HOME=$T/home XDG_CONFIG_HOME=$T/config AMEBA_PRESET=$SRC/tests/workloads/design.conf
mkdir -p "$HOME"

# run BUILD TAG WL K: $T/TAG-WL-K.json; prints the run's top findings
run() {
	(cd "$T" && AMEBA_BACKEND=sim "$1/bin/ameba" run --backend sim -q -o "$2-$3-$4.json" \
		-- "$1/tests/bin/wl_$3" > /dev/null 2> "$2-$3-$4.err") ||
		{ echo "ameba run ($2, $3) failed:" >&2; tail -3 "$T/$2-$3-$4.err" >&2; return 1; }
	jq -r --argjson n "$TOP" '[.findings[:$n][] |
		"\(.rank):\(.property)@\(.context.object.name // .context.region // "program")"] |
		join(" ")' "$T/$2-$3-$4.json"
}

sev() { jq -r --argjson n "$TOP" '[.findings[:$n][] | .severity] | map(tostring) | join(" ")' "$1"; }

bad=0
for wl in "${WLS[@]}"; do
	[ -x "$A/tests/bin/wl_$wl" ] && [ -x "$B/tests/bin/wl_$wl" ] ||
		{ echo "$wl: no wl_$wl in both builds; skipped"; continue; }
	declare -A tops=()
	for k in $(seq "$RUNS"); do
		ta=$(run "$A" a "$wl" "$k") || { bad=1; continue 2; }
		tb=$(run "$B" b "$wl" "$k") || { bad=1; continue 2; }
		tops["$ta"]=1
		tops["$tb"]=1
	done
	# severities of finding i: min..max per build
	agree=1
	[ ${#tops[@]} = 1 ] || agree=0
	spread=""
	for i in $(seq 0 $((TOP - 1))); do
		range() {
			for f in "$T"/"$1"-"$wl"-*.json; do
				jq -r --argjson i "$i" '.findings[$i].severity // empty' "$f"
			done | sort -g | sed -n '1p;$p' | paste -sd' '
		}
		ra=$(range a) rb=$(range b)
		[ -n "$ra" ] || continue
		read -r alo ahi <<< "$ra"
		read -r blo bhi <<< "${rb:-0 0}"
		ahi=${ahi:-$alo} bhi=${bhi:-$blo}
		ok=$(awk -v a="$alo" -v A="$ahi" -v b="$blo" -v B="$bhi" -v s="$SLACK" \
			'BEGIN { print (b >= a - s && B <= A + s && a >= b - s && A <= B + s) ? 1 : 0 }')
		[ "$ok" = 1 ] || agree=0
		spread+=" #$((i + 1)) $alo-$ahi | $blo-$bhi;"
	done
	if [ $agree = 1 ]; then
		echo "$wl: same: ${!tops[*]}; severities before | after:$spread"
	else
		bad=1
		echo "$wl: DIFFERENT: findings seen: $(printf '[%s] ' "${!tops[@]}"); severities before | after:$spread"
	fi
	unset tops
done
exit $bad
