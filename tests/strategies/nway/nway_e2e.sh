#!/bin/sh
# nway_e2e.sh - `ameba run --strategy nway` on the hot_arrays workload must
# end with the six designed objects in the designed order (the comment block
# of tests/workloads/hot_arrays.c): grid 40%, flux 25%, coef 15%, mask 10%,
# halo 6%, tail 4% of the L1D misses, each estimate within 1 point.
#
#   nway_e2e.sh AMEBA WORKLOAD_BIN_DIR
set -eu
ameba=$1
bin=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# SCALE 6: 48 passes, long enough for the search to end before the program
# (also on a loaded machine; the agent then waits for the program to exit).
"$ameba" run -q --backend sim --metric l1d_miss --strategy nway --output "$tmp/r.json" \
	-- "$bin/wl_hot_arrays" 6 >"$tmp/out" 2>"$tmp/err" || {
	echo "ameba run failed:"; cat "$tmp/err"; exit 1; }

python3 - "$tmp/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
want = [("alloc_grid@hot_arrays.c:", 0.40), ("flux", 0.25), ("alloc_coef@hot_arrays.c:", 0.15),
        ("mask", 0.10), ("halo", 0.06), ("alloc_tail@hot_arrays.c:", 0.04)]
objs = r["objects"]
got = [(o["name"], o["share"]) for o in objs]
print("reason:", r["reason"], "iterations:", r["iterations"])
for name, share in got:
    print("  %-32s %6.2f%%" % (name, 100 * share))
bad = 0
if r["strategy"]["name"] != "nway":
    print("FAIL: strategy", r["strategy"]["name"]); bad = 1
if r["reason"] not in ("complete", "target exited"):
    print("FAIL: reason", r["reason"]); bad = 1
if len(got) < len(want):
    print("FAIL: %d objects, want at least %d" % (len(got), len(want))); bad = 1
for i, (prefix, share) in enumerate(want):
    if i >= len(got):
        break
    name, est = got[i]
    if not name.startswith(prefix):
        print("FAIL: rank %d is %s, want %s" % (i + 1, name, prefix)); bad = 1
    elif abs(est - share) > 0.01:
        print("FAIL: %s estimated %.2f%%, want %.0f%% +- 1" % (name, 100 * est, 100 * share)); bad = 1
sys.exit(bad)
PY
