#!/bin/bash
# ab.sh A_DIR B_DIR - two builds of the runtime against each other on the
# long kernels (issue 24): for judging a change to the access path in CPU
# time on a host whose runs of one build spread by 10-50% within the hour.
#
# A_DIR and B_DIR each hold long_ameba (run.sh's instrumented build of
# kernels.c, linked with the runtime to compare: `build/bin/ameba cc
# --compiler gcc -O2 -g -pthread bench/sim_speed_long/kernels.c -o
# DIR/long_ameba`). Each kernel (LONG_KERNELS, as run.sh) runs at
# LONG_SCALE (default 0.3) for LONG_ROUNDS rounds (default 5), in run.sh's
# setting (the sim backend and the oracle, cachegrind.conf, 3C and the TLB
# model off; with AB_GEOMETRY=host, the host's own preset with both on,
# as `ameba run --exact` simulates), A and B next to each other in every round and in turns first
# (A B, B A, A B ...), so that a host growing slower or faster over the
# rounds weighs on both alike. Prints, for each kernel k:
#   ab_a_s_<k>, ab_b_s_<k>   the best round of each (CPU s; wall for *_2t, *_32t)
#   ab_a_median_<k>, ab_b_median_<k>   their medians
#   ab_ratio_<k>             the median over rounds of B / A, each round's
#                            two runs minutes apart at most: below 1, B
#                            is faster
#   ab_b_faster_<k>          in how many rounds B took less time than A
#                            ("4/5"); a change the host's noise cannot
#                            tell apart lands near half
# and one line per round on stderr while it runs. Each run's counts must
# be those of the kernel's first run (the totals of every object the
# kernel allocated, from the oracle file: the two builds simulate the
# same accesses exactly; the 2-thread kernels' within 0.01% or 8 events,
# as their threads' start in the host's order moves a few misses from run
# to run of one build: 260 then 262 interventions, 14 then 13
# invalidations; runs without address randomisation where setarch can),
# else ab.sh shows what differs, goes on with the next
# kernel and exits 1. Exits 2 on bad usage.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=settings.sh
. "$here/settings.sh"
bench_args 2 2 "ab.sh A_DIR B_DIR" "$@"
rounds=${LONG_ROUNDS:-5}
scale=${LONG_SCALE:-0.3}
case ${AB_GEOMETRY:-bench} in
bench) ;;
host) sim_env=(AMEBA_BACKEND=sim) ;;
*) echo "ab.sh: AB_GEOMETRY=$AB_GEOMETRY: bench (cachegrind.conf, 3C and the TLB model off) or host (the host's preset, both on)" >&2
	exit 2 ;;
esac
case $rounds in '' | *[!0-9]* | 0) echo "ab.sh: LONG_ROUNDS=$rounds: a count of rounds, 1 or more" >&2
	exit 2 ;; esac
