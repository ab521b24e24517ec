#!/usr/bin/env bash
# End-to-end tests of the ASL front-end: `ameba run` on the imbalance
# workload with seed 004's property (properties/seed004_unbalanced_l1.asl,
# installed with the built-in properties), and a run with a broken .asl file
# next to good properties.
#
# usage: e2e.sh CASE AMEBA TEST_BIN SCHEMA REPORT_CHECK
# Each CASE prints what it checks and exits non-zero on the first failure.
set -u
case_name=$1 AMEBA=$2 BIN=$3 SCHEMA=$4 CHECK=$5
WL=$BIN/wl_imbalance
NATIVE=$BIN/wl_imbalance_native
T=$(mktemp -d "${TMPDIR:-/tmp}/ameba-asl-e2e-XXXXXX")
# No user plugins: the search path is the build's own.
export HOME=$T/home XDG_CONFIG_HOME=$T/config
mkdir -p "$HOME"
trap 'rm -rf "$T"' EXIT

fail() { echo "FAIL ($case_name): $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
has() { grep -qF -- "$2" "$1" || { echo "--- $1:" >&2; cat "$1" >&2; fail "$1 lacks: $2"; }; }
SEED=UnbalancedLC1DataMissRateInThreads
# seed 004's text as printed: an example, not loaded by default
VERBATIM=$(dirname "$(dirname "$SCHEMA")")/properties/examples/seed004_unbalanced_l1.asl

case $case_name in
seed004_imbalance)
	# Seed 004's property, corrected (over the concurrent users), is listed
	# and does not fire on the workers' cells: main initialised them (its
	# miss rate there is twice the workers'), which is no imbalance; the
	# imbalance in the amount of work is UnbalancedThreadMisses, rank 1.
	"$AMEBA" list properties > "$T/list.txt" 2> "$T/list.err" || fail "ameba list properties"
	grep -Eq "^$SEED +lua +object +ASL: pp.nrThreads >= 2 and max\(max-mean, mean-min\) > t" "$T/list.txt" ||
		{ cat "$T/list.txt" "$T/list.err"; fail "$SEED is not listed"; }
	[ ! -s "$T/list.err" ] || { cat "$T/list.err"; fail "ameba list printed warnings"; }
	has "$T/list.txt" "UnbalancedThreadMissRate"
	ok "seed 004's property (corrected) is listed next to the Lua UnbalancedThreadMissRate"
	(cd "$T" && "$AMEBA" run -o default.json -- "$WL" > out0.txt 2> err0.txt); st=$?
	[ "$st" = 0 ] || { cat "$T/err0.txt"; fail "ameba run: exit status $st"; }
	"$CHECK" "$SCHEMA" "$T/default.json" --no-finding "$SEED" --finding UnbalancedThreadMisses \
		--top '^alloc_cells@imbalance\.c:[0-9]+$' || { cat "$T/out0.txt"; fail "report check (default)"; }
	ok "the corrected $SEED does not blame main's initialisation of the cells"
	# The text as printed (the example file) fires on the workers' cells.
	(cd "$T" && "$AMEBA" run -o seed.json --property "$VERBATIM" -- "$WL" > out.txt 2> err.txt); st=$?
	[ "$st" = 0 ] || { cat "$T/err.txt"; fail "ameba run: exit status $st"; }
	"$CHECK" "$SCHEMA" "$T/seed.json" --finding "$SEED" --finding UnbalancedThreadMisses \
		--top '^alloc_cells@imbalance\.c:[0-9]+$' || fail "report check"
	grep -Eq "^ +[0-9]+ +[0-9.]+% +[0-9.]+ +$SEED +heap alloc_cells@imbalance\.c:[0-9]+ .*mean=0\.0[0-9]+, max=0\.1[0-9]*, min=0\.0[0-9]+, t=0\.02" \
		"$T/out.txt" || { cat "$T/out.txt"; fail "no $SEED finding on alloc_cells@imbalance.c with its figures"; }
	"$NATIVE" > "$T/native.txt" || fail "native run"
	head -n "$(wc -l < "$T/native.txt")" "$T/out.txt" | cmp -s - "$T/native.txt" ||
		fail "the target's output changed under ameba run"
	# the threshold from the command line: the cells' rates are not 50
	# points apart (tiny objects touched by one thread may still be: their
	# other threads have a miss rate of 0; their severity is ~0, so the
	# table shows every finding: --min-severity 0)
	(cd "$T" && "$AMEBA" run -o t.json --min-severity 0 --property "$VERBATIM" --property "$SEED:t=0.5" -- "$WL" \
		> out2.txt 2> err2.txt); st=$?
	[ "$st" = 0 ] || { cat "$T/err2.txt"; fail "ameba run --property $SEED:t=0.5: exit status $st"; }
	"$CHECK" "$SCHEMA" "$T/t.json" > /dev/null || fail "report check (t=0.5)"
	has "$T/out2.txt" "rank severity conf property"
	! grep -Eq "$SEED +heap alloc_cells" "$T/out2.txt" ||
		{ cat "$T/out2.txt"; fail "$SEED fired on the cells with t=0.5"; }
	grep -Eq '"t":[[:space:]]*"0\.5"' "$T/t.json" || fail "t=0.5 is not in the report's parameters"
	ok "$SEED fires on alloc_cells@imbalance.c; with t=0.5 it does not"
	;;
