#!/bin/sh
# nway_window_e2e.sh - the n-way's final window against the oracle over the
# same portion of the run (docs/oracle.md, "Marks"): `ameba run --strategy
# nway` on wl_true_sharing with AMEBA_ORACLE (sim backend). main() fills the
# samples, then the workers hammer a shared counter: the search ends during
# the fill, the final measurement sees the workers' phase and searches again
# (rescan), and the window restarts with a new mark. Every object of the
# report must name the same mark (one window), the shares must add up to at
# most 1, the report's totals must be the window's, and each share must be
# within 0.5 points of the oracle at exit minus the mark.
#
#   nway_window_e2e.sh AMEBA WORKLOAD_BIN_DIR
set -eu
ameba=$1
bin=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The search must end before the program does (its intervals grow in the
# phases; on a loaded machine it takes longer): SCALE 12 (~15 s under the
# sim backend), else once more at SCALE 24.
for scale in 12 24; do
	rm -f "$tmp"/o.json*
	AMEBA_BACKEND=sim AMEBA_ORACLE="$tmp/o.json" "$ameba" run -v --backend sim --metric l1d_miss \
		--strategy nway:n=10,final_intervals=0 --output "$tmp/r.json" \
		-- "$bin/wl_true_sharing" $scale >"$tmp/out" 2>"$tmp/err" || {
		echo "ameba run failed:"; cat "$tmp/err"; exit 1; }
	grep "searching again\|oracle mark" "$tmp/err" || true
	grep -q "oracle mark" "$tmp/err" && break
	echo "SCALE $scale: the search did not end before the program"
done

python3 - "$tmp/r.json" "$tmp/o.json" <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1]))
def bins(path):
    return {b["name"]: b["total"].get("l1d_miss", 0) for b in json.load(open(path))["bins"]}
end = bins(sys.argv[2])
objs = r["objects"]
bad = 0
marks = {o["window"]["mark"] for o in objs}
print("objects:", len(objs), "marks:", sorted(m or "-" for m in marks))
if len(objs) < 2:
    print("FAIL: %d objects, want samples and total_weight at least" % len(objs)); bad = 1
if len(marks) != 1 or None in marks:
    print("FAIL: the objects' windows start at marks %s, want one mark" % sorted(map(str, marks)))
    sys.exit(1)
mark = marks.pop()
start = bins(sys.argv[2] + ".mark-" + mark)
total = sum(end.values()) - sum(start.values())
if abs(r["totals"]["l1d_miss"] - objs[0]["window"]["totals"]["l1d_miss"]) > 0:
    print("FAIL: report totals %s != window totals %s" % (r["totals"]["l1d_miss"],
          objs[0]["window"]["totals"]["l1d_miss"])); bad = 1
ssum = 0
for o in objs:
    act = (end.get(o["name"], 0) - start.get(o["name"], 0)) / total
    whole = end.get(o["name"], 0) / sum(end.values())
    ssum += o["share"]
    print("  %-34s %7.3f%%  same-window oracle %7.3f%%  whole run %7.3f%%" %
          (o["name"], 100 * o["share"], 100 * act, 100 * whole))
    if abs(o["share"] - act) > 0.005:
        print("FAIL: %s off the same-window oracle by %.3f points" %
              (o["name"], 100 * abs(o["share"] - act))); bad = 1
print("sum of shares: %.6f" % ssum)
# the report rounds each share to 6 decimals (report.c round6): n shares
# that add up to exactly 1 may add up to 1 + n * 5e-7 as written
if ssum > 1 + len(objs) * 5e-7 + 1e-12:
    print("FAIL: shares add up to %.6f > 1" % ssum); bad = 1
names = [o["name"] for o in objs]
for want in ("alloc_samples@true_sharing.c:", "total_weight"):
    if not any(n.startswith(want) for n in names):
        print("FAIL: %s not found" % want); bad = 1
sys.exit(bad)
PY
