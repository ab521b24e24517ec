#!/bin/sh
# nway_cxx_names.sh - `ameba run --strategy nway` on wl_cxx names what it
# returns as the oracle names its bins at exit. The vectors' storage is
# allocated by std::allocator (allocate@new_allocator.h:137); a second
# caller deepens that site's name into "allocate@new_allocator.h:137 <-
# main@cxx.cpp:140" and "... <- main@cxx.cpp:141" after the agent listed
# the first block under the short name. Every object returned must be an
# oracle bin, and every oracle bin with >= 10% of the misses must be among
# them (sim backend, l1d_miss). Up to 3 attempts: on a loaded machine the
# run can end before the search does (a clean-clone CI run returned nothing).
#
#   nway_cxx_names.sh AMEBA WORKLOAD_BIN_DIR
set -eu
ameba=$1
bin=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

attempt() {
AMEBA_BACKEND=sim AMEBA_ORACLE="$tmp/o.json" "$bin/wl_cxx" 2 >/dev/null
"$ameba" run -q --backend sim --metric l1d_miss --strategy nway:final_intervals=0 \
	--output "$tmp/r.json" -- "$bin/wl_cxx" 2 >"$tmp/out" 2>"$tmp/err" || {
	echo "ameba run failed:"; cat "$tmp/err"; return 1; }

python3 - "$tmp/o.json" "$tmp/r.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
r = json.load(open(sys.argv[2]))
bins = {b["name"]: b["total"].get("l1d_miss", 0) for b in o["bins"]}
total = sum(bins.values())
got = {x["name"]: x["share"] for x in r["objects"]}
print("reason:", r["reason"], "iterations:", r["iterations"])
for name, share in sorted(got.items(), key=lambda kv: -kv[1]):
    want = bins.get(name)
    print("  %-60s %6.2f%%  oracle %s" % (name, 100 * share,
          "%.2f%%" % (100.0 * want / total) if want is not None else "-"))
bad = 0
if total <= 0:
    print("FAIL: the oracle counted no l1d_miss"); sys.exit(1)
if not any(n.startswith("allocate@new_allocator.h:137 <- ") for n in bins):
    print("FAIL: the oracle has no deepened allocate bin:", sorted(bins)); sys.exit(1)
for name in got:
    if name not in bins:
        print("FAIL: %s is no oracle bin" % name); bad = 1
for name, v in bins.items():
    if v >= 0.10 * total and name not in got:
        print("FAIL: %s (%.1f%% of the misses) not returned" % (name, 100.0 * v / total)); bad = 1
sys.exit(bad)
PY
}

for i in 1 2 3; do
	echo "attempt $i"
	attempt && exit 0
done
exit 1