broken_asl)
	# A broken .asl file in a plugin directory is reported with its line and
	# column; a good Lua property next to it, a good ASL file given with
	# --property, and the built-in ones still fire.
	P=$T/plugins; mkdir -p "$P"
	cat > "$P/broken.asl" <<'EOF'
property Broken(ParPerf pp, float t) {
  let
    rate = pp.l1d_miss / pp.mem_ref
  in
    condition: rate > t;
    severity: rate;
}
EOF
	# big.asl is given as --property big.asl (a relative name, no '/')
	cat > "$T/big.asl" <<'EOF'
// default: share=0.5
property BigObject(ParPerf pp, float share) {
  let
    refs = pp.mem_ref / pp.program.mem_ref;
  in
    condition: refs > share;
    severity: refs;
    advice: "this object takes {refs * 100}% of the accesses of {pp.nrThreads} threads";
}
EOF
	cat > "$P/busy.lua" <<'EOF'
return {
  name = "BusyObject",
  needs = { "mem_ref" },
  condition = function(ctx, p) return ctx.share("mem_ref") > 0.5 end,
  severity = function(ctx, p) return ctx.share("mem_ref") end,
}
EOF
	(cd "$T" && "$AMEBA" run -o broken.json --plugin-path "$P" --property big.asl -- "$WL" \
		> out.txt 2> err.txt); st=$?
	[ "$st" = 0 ] || { cat "$T/err.txt"; fail "ameba run: exit status $st"; }
	has "$T/err.txt" "ameba: $P/broken.asl:4:3: expected ';' after the definition of rate, got 'in'; property file not loaded, the others continue"
	"$CHECK" "$SCHEMA" "$T/broken.json" --finding BigObject --finding BusyObject \
		--finding UnbalancedThreadMisses --no-finding Broken || fail "report check"
	grep -q "broken.asl:4:3: expected ';'" "$T/broken.json" ||
		fail "the error is not in the report's warnings"
	grep -Eq "this object takes (99\.[0-9]+|100(\.0+)?)% of the accesses of 5 threads" "$T/out.txt" ||
		{ cat "$T/out.txt"; fail "BigObject's advice is not in the table"; }
	"$AMEBA" list properties --plugin-path "$P" --property "$T/big.asl" > "$T/list.txt" \
		2> "$T/list.err"
	has "$T/list.err" "$P/broken.asl:4:3: expected ';' after the definition of rate, got 'in'"
	has "$T/list.txt" "BigObject"
	has "$T/list.txt" "BusyObject"
	ok "broken.asl reported at 4:3; BigObject (ASL), BusyObject (Lua) and the built-ins fired"
	;;
*)
	fail "unknown case"
	;;
esac
exit 0
