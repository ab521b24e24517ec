#!/usr/bin/env bash
# check_workload.sh - `ameba run` (default strategy, sim backend) on a
# ground-truth workload ranks the designed property first on the designed
# object (and threads); on the fixed twin that property is not reported on
# that object.
#
# usage: check_workload.sh AMEBA TEST_BIN WORKLOAD PROPERTY OBJECT_REGEX
#                          [--threads LIST] [--no-twin] [--env K=V]...
#   OBJECT_REGEX  extended regex for the top finding's context.object.name
#   --threads L   the top finding's threads lie within L (a JSON array, "[1,2,3,4]")
#                 and number at least min(2, |L|)
#   --no-twin     the workload has no fixed twin (stress programs)
#   --twin-not-top  the twin may still report PROPERTY on the object (a hot
#                 object stays hot, only less), but not at rank 1
#   --twin-same   the twin is a control with the same totals: it ranks the
#                 same property first on the same object
#   --twin-miss-rate F  the fix makes the object cheaper without making it any
#                 less the hottest (phased_solver): the twin may rank PROP on
#                 the object first, but the object's L1D misses per access
#                 (.objects[].totals, l1d_miss / mem_ref, a ratio that does not
#                 depend on how much of the run was measured) are at most F
#                 times the workload's
#   --absent      no designed finding: the workload itself must not report
#                 PROPERTY on the object at any rank (accum_calloc at -O2, whose
#                 accumulators live in registers); the twin is checked as usual
#   --env K=V     environment of the target (e.g. AMEBA_NODES=2)
#   --strategy S  ameba run --strategy S (default: the default strategy)
#   --scale N     run the workload and its twin with the argument SCALE=N
#   --attempts N  sharing and partly measured workloads: the simulator sees coherence misses only
#                 where the OS runs the threads at the same time, which a
#                 loaded 2-vCPU machine may not do for a whole run; try the
#                 workload up to N times (default 1), saying so, before failing;
#                 likewise where threads that start late inside the measured
#                 window look unbalanced (numa_first_touch), or workers without
#                 barriers run apart (imbalance's fixed twin)
set -u
AMEBA=$1 BIN=$2 WL=$3 PROP=$4 OBJ=$5
shift 5
threads="" twin=1 absent=0 twin_mode=absent rate_factor=1 envs=() strat=() wl_args=() attempts=1
while [ $# -gt 0 ]; do
	case $1 in
	--threads) threads=$2; shift 2 ;;
	--no-twin) twin=0; shift ;;
	--absent) absent=1; shift ;;
	--twin-not-top) twin_mode=not_top; shift ;;
	--twin-same) twin_mode=same; shift ;;
	--twin-miss-rate) twin_mode=miss_rate; rate_factor=$2; shift 2 ;;
	--env) envs+=("$2"); shift 2 ;;
	--strategy) strat=(--strategy "$2"); shift 2 ;;
	--scale) wl_args=("$2"); shift 2 ;;
	--attempts) attempts=$2; shift 2 ;;
	*) echo "check_workload.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
