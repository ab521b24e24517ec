#!/usr/bin/env bash
# Builds ameba and runs its main job on the bundled false-sharing example:
# the program is built with `ameba cc` and run under `ameba run`, which
# searches its memory bottlenecks online while it runs and prints the ranked
# report (the packed per-thread counters block comes first, with its
# allocation site), then re-renders the saved JSON report. The same report
# as a page (timelines, heat strips, the line map of the contended line) is
# written beside it: open report.html in any browser.
case ${1:-} in -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
[ $# = 0 ] || { echo "demo.sh: takes no arguments, got '$1' (demo.sh --help)" >&2; exit 2; }
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# `ameba` brings the strategies, the properties and the launch gate along.
cmake --build "$BUILD_DIR" -j "$(nproc)" --target ameba ameba-runtime
out=$(mktemp -d)
echo "== building tests/workloads/false_sharing.c with ameba cc"
"$BUILD_DIR/bin/ameba" cc -O2 -pthread tests/workloads/false_sharing.c -o "$out/false_sharing"
echo "== ameba run -- false_sharing"
"$BUILD_DIR/bin/ameba" run --output "$out/report.json" --html "$out/report.html" -- "$out/false_sharing"
echo "== ameba report $out/report.json"
"$BUILD_DIR/bin/ameba" report "$out/report.json" --top 5
