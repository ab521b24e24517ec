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
#   --env K=V     environment of the target (e.g. AMEBA_NODES=2)
#   --strategy S  ameba run --strategy S (default: the default strategy)
#   --scale N     run the workload and its twin with the argument SCALE=N
set -u
AMEBA=$1 BIN=$2 WL=$3 PROP=$4 OBJ=$5
shift 5
threads="" twin=1 twin_mode=absent envs=() strat=() wl_args=()
while [ $# -gt 0 ]; do
	case $1 in
	--threads) threads=$2; shift 2 ;;
	--no-twin) twin=0; shift ;;
	--twin-not-top) twin_mode=not_top; shift ;;
	--twin-same) twin_mode=same; shift ;;
	--env) envs+=("$2"); shift 2 ;;
	--strategy) strat=(--strategy "$2"); shift 2 ;;
	--scale) wl_args=("$2"); shift 2 ;;
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

run "$WL"
top_prop=$(jq -r '.findings[0].property // ""' "$T/$WL.json")
top_obj=$(jq -r '.findings[0].context.object.name // ""' "$T/$WL.json")
[ "$top_prop" = "$PROP" ] || fail "rank 1 is $top_prop, want $PROP"
echo "$top_obj" | grep -Eq -- "$OBJ" || fail "rank 1 is on '$top_obj', want /$OBJ/"
if [ -n "$threads" ]; then
	got=$(jq -c '.findings[0].context.threads' "$T/$WL.json")
	jq -e --argjson want "$threads" '.findings[0].context.threads as $t |
		($t | length) >= ([2, ($want | length)] | min) and ($t - $want | length) == 0' \
		"$T/$WL.json" > /dev/null || fail "rank 1 threads $got, want within $threads"
fi
echo "  advice: $(jq -r '.findings[0].advice' "$T/$WL.json")"
echo "ok: $WL ranks $PROP first on $top_obj"

[ $twin = 1 ] || exit 0
run "${WL}_fixed"
top_prop=$(jq -r '.findings[0].property // ""' "$T/${WL}_fixed.json")
top_obj=$(jq -r '.findings[0].context.object.name // ""' "$T/${WL}_fixed.json")
top_is_it=0
[ "$top_prop" = "$PROP" ] && echo "$top_obj" | grep -Eq -- "$OBJ" && top_is_it=1
case $twin_mode in
absent)
	n=$(jq --arg p "$PROP" --arg o "$OBJ" '[.findings[] | select(.property == $p and
		((.context.object.name // "") | test($o)))] | length' "$T/${WL}_fixed.json")
	[ "$n" = 0 ] || fail "the fixed twin still reports $PROP on /$OBJ/ ($n findings)"
	echo "ok: ${WL}_fixed does not report $PROP on /$OBJ/" ;;
not_top)
	[ $top_is_it = 0 ] || fail "the fixed twin still ranks $PROP on $top_obj first"
	echo "ok: ${WL}_fixed ranks $top_prop on $top_obj first, not $PROP on /$OBJ/" ;;
same)
	[ $top_is_it = 1 ] || fail "the control twin ranks $top_prop on $top_obj first"
	echo "ok: the control ${WL}_fixed ranks $PROP on $top_obj first too" ;;
esac