command -v jq > /dev/null || { echo "check_workload.sh: needs jq" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/ameba-props-XXXXXX")
trap 'rm -rf "$T"' EXIT
export HOME=$T/home XDG_CONFIG_HOME=$T/config
mkdir -p "$HOME"
fail() { echo "FAIL ($WL): $*" >&2; exit 1; }

# run VARIANT: writes $T/VARIANT.json, prints the top findings
run() {
	(cd "$T" && env ${envs[@]+"${envs[@]}"} AMEBA_BACKEND=sim "$AMEBA" run --backend sim -q \
		${strat[@]+"${strat[@]}"} -o "$1.json" -- "$BIN/wl_$1" \
		${wl_args[@]+"${wl_args[@]}"} > "$1.out" 2> "$1.err")
	st=$?
	[ $st = 0 ] || { cat "$T/$1.err" >&2; fail "ameba run $1: exit status $st"; }
	echo "--- $1: top findings"
	jq -r '.findings[:4][] | "  \(.rank) \(.property) \(.severity) \(.context.object.name // "-") " +
	       "threads \(.context.threads | map(tostring) | join(",")) | \(.evidence)"' "$T/$1.json"
}

# check_main: the designed finding is rank 1 (with --absent: there is no
# finding of PROP on OBJ at all); prints why not and returns 1
check_main() {
	run "$WL"
	if [ $absent = 1 ]; then
		n=$(jq --arg p "$PROP" --arg o "$OBJ" '[.findings[] | select(.property == $p and
			((.context.object.name // "") | test($o)))] | length' "$T/$WL.json")
		[ "$n" = 0 ] || { why="$WL reports $PROP on /$OBJ/ ($n findings)"; return 1; }
		return 0
	fi
	top_prop=$(jq -r '.findings[0].property // ""' "$T/$WL.json")
	top_obj=$(jq -r '.findings[0].context.object.name // ""' "$T/$WL.json")
	if [ -z "$top_prop" ]; then
		# no finding at all: say what the run measured, so that a failure
		# on a loaded machine can be told from a wrong rule
		echo "  (no finding: $(jq -c '{reason, iterations, measured_s, partial,
			verdict: .summary.verdict, coverage: .coverage.coverage, warnings}' "$T/$WL.json"))"
		tail -5 "$T/$WL.err" | sed 's/^/  stderr: /'
	fi
	[ "$top_prop" = "$PROP" ] || { why="rank 1 is $top_prop, want $PROP"; return 1; }
	echo "$top_obj" | grep -Eq -- "$OBJ" || { why="rank 1 is on '$top_obj', want /$OBJ/"; return 1; }
	if [ -n "$threads" ]; then
		got=$(jq -c '.findings[0].context.threads' "$T/$WL.json")
		jq -e --argjson want "$threads" '.findings[0].context.threads as $t |
			($t | length) >= ([2, ($want | length)] | min) and ($t - $want | length) == 0' \
			"$T/$WL.json" > /dev/null || { why="rank 1 threads $got, want within $threads"; return 1; }
	fi
	return 0
}
why=""
for attempt in $(seq "$attempts"); do
	check_main && break
	[ "$attempt" -lt "$attempts" ] || fail "$why"
	echo "attempt $attempt of $attempts: $why (on a loaded machine the threads may not overlap, or only part of the run is measured); again"
done
if [ $absent = 1 ]; then
	echo "ok: $WL does not report $PROP on /$OBJ/"
else
	echo "  advice: $(jq -r '.findings[0].advice' "$T/$WL.json")"
	echo "ok: $WL ranks $PROP first on $top_obj"
fi

[ $twin = 1 ] || exit 0
# the twin: retried like the workload (--attempts), since what fails it on a
# loaded machine is the same (threads that did not overlap, or a measured
# window that holds part of the run: imbalance's fixed twin)
check_twin() {
	run "${WL}_fixed"
	top_prop=$(jq -r '.findings[0].property // ""' "$T/${WL}_fixed.json")
	top_obj=$(jq -r '.findings[0].context.object.name // ""' "$T/${WL}_fixed.json")
	top_is_it=0
	[ "$top_prop" = "$PROP" ] && echo "$top_obj" | grep -Eq -- "$OBJ" && top_is_it=1
	case $twin_mode in
	absent)
		n=$(jq --arg p "$PROP" --arg o "$OBJ" '[.findings[] | select(.property == $p and
			((.context.object.name // "") | test($o)))] | length' "$T/${WL}_fixed.json")
		[ "$n" = 0 ] || { why="the fixed twin still reports $PROP on /$OBJ/ ($n findings)"; return 1; }
		echo "ok: ${WL}_fixed does not report $PROP on /$OBJ/" ;;
	not_top)
		[ $top_is_it = 0 ] || { why="the fixed twin still ranks $PROP on $top_obj first"; return 1; }
		echo "ok: ${WL}_fixed ranks $top_prop on $top_obj first, not $PROP on /$OBJ/" ;;
	same)
		[ $top_is_it = 1 ] || { why="the control twin ranks $top_prop on $top_obj first"; return 1; }
		echo "ok: the control ${WL}_fixed ranks $PROP on $top_obj first too" ;;
	miss_rate)
		# l1d_miss / mem_ref of the objects matching OBJ, summed ("" if none)
		rate() {
			jq -r --arg o "$OBJ" '[.objects[] | select(.name | test($o)) | .totals] |
				if length == 0 or (map(.mem_ref) | add) == 0 then ""
				else (map(.l1d_miss) | add) / (map(.mem_ref) | add) end' "$1"
		}
		r_wl=$(rate "$T/$WL.json") r_fix=$(rate "$T/${WL}_fixed.json")
		[ -n "$r_wl" ] || { why="no object /$OBJ/ with accesses in $WL's report"; return 1; }
		[ -n "$r_fix" ] || { why="no object /$OBJ/ with accesses in ${WL}_fixed's report"; return 1; }
		echo "  L1D misses per access on /$OBJ/: $WL $r_wl, ${WL}_fixed $r_fix"
		awk -v a="$r_fix" -v b="$r_wl" -v f="$rate_factor" 'BEGIN { exit !(a <= f * b) }' ||
			{ why="the fixed twin's misses per access ($r_fix) are not at most $rate_factor x $r_wl"; return 1; }
		echo "ok: ${WL}_fixed misses on /$OBJ/ at most $rate_factor x as often per access" ;;
	esac
	return 0
}
for attempt in $(seq "$attempts"); do
	check_twin && break
	[ "$attempt" -lt "$attempts" ] || fail "$why"
	echo "attempt $attempt of $attempts (twin): $why; again"
done
