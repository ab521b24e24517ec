#!/usr/bin/env bash
# bench/report_html/run.sh AMEBA TEST_BIN [OUT_DIR]
#
# What the HTML report costs (issue 25): a report of 100,000 objects and
# 2,000 threads (tests/html/big_report.py, shaped on a real false-sharing
# report) rendered by `ameba report --html`, then loaded in headless
# Chromium RUNS times, interleaved with an empty page (Chromium's own
# start-up). Prints
#   html_100k_bytes          the page's size (target < 10 MB)
#   html_100k_write_s        `ameba report --html` wall time
#   html_100k_load_s         best / median wall time of loading the page
#                            (--dump-dom: the load and the script's run)
#   html_empty_load_s        the same for an empty page
#   html_100k_open_s         median load minus median empty: what the page
#                            adds to opening a browser (target < 3 s)
#   html_100k_render_ms      the script's own time (body data-ameba-render-ms)
# and the cost of sampling for the views on a run (--views against none,
# wall time of `ameba run --what-if 0` on wl_phases and wl_false_sharing,
# RUNS interleaved pairs): views_cost_<w> = median ratio.
case ${1:-} in -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
set -euo pipefail
AMEBA=$1 BIN=$2 OUT=${3:-$(mktemp -d)} RUNS=${RUNS:-5}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$CHROME" ] || { echo "no Chromium: bash scripts/install-deps.sh installs it" >&2; exit 1; }
mkdir -p "$OUT"
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", a - b }'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", a / b }'; }

"$AMEBA" run -q --what-if 0 --views --output "$OUT/base.json" -- "$BIN/wl_false_sharing" > /dev/null
python3 "$HERE/tests/html/big_report.py" "$OUT/base.json" "$OUT/big.json" 100000 2000
t=$(now); "$AMEBA" report "$OUT/big.json" --html "$OUT/big.html" > /dev/null
echo "html_100k_write_s: $(sub "$(now)" "$t")"
echo "html_100k_bytes: $(stat -c %s "$OUT/big.html") (json $(stat -c %s "$OUT/big.json"))"
printf '<!DOCTYPE html><html><body>empty</body></html>\n' > "$OUT/empty.html"
load() {
  local t0; t0=$(now)
  "$CHROME" --headless=new --no-sandbox --disable-gpu --no-first-run --user-data-dir="$OUT/profile" \
    --dump-dom "file://$1" > "$2" 2> /dev/null
  sub "$(now)" "$t0"
}
: > "$OUT/big.t"; : > "$OUT/empty.t"
for _ in $(seq "$RUNS"); do
  load "$OUT/big.html" "$OUT/big.dom" >> "$OUT/big.t"
  load "$OUT/empty.html" "$OUT/empty.dom" >> "$OUT/empty.t"
done
bm=$(median < "$OUT/big.t"); em=$(median < "$OUT/empty.t")
echo "html_100k_load_s: best $(sort -g "$OUT/big.t" | head -1) median $bm"
echo "html_empty_load_s: best $(sort -g "$OUT/empty.t" | head -1) median $em"
echo "html_100k_open_s: $(sub "$bm" "$em")"
echo "html_100k_render_ms: $(grep -o 'data-ameba-render-ms="[0-9.]*"' "$OUT/big.dom" | grep -o '[0-9.]*')"

for w in phases false_sharing; do
  : > "$OUT/$w.r"
  for _ in $(seq "$RUNS"); do
    t=$(now); "$AMEBA" run -q --what-if 0 --output "$OUT/x.json" -- "$BIN/wl_$w" > /dev/null 2>&1
    a=$(sub "$(now)" "$t")
    t=$(now); "$AMEBA" run -q --what-if 0 --views --output "$OUT/x.json" -- "$BIN/wl_$w" > /dev/null 2>&1
    b=$(sub "$(now)" "$t")
    div "$b" "$a" >> "$OUT/$w.r"
  done
  echo "views_cost_$w: median $(median < "$OUT/$w.r") (runs: $(tr '\n' ' ' < "$OUT/$w.r"))"
done
