#!/usr/bin/env bash
# whatif.sh AMEBA TEST_BIN
set -u
AMEBA=$1 BIN=$2
T=$(mktemp -d "${TMPDIR:-/tmp}/ameba-whatif-XXXXXX")
trap 'rm -rf "$T"' EXIT
export HOME=$T/home XDG_CONFIG_HOME=$T/config
mkdir -p "$HOME"
fail() { echo "FAIL: $*" >&2; exit 1; }
runtime() { jq -r '.est_runtime_cycles' "$1"; }

# 1. the runtime side: pad:OBJECT gives the padded twin's run time (within
#    10%) and the same accesses; an unknown object changes nothing
AMEBA_BACKEND=sim AMEBA_ORACLE=$T/a.json "$BIN/wl_false_sharing" > "$T/a.out" || fail "run"
AMEBA_BACKEND=sim AMEBA_ORACLE=$T/b.json "$BIN/wl_false_sharing_fixed" > /dev/null || fail "twin"
site=$(jq -r '.objects[] | select(.name | test("^alloc_counters@")) | .name' "$T/a.json")
[ -n "$site" ] || fail "no alloc_counters object in the oracle"
AMEBA_BACKEND=sim AMEBA_ORACLE=$T/c.json AMEBA_WHATIF="pad:$site" "$BIN/wl_false_sharing" > "$T/c.out" ||
	fail "what-if run"
cmp -s "$T/a.out" "$T/c.out" || fail "the what-if run printed something else"
AMEBA_BACKEND=sim AMEBA_ORACLE=$T/d.json AMEBA_WHATIF="pad:no_such_object" "$BIN/wl_false_sharing" \
	> /dev/null || fail "what-if run (no such object)"
a=$(runtime "$T/a.json") b=$(runtime "$T/b.json") c=$(runtime "$T/c.json") d=$(runtime "$T/d.json")
echo "simulated run time: packed $a, padded twin $b, packed with pad:$site $c, pad:no_such_object $d"
awk -v c="$c" -v b="$b" 'BEGIN { exit !(c <= 1.10 * b && c >= 0.90 * b) }' ||
	fail "pad run time $c is not within 10% of the padded twin's $b"
awk -v a="$a" -v d="$d" 'BEGIN { exit !(d >= 0.9 * a && d <= 1.1 * a) }' ||
	fail "padding an unknown object changed the run time ($d vs $a)"
coh=$(jq -r '[.objects[] | select(.name | test("^alloc_counters@")) | .total.coh_miss // 0] | add' "$T/c.json")
refs_a=$(jq -r '[.objects[] | select(.name | test("^alloc_counters@")) | .total.mem_ref] | add' "$T/a.json")
refs_c=$(jq -r '[.objects[] | select(.name | test("^alloc_counters@")) | .total.mem_ref] | add' "$T/c.json")
echo "padded: coherence misses $coh, accesses $refs_c (as is: $refs_a)"
[ "$coh" = 0 ] || fail "the padded object still has $coh coherence misses"
[ "$refs_a" = "$refs_c" ] || fail "the what-if run counted other accesses ($refs_c vs $refs_a)"

# 2. ameba run: the FalseSharing finding carries predicted_speedup = a / c
(cd "$T" && "$AMEBA" run -q -o r.json -- "$BIN/wl_false_sharing" > /dev/null 2> r.err) ||
	{ cat "$T/r.err"; fail "ameba run"; }
jq -e '.findings[0].property == "FalseSharing"' "$T/r.json" > /dev/null || fail "rank 1 is not FalseSharing"
p=$(jq -r '.findings[0].predicted_speedup // empty' "$T/r.json")
[ -n "$p" ] || { jq '.findings[0].what_if' "$T/r.json"; fail "no predicted_speedup on the FalseSharing finding"; }
echo "predicted_speedup $p; simulated twin $a / $b"
awk -v p="$p" -v a="$a" -v b="$b" 'BEGIN { s = a / b; d = p - s; if (d < 0) d = -d; exit !(d <= 0.10 * s) }' ||
	fail "predicted $p is not within 10% of the simulated $a / $b"
jq -e '[.findings[] | select(.property != "FalseSharing" and .property != "WordFalseSharing") |
	select(has("predicted_speedup"))] | length == 0' "$T/r.json" > /dev/null ||
	fail "a finding without a simulated fix carries a prediction"

# 3. --what-if 0: no prediction; attach refuses it
(cd "$T" && "$AMEBA" run -q --what-if 0 -o r0.json -- "$BIN/wl_false_sharing" > /dev/null 2>&1) ||
	fail "ameba run --what-if 0"
jq -e '[.findings[] | select(has("predicted_speedup"))] | length == 0' "$T/r0.json" > /dev/null ||
	fail "--what-if 0 still predicts"
"$AMEBA" attach 1 --what-if 1 > /dev/null 2> "$T/e"; st=$?
[ $st = 2 ] && grep -q "only \`ameba run\` can start the program again" "$T/e" || fail "attach --what-if: $(cat "$T/e")"
echo "ok: what-if"
