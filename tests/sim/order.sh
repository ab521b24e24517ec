#!/usr/bin/env bash
# order.sh FS FS_FIXED SYNC SYNC_NATIVE - the ordered simulation (monitor/seq.c):
#  1. the 4-thread false-sharing workload gets the same coherence misses on
#     its packed block with two host CPUs or one (taskset -c 0), within 10%,
#     and at least one per worker iteration (1.6 M); the padded twin none;
#     the host-ordered mode still counts every access;
#  2. a program that blocks in barriers, mutexes, condition variables,
#     semaphores, sleeps and joins ends, prints what it prints natively, and
#     every one of its 3 x 40 x 4096 slice writes is counted, and main's
#     read of `handed` after the joins finds the line the last worker wrote
#     as it ended dirty in that worker's core (an intervention), not merged
#     before that write because exit began first;
#  3. two workers that bump their own counters of one line 64 times after
#     each of 200 barriers interleave from each round's last arrival on:
#     the same 6,000+ coherence misses each in three runs on two CPUs or
#     one (a waiter resumed at a later round's release, or merged after
#     the other's writes because its wake was late on the host, made a
#     few hundred that varied from run to run).
set -u
FS=$1 FS_FIXED=$2 SYNC=$3 SYNC_NATIVE=$4 BWAKE=$5
T=$(mktemp -d "${TMPDIR:-/tmp}/ameba-order-XXXXXX")
trap 'rm -rf "$T"' EXIT
export AMEBA_BACKEND=sim AMEBA_SIM_ORDER=time
fail() { echo "FAIL: $*" >&2; exit 1; }
coh() {	# coherence misses on the objects whose name matches $2 in oracle $1
	jq -r --arg o "$2" '[.objects[] | select(.name | test($o)) | .total.coh_miss // 0] | add // 0' "$1"
}

runs=()
for how in "2cpu" "1cpu" "2cpu"; do
	pre=()
	[ $how = 1cpu ] && pre=(taskset -c 0)
	AMEBA_ORACLE=$T/fs.json timeout 300 "${pre[@]}" "$FS" > "$T/fs.out" || fail "$FS ($how) failed"
	c=$(coh "$T/fs.json" '^alloc_counters@')
	echo "false_sharing $how: coherence misses on the packed block: $c"
	runs+=("$c")
done
min=$(printf '%s\n' "${runs[@]}" | sort -n | head -1)
max=$(printf '%s\n' "${runs[@]}" | sort -n | tail -1)
[ "$min" -ge 1600000 ] || fail "only $min coherence misses (want >= 1.6 M: one per worker iteration)"
awk -v a="$min" -v b="$max" 'BEGIN { exit !(b <= 1.10 * a) }' || fail "runs differ by more than 10%: $min .. $max"
AMEBA_ORACLE=$T/fx.json timeout 300 "$FS_FIXED" > /dev/null || fail "$FS_FIXED failed"
c=$(coh "$T/fx.json" '^alloc_counters@')
echo "false_sharing_fixed: coherence misses on the padded block: $c"
[ "$c" -le 8 ] || fail "the padded twin has $c coherence misses"

# the host-ordered mode (AMEBA_SIM_ORDER=host) still simulates every access
AMEBA_SIM_ORDER=host AMEBA_ORACLE=$T/host.json timeout 300 "$FS" > "$T/host.out" || fail "$FS (host order) failed"
cmp -s "$T/fs.out" "$T/host.out" || fail "host order printed something else"
refs=$(jq -r '[.objects[] | select(.name | test("^alloc_counters@")) | .total.mem_ref] | add' "$T/host.json")
order=$(jq -r '.sim_order' "$T/host.json")
echo "false_sharing host order ($order): accesses to the packed block $refs"
[ "$order" = host ] || fail "AMEBA_SIM_ORDER=host ran in $order order"
if ! { [ "$refs" -ge 3200000 ] && [ "$refs" -le 3200100 ]; }; then
	fail "host order counted $refs accesses (want 3.2 M + main's few)"
fi

"$SYNC_NATIVE" > "$T/native.out" || fail "$SYNC_NATIVE failed"
for how in "2cpu" "1cpu"; do
	pre=()
	[ $how = 1cpu ] && pre=(taskset -c 0)
	AMEBA_ORACLE=$T/sync.json timeout 300 "${pre[@]}" "$SYNC" > "$T/sync.out" || fail "$SYNC ($how) failed or hung"
	diff "$T/native.out" "$T/sync.out" || fail "$SYNC ($how) printed something else than natively"
	w=$(jq -r '[.objects[] | select(.name == "slices") | .total.writes] | add' "$T/sync.json")
	echo "order_sync $how: writes to slices $w (want $((3 * 40 * 4096)))"
	[ "$w" = $((3 * 40 * 4096)) ] || fail "order_sync ($how): $w writes to slices counted"
done
# a core per thread (the bench geometry: skylake-sp's cores, no L2), so
# that the last worker's line is still dirty in its core at main's read
conf=$(dirname "$0")/../../bench/sim_validate/cachegrind.conf
for r in 1 2 3; do
	AMEBA_PRESET=$conf AMEBA_ORACLE=$T/hand.json timeout 300 "$SYNC" > /dev/null || fail "$SYNC (bench geometry) failed"
	iv=$(jq -r '[.objects[] | select(.name == "handed") | .threads["0"].intervention // 0] | add' "$T/hand.json")
	echo "order_sync run $r: interventions on main's read of handed after the joins: $iv (want 1)"
	[ "$iv" = 1 ] || fail "main's read after the joins was merged before the last worker's write"
done
# barriers' rounds: every waiter resumes at its round's last arrival, with
# the others held there until it has (seq_merge.c await_waiters)
bw=()
for how in "2cpu" "1cpu" "2cpu"; do
	pre=()
	[ $how = 1cpu ] && pre=(taskset -c 0)
	AMEBA_PRESET=$conf AMEBA_ORACLE=$T/bw.json timeout 300 "${pre[@]}" "$BWAKE" > "$T/bw.out" ||
		fail "$BWAKE ($how) failed"
	[ "$(cat "$T/bw.out")" = "12800 12800" ] || fail "$BWAKE ($how) printed $(cat "$T/bw.out")"
	c=$(jq -r '[.objects[] | select(.name == "line") | .threads[] | .coh_miss] | map(tostring) | join(" ")' "$T/bw.json")
	echo "barrier_wake $how: coherence misses on the shared line by thread: $c"
	for n in $c; do
		[ "$n" = 0 ] && continue	# main's
		[ "$n" -ge 6000 ] || fail "barrier_wake ($how): a worker has $n coherence misses (want >= 6000: the workers interleave after each barrier)"
	done
	bw+=("$c")
done
[ "${bw[0]}" = "${bw[1]}" ] && [ "${bw[0]}" = "${bw[2]}" ] ||
	echo "barrier_wake: the runs differ (${bw[*]}): host timing left somewhere (not a failure)"
echo "ok: ordered simulation"