for d in "$1" "$2"; do
	[ -x "$d/long_ameba" ] || { echo "ab.sh: $d/long_ameba missing or not executable" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "ab.sh: /usr/bin/time not found (apt-get install time)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_ab.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

# check WANT ORACLE TOL SLACK: the totals of every object the kernel
# allocated (named by site; addresses and ids left out) in the oracle file
# ORACLE, written to WANT if it does not exist, else compared with it:
# equal, or each metric within TOL of it (a fraction) or within SLACK
# events. Not the stacks and [other]: their lines move with the address
# space's layout and the start-up's accesses from run to run, with the
# same build.
check() {
	python3 -c '
import json, os, sys
want_f, oracle_f, tol, slack = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
d = json.load(open(oracle_f))
got = {o["name"]: o["total"] for o in d["objects"] if not o.get("name", "[").startswith("[")}
if not os.path.exists(want_f):
    json.dump(got, open(want_f, "w"))
    sys.exit(0)
want = json.load(open(want_f))
bad = []
for name in sorted(set(want) | set(got)):
    w, g = want.get(name), got.get(name)
    if w is None or g is None:
        bad.append("%s: %s" % (name, "new" if w is None else "missing"))
        continue
    for m in sorted(set(w) | set(g)):
        x, y = w.get(m, 0), g.get(m, 0)
        if abs(x - y) > max(tol * max(abs(x), abs(y)), slack):
            bad.append("%s %s: %s, then %s" % (name, m, x, y))
for line in bad[:8]:
    print(line)
sys.exit(1 if bad else 0)' "$@"
}

# Address randomisation off where setarch can (every run's mappings, and
# with them the LL sets the blocks fall in and the simulated clocks of
# threads, the same; with it on, sweep_32t's coherence misses on its block
# were 83-88 in three runs of one build at SCALE 0.1, and 139 and 288 at
# 0.3 in two builds that give 88 and 88 without it)
norand=()
setarch "$(uname -m)" -R true 2>/dev/null && norand=(setarch "$(uname -m)" -R)

# run LABEL DIR K: one run's seconds on stdout; its counts checked against
# the kernel's first run
run() {
	local o=$tmp/oracle.json
	rm -f "$o"
	/usr/bin/time -f "%U %S %e" -o "$tmp/time" "${norand[@]}" env "${sim_env[@]}" \
		AMEBA_ORACLE="$o" "$2/long_ameba" "$3" "$scale" \
		>/dev/null 2>"$tmp/err" || { echo "ab.sh: $2/long_ameba $3 $scale failed:" >&2
		tail -n 5 "$tmp/err" >&2; return 1; }
	if ! check "$tmp/want.json" "$o" "$tol" "$slack" >"$tmp/diff"; then
		echo "ab.sh: $3: $1's counts differ from the first run's (tolerance $tol, or $slack events):" >&2
		cat "$tmp/diff" >&2
		return 1
	fi
	awk -v b="$base" '{ printf "%.3f\n", (b == "wall") ? $3 : $1 + $2 }' "$tmp/time"
}

status=0
for k in $kernels; do
	base=$(time_base "$k")
	if [ "$base" = wall ]; then tol=0.0001 slack=8; else tol=0 slack=0; fi
	rm -f "$tmp/want.json"
	a=() b=()
	for r in $(seq 1 "$rounds"); do
		if [ $((r % 2)) = 1 ]; then
			ta=$(run A "$1" "$k") || { status=1; continue 2; }
			tb=$(run B "$2" "$k") || { status=1; continue 2; }
		else
			tb=$(run B "$2" "$k") || { status=1; continue 2; }
			ta=$(run A "$1" "$k") || { status=1; continue 2; }
		fi
		a+=("$ta") b+=("$tb")
		echo "ab.sh: $k round $r/$rounds: A $ta s, B $tb s" >&2
	done
	paste -d' ' <(printf '%s\n' "${a[@]}") <(printf '%s\n' "${b[@]}") | awk -v k="$k" '
		function median(x, n,   i, j, t) {
			for (i = 2; i <= n; i++)
				for (j = i; j > 1 && x[j - 1] > x[j]; j--) { t = x[j]; x[j] = x[j - 1]; x[j - 1] = t }
			return (n % 2) ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
		}
		{ a[NR] = $1; b[NR] = $2; q[NR] = ($1 > 0) ? $2 / $1 : 0; fast += ($2 < $1) }
		END {
			ab = a[1]; bb = b[1]
			for (i = 2; i <= NR; i++) { if (a[i] < ab) ab = a[i]; if (b[i] < bb) bb = b[i] }
			printf "ab_a_s_%s: %.3f\nab_b_s_%s: %.3f\n", k, ab, k, bb
			printf "ab_a_median_%s: %.3f\nab_b_median_%s: %.3f\n", k, median(a, NR), k, median(b, NR)
			printf "ab_ratio_%s: %.3f\n", k, median(q, NR)
			printf "ab_b_faster_%s: %d/%d\n", k, fast, NR
		}'
done
exit $status
