#!/usr/bin/env bash
# html_report.sh AMEBA TEST_BIN SCHEMA REPORT_CHECK OUT_DIR
#
# The HTML report (issue 25) in a real browser: three workloads run under
# `ameba run --html` (false sharing; phases under the nway search, whose
# trace the page draws; many_blocks, whose heat strips are per block), each
# JSON report validated against the schema, each page loaded in headless
# Chromium: the script finished, no console message, no error, every view
# present, the views the workload has data for drawn, one screenshot of the
# page and one of each view (OUT_DIR/shots, the user guide's pictures). Then
# a report re-rendered by `ameba report --html`, an old report without
# `views` (each view says what is missing, nothing fails), a made-up report
# with data for every view (mock_views.json), and a report of 100,000
# objects and 2,000 threads: the page stays under 10 MB and renders.
# Skipped (exit 77) only when no Chromium is installed.
set -uo pipefail
AMEBA=$1 BIN=$2 SCHEMA=$3 CHECK=$4 OUT=$5
HERE=$(cd "$(dirname "$0")" && pwd)
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$CHROME" ]; then
  echo "SKIP: no Chromium (chromium, chromium-browser or google-chrome) on PATH;" \
       "bash scripts/install-deps.sh installs Debian's chromium"
  exit 77
fi
rm -rf "$OUT" && mkdir -p "$OUT/shots"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# chrome PAGE OUTPREFIX: dump the DOM after the page's script ran
chrome_dom() {
  timeout 120 "$CHROME" --headless=new --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$OUT/profile" --enable-logging=stderr --v=0 \
    --dump-dom "file://$1" > "$2.dom" 2> "$2.log"
}
# chrome_shot PAGE PNG WIDTH HEIGHT
chrome_shot() {
  timeout 120 "$CHROME" --headless=new --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$OUT/profile" --hide-scrollbars --window-size="$3,$4" \
    --screenshot="$2" "file://$1" > /dev/null 2>&1
  [ -s "$2" ] || bad "no screenshot $2"
}

# case NAME DRAWN-VIEWS AMEBA-RUN-ARGS...
run_case() {
  local name=$1 drawn=$2; shift 2
  local page="$OUT/$name.html" json="$OUT/$name.json"
  echo "== $name: ameba run $*"
  "$AMEBA" run -q --what-if 0 --html "$page" --output "$json" "$@" > "$OUT/$name.out" 2>&1 ||
    { bad "$name: ameba run failed"; tail -5 "$OUT/$name.out"; return; }
  "$CHECK" "$SCHEMA" "$json" || bad "$name: report does not validate"
  python3 - "$json" <<'PY' || bad "$name: report lacks views"
import json, sys
v = json.load(open(sys.argv[1])).get("views") or {}
need = ["interval_s", "series", "series_total", "heat"]
miss = [k for k in need if not v.get(k)]
print("views: %s; heat strips %d, samples %s" % (", ".join(sorted(v)), len(v.get("heat", [])),
      (v.get("samples") or {}).get("taken")))
sys.exit(1 if miss else 0)
PY
  chrome_dom "$page" "$OUT/$name"
  # shellcheck disable=SC2086
  python3 "$HERE/check_dom.py" "$OUT/$name.dom" "$OUT/$name.log" --drawn $drawn ||
    bad "$name: page checks"
  chrome_shot "$page" "$OUT/shots/$name.png" 1280 2600
  for v in $drawn; do
    chrome_shot "$page#only=$v" "$OUT/shots/$name-$v.png" 1100 700
  done
}

ALWAYS="view-summary view-findings view-timeline view-heat view-objects view-threads"
run_case false_sharing "$ALWAYS view-matrix view-lines" -- "$BIN/wl_false_sharing"
run_case phases "$ALWAYS view-trace" --strategy nway -- "$BIN/wl_phases"
# many_blocks walks its lists 8 times (SCALE 4): the heat strips are sampled
# in one interval of four, and with the default 2 walks a loaded host's
# sampled intervals could all fall on the edges' and cells' walks
run_case many_blocks "$ALWAYS view-matrix" -- "$BIN/wl_many_blocks" 4

