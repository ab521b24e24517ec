#!/bin/bash
# ab.sh A_DIR B_DIR [C_DIR ...] - two builds of the runtime (or up to six)
# against each other on the long kernels (issue 24): for judging a change
# to the access path in CPU time on a host whose runs of one build spread
# by 10-50% within the hour.
#
# Each DIR holds long_ameba (run.sh's instrumented build of kernels.c,
# linked with the runtime to compare: `build/bin/ameba cc --compiler gcc
# -O2 -g -pthread bench/sim_speed_long/kernels.c -o DIR/long_ameba`). Each
# kernel (LONG_KERNELS, as run.sh) runs at LONG_SCALE (default 0.3) for
# LONG_ROUNDS rounds (default 5), in run.sh's setting (the sim backend and
# the oracle, cachegrind.conf, 3C and the TLB model off; with
# AB_GEOMETRY=host, the host's own preset with both on, as `ameba run
# --exact` simulates), every build once in every round, in an order that
# turns (A B C, B C A, C A B ...: with two builds A B, B A), so that a host
# growing slower or faster over the rounds weighs on all alike. Without
# address randomisation where setarch can (AB_ASLR=1 keeps it: a fresh
# layout every run, so that no build's luck in one layout decides). Prints,
# for each kernel k:
#   ab_a_s_<k>, ab_b_s_<k>   the best round of each (CPU s; wall for *_2t, *_32t)
#   ab_a_median_<k>, ab_b_median_<k>   their medians
#   ab_ratio_<k>             the median over rounds of B / A, each round's
#                            runs minutes apart at most: below 1, B is
#                            faster
#   ab_ratio_span_<k>        the smallest and the largest of those ratios:
#                            a span across 1 wider than the change is the
#                            host's noise
#   ab_b_faster_<k>          in how many rounds B took less time than A
#                            ("4/5"); a change the host's noise cannot
#                            tell apart lands near half
# and for a third build and on the same with its letter against A
# (ab_c_s_<k>, ab_c_median_<k>, ab_ratio_c_<k>, ab_ratio_span_c_<k>,
# ab_c_faster_<k>), and one line per round on stderr while it runs. Each
# run's counts must be those of the kernel's first run (the totals of
# every object the kernel allocated, from the oracle file: the builds
# simulate the same accesses exactly; the 2-thread kernels' within 0.01%
# or 8 events, as their threads' start in the host's order moves a few
# misses from run to run of one build: 260 then 262 interventions, 14 then
# 13 invalidations), else ab.sh shows what differs, goes on with the next
# kernel and exits 1. Exits 2 on bad usage.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=settings.sh
. "$here/settings.sh"
bench_args 2 6 "ab.sh A_DIR B_DIR [C_DIR ...]" "$@"
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
case ${AB_ASLR:-0} in 0 | 1) ;; *) echo "ab.sh: AB_ASLR=$AB_ASLR: 0 (address randomisation off where setarch can) or 1 (on)" >&2
	exit 2 ;; esac
dirs=("$@")
letters=(A B C D E F)
n=${#dirs[@]}
for d in "${dirs[@]}"; do
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
[ "${AB_ASLR:-0}" = 0 ] && setarch "$(uname -m)" -R true 2>/dev/null && norand=(setarch "$(uname -m)" -R)

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
	: >"$tmp/rounds"
	for r in $(seq 1 "$rounds"); do
		t=()
		for j in $(seq 0 $((n - 1))); do
			i=$(((j + r - 1) % n))
			t[i]=$(run "${letters[i]}" "${dirs[i]}" "$k") || { status=1; continue 3; }
		done
		echo "${t[*]}" >>"$tmp/rounds"
		line="ab.sh: $k round $r/$rounds:"
		for i in $(seq 0 $((n - 1))); do line="$line ${letters[i]} ${t[i]} s,"; done
		echo "${line%,}" >&2
	done
	awk -v k="$k" -v n="$n" '
		function median(x, m,   i, j, t) {
			for (i = 2; i <= m; i++)
				for (j = i; j > 1 && x[j - 1] > x[j]; j--) { t = x[j]; x[j] = x[j - 1]; x[j - 1] = t }
			return (m % 2) ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2
		}
		{ for (i = 1; i <= n; i++) v[i, NR] = $i }
		END {
			split("a b c d e f", l, " ")
			for (i = 1; i <= n; i++) {
				best = v[i, 1]
				for (r = 1; r <= NR; r++) { x[r] = v[i, r]; if (x[r] < best) best = x[r] }
				printf "ab_%s_s_%s: %.3f\n", l[i], k, best
				printf "ab_%s_median_%s: %.3f\n", l[i], k, median(x, NR)
			}
			for (i = 2; i <= n; i++) {
				fast = 0
				for (r = 1; r <= NR; r++) {
					q[r] = (v[1, r] > 0) ? v[i, r] / v[1, r] : 0
					fast += (v[i, r] < v[1, r])
					if (r == 1 || q[r] < lo) lo = q[r]
					if (r == 1 || q[r] > hi) hi = q[r]
				}
				sfx = (i == 2) ? "" : l[i] "_"
				printf "ab_ratio_%s%s: %.3f\n", sfx, k, median(q, NR)
				printf "ab_ratio_span_%s%s: %.3f %.3f\n", sfx, k, lo, hi
				printf "ab_%s_faster_%s: %d/%d\n", l[i], k, fast, NR
			}
		}' "$tmp/rounds"
done
exit $status
