#!/bin/sh
# nway_churn_e2e.sh - `ameba run --strategy nway` on wl_thread_churn (10,000
# short-lived threads; each mallocs and frees a 256 B scratch buffer and
# touches a __thread counter) must return the scratch buffers' site and
# [tls]: units apart from the address space (docs/strategies.md, nway, step
# 4), whose blocks are gone by the next listing. Each share is compared with
# the oracle of a plain run of the same build (sim backend, l1d_miss): the
# workload's shares are steady, so the final window's shares are within a
# few points of the run's. Up to 3 attempts: on a loaded machine the run can
# end before the search does (a run under ctest -j2 next to a build once did).
#
#   nway_churn_e2e.sh AMEBA WORKLOAD_BIN_DIR
set -eu
ameba=$1
bin=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

attempt() {
AMEBA_BACKEND=sim AMEBA_ORACLE="$tmp/o.json" "$bin/wl_thread_churn" 3 >/dev/null
"$ameba" run -q --backend sim --metric l1d_miss --strategy nway:final_intervals=0 \
	--output "$tmp/r.json" -- "$bin/wl_thread_churn" 3 >"$tmp/out" 2>"$tmp/err" || {
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
    print("  %-40s %6.2f%%  oracle %s" % (name, 100 * share,
          "%.2f%%" % (100.0 * want / total) if want is not None else "-"))
bad = 0
if total <= 0:
    print("FAIL: the oracle counted no l1d_miss"); sys.exit(1)
scratch = [n for n in bins if n.startswith("scratch_buffer@thread_churn.c:")]
if len(scratch) != 1:
    print("FAIL: oracle bins", sorted(bins)); sys.exit(1)
for name in (scratch[0], "[tls]"):
    want = bins[name] / total
    if name not in got:
        print("FAIL: %s (%.1f%% of the misses) not returned" % (name, 100 * want)); bad = 1
    elif abs(got[name] - want) > 0.05:
        print("FAIL: %s estimated %.2f%%, oracle %.2f%% (+- 5)" % (name, 100 * got[name], 100 * want))
        bad = 1
for name in got:
    if name not in bins:
        print("FAIL: %s is no oracle bin" % name); bad = 1
sys.exit(bad)
PY
}

for i in 1 2 3; do
	echo "attempt $i"
	attempt && exit 0
done
exit 1