# What the views say must be the workloads' truth, not just be drawn.
python3 - "$OUT" <<'PY' || bad "the views' figures"
import json, sys
out, fails = sys.argv[1], []
# false sharing: 4 workers, each owning its own words of the one line
v = json.load(open(out + "/false_sharing.json"))["views"]
line = [l for l in v.get("lines", []) if l["name"].startswith("alloc_counters@")][0]["lines"][0]
owners = {}
for w in line["words"]:
    top = max(w["threads"], key=lambda t: t[1])
    if top[1] < 0.9 * sum(t[1] for t in w["threads"]):
        fails.append("false_sharing: word +%d has no dominant thread: %s" % (w["offset"], w["threads"]))
    owners.setdefault(top[0], set()).add(w["offset"])
if sorted(owners) != [1, 2, 3, 4]:
    fails.append("false_sharing: the line's words belong to threads %s, want 1-4" % sorted(owners))
# phases: ux, uy and the pressure array take turns: their shares swing
# from interval to interval (overall 45/35/20%; one phase is one array)
v = json.load(open(out + "/phases.json"))["views"]
tot = v["series_total"]["l1d_miss"]
swings = []
for s_ in v["series"]:
    sh = [x / t for x, t in zip(s_["values"]["l1d_miss"], tot) if x is not None and t]
    if len(sh) >= 3:
        swings.append(max(sh) - min(sh))
if sum(1 for w in swings if w >= 0.25) < 2:
    fails.append("phases: the arrays' shares hardly change over time (swings %s)" % swings)
if not v.get("trace") or len(v["trace"]["intervals"]) < 3:
    fails.append("phases: the nway trace has fewer than 3 intervals")
# many_blocks: the particle blocks' strip is per block
v = json.load(open(out + "/many_blocks.json"))["views"]
if not any(h["per_block"] and h["name"].startswith("new_particle@") for h in v["heat"]):
    fails.append("many_blocks: no per-block heat strip for new_particle")
for f in fails:
    print("FAIL:", f)
print("views' figures: %s" % ("ok" if not fails else "%d wrong" % len(fails)))
sys.exit(1 if fails else 0)
PY

echo "== ameba report --html (a saved report, and one without views)"
"$AMEBA" report "$OUT/false_sharing.json" --html "$OUT/rerender.html" > /dev/null ||
  bad "ameba report --html failed"
chrome_dom "$OUT/rerender.html" "$OUT/rerender"
python3 "$HERE/check_dom.py" "$OUT/rerender.dom" "$OUT/rerender.log" \
  --drawn view-findings view-lines view-matrix || bad "re-rendered page checks"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); r.pop('views'); json.dump(r, open(sys.argv[2],'w'))" \
  "$OUT/false_sharing.json" "$OUT/old.json"
"$AMEBA" report "$OUT/old.json" --html "$OUT/old.html" > /dev/null || bad "old report: no page"
chrome_dom "$OUT/old.html" "$OUT/old"
python3 "$HERE/check_dom.py" "$OUT/old.dom" "$OUT/old.log" --drawn view-findings view-objects ||
  bad "old report's page checks"
grep -q 'id="view-heat"[^>]*data-view-state="empty"' "$OUT/old.dom" ||
  bad "old report: the heat view does not say it has no data"

echo "== every view at once (tests/html/mock_views.json: heat with fields, trace, lines)"
"$AMEBA" report "$HERE/mock_views.json" --html "$OUT/mock.html" > /dev/null || bad "mock: no page"
chrome_dom "$OUT/mock.html" "$OUT/mock"
python3 "$HERE/check_dom.py" "$OUT/mock.dom" "$OUT/mock.log" --drawn view-summary view-findings \
  view-timeline view-heat view-matrix view-lines view-trace view-objects view-threads ||
  bad "mock report's page checks"

echo "== 100,000 objects, 2,000 threads"
python3 "$HERE/big_report.py" "$OUT/false_sharing.json" "$OUT/big.json" 100000 2000
"$AMEBA" report "$OUT/big.json" --html "$OUT/big.html" > /dev/null || bad "big report: no page"
size=$(stat -c %s "$OUT/big.html")
echo "big.html: $size bytes (json $(stat -c %s "$OUT/big.json"))"
[ "$size" -lt 10000000 ] || bad "big.html is $size bytes, over 10 MB"
chrome_dom "$OUT/big.html" "$OUT/big"
python3 "$HERE/check_dom.py" "$OUT/big.dom" "$OUT/big.log" --drawn view-objects view-threads ||
  bad "big report's page checks"
grep -q 'html_pruned' "$OUT/big.html" || bad "big report: the page does not say what it left out"
[ $fail = 0 ] && echo "PASS: pages and screenshots in $OUT"
exit $fail
