#!/usr/bin/env bash
# End-to-end tests of the out-of-process monitor (docs/backends.md) on
# uninstrumented programs: detection, the no-PMU error, the pagefault and
# watch backends, heap blocks through uprobes, and SIGKILL of the agent.
#
# usage: e2e.sh CASE AMEBA TEST_BIN
# Exit 0 pass, 1 fail, 77 skipped (the reason is printed).
set -u
case_name=$1 AMEBA=$2 BIN=$3
T=$(mktemp -d "${TMPDIR:-/tmp}/ameba-backends-XXXXXX")
export HOME=$T/home XDG_CONFIG_HOME=$T/config
mkdir -p "$HOME"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT

fail() { echo "FAIL ($case_name): $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
skip() { echo "SKIP ($case_name): $*"; exit 77; }
has() { grep -qF -- "$2" "$1" || { echo "--- $1:" >&2; cat "$1" >&2; fail "$1 lacks: $2"; }; }

probe=$("$BIN/backends_probe_check")
probe_of() { echo "$probe" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
need() {
	case $(probe_of "$1") in
	available) ;;
	NOCOUNT) skip "the $1 backend cannot work here: a breakpoint opens but does not count" ;;
	*) skip "the $1 backend cannot work here: perf_event_open failed with $(probe_of "$1")" ;;
	esac
}

# start_held PROG ARGS...: starts PROG with a FIFO it waits on; sets tpid, fifo
start_held() {
	fifo=$T/go
	mkfifo "$fifo"
	"$@" "$fifo" > "$T/target.out" 2> "$T/target.err" &
	tpid=$!
	pids+=("$tpid")
	for _ in $(seq 200); do [ -s "$T/target.out" ] && break; sleep 0.05; done
	[ "$(head -1 "$T/target.out")" = "$tpid" ] || fail "the target did not start"
}
# wait_perf_fds PID N: until process PID holds at least N perf event fds
wait_perf_fds() {
	local n=0
	for _ in $(seq 400); do
		n=$(ls -l "/proc/$1/fd" 2>/dev/null | grep -c 'perf_event')
		[ "$n" -ge "$2" ] && return 0
		kill -0 "$1" 2>/dev/null || break
		sleep 0.05
	done
	cat "$T/agent.err" >&2 2>/dev/null
	fail "the agent (pid $1) opened $n perf events, want $2"
}
release() { echo go > "$fifo"; }
# wait_measured: until the words agent apid logged (-v) its first interval
wait_measured() {
	for _ in $(seq 600); do
		grep -q "words: first interval measured" "$T/agent.err" 2>/dev/null && break
		kill -0 "$apid" 2>/dev/null || break
		sleep 0.05
	done
	has "$T/agent.err" "words: first interval measured"
}
# watch_words SPEC: `ameba attach --backend watch --strategy words:SPEC`
# on the held target, released once the agent has measured its first
# interval; waits for both and fails unless both exit 0. Counting perf fds
# cannot tell that moment: the agent's start-up probe opens 4 breakpoints
# and the heap uprobes 7 more per thread before any word is watched. The
# words' breakpoints stay armed from the first interval to the target's
# exit (one turn), so every write after the release is counted.
watch_words() {
	(cd "$T" && exec "$AMEBA" attach "$tpid" --backend watch -v \
		--strategy "words:$1" -o "$T/rep.json" > "$T/agent.out" 2> "$T/agent.err") &
	apid=$!; pids+=("$apid")
	wait_measured
	release
	wait "$tpid" || fail "the target failed: $(cat "$T/target.out")"
	wait "$apid"; st=$?
	[ $st -eq 0 ] || { cat "$T/agent.err"; fail "ameba exited with $st"; }
}
# the perf fds of a pagefault agent on a one-thread target: one page-fault
# event per cpu, and 7 uprobes (per thread) when the machine has uprobes
armed_fds() {
	local ncpu; ncpu=$(getconf _NPROCESSORS_CONF)
	if [ -r /sys/bus/event_source/devices/uprobe/type ]; then
		echo $((ncpu + 7))
	else
		echo "$ncpu"
	fi
}
# finding PROPERTY OBJECT: the evidence of that finding in the JSON report
evidence() {
	python3 - "$1" "$2" "$3" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
for f in rep["findings"]:
    o = f["context"].get("object") or {}
    if f["property"] == sys.argv[2] and o.get("name") == sys.argv[3]:
        print(f["evidence"])
        break
PY
}

case $case_name in
detect)
	# `ameba list backends` agrees with an independent probe of this machine
	"$AMEBA" list backends > "$T/list.txt" || fail "ameba list backends"
	cat "$T/list.txt"
	for b in perf pagefault watch; do
		want=$(probe_of $b)
		line=$(grep -E "^$b +" "$T/list.txt") || fail "no row for $b"
		if [ "$want" = available ]; then
			echo "$line" | grep -Eq "^$b +available " || fail "$b: probe says available: $line"
		else
			echo "$line" | grep -Eq "^$b +unavailable " ||
				fail "$b: probe says $want: $line"
		fi
	done
	case $(probe_of perf) in
	ENOENT|EOPNOTSUPP|ENODEV)
		has "$T/list.txt" "this machine has no hardware PMU (perf_event_open of PERF_COUNT_HW_CPU_CYCLES failed: $(probe_of perf)); use \`ameba cc\` and the sim backend"
		ok "no PMU detected, with the reason" ;;
	EACCES|EPERM)
		has "$T/list.txt" "perf_event_paranoid is $(cat /proc/sys/kernel/perf_event_paranoid)"
		ok "permission problem explained" ;;
	esac
	if [ "$(probe_of watch)" = NOCOUNT ]; then
		has "$T/list.txt" "a PERF_TYPE_BREAKPOINT event opens but counted"
		ok "breakpoints that do not count detected, with the reason"
	fi
	if [ "$(probe_of watch)" = available ]; then
		grep -Eq "^watch +available +.* on [1-9][0-9]* words" "$T/list.txt" ||
			fail "watch: no breakpoint count"
	fi
	has "$T/list.txt" "perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)"
	"$AMEBA" list --help > /dev/null || fail "ameba list --help"
	ok "ameba list backends matches the probe: $probe"
	;;
no_pmu)
	case $(probe_of perf) in
	ENOENT|EOPNOTSUPP|ENODEV) ;;
	*) skip "this machine has a usable PMU or another problem ($(probe_of perf))" ;;
	esac
	sleep 30 & spid=$!; pids+=("$spid")
	"$AMEBA" attach --backend perf --metric l1d_miss "$spid" > "$T/out.txt" 2> "$T/err.txt"
	st=$?
	[ $st -ne 0 ] || fail "ameba attach --backend perf succeeded without a PMU"
	cat "$T/err.txt"
	[ "$(wc -l < "$T/err.txt")" -eq 1 ] || fail "want one error line"
	has "$T/err.txt" "l1d_miss"
	has "$T/err.txt" "this machine has no hardware PMU (perf_event_open of PERF_COUNT_HW_CPU_CYCLES failed: $(probe_of perf)); use \`ameba cc\` and the sim backend"
	kill -0 "$spid" || fail "the target died"
	[ ! -e "ameba-$spid.json" ] || fail "a report was written"
	ok "no PMU: one clear error, exit status $st"
	;;
pagefault_attach|pagefault_run)
	need pagefault
	if [ $case_name = pagefault_attach ]; then
		start_held "$BIN/backends_first_touch"
		(cd "$T" && exec "$AMEBA" attach "$tpid" --backend pagefault \
			--property FirstTouchPlacement:threshold=0.4 -o "$T/rep.json" \
			> "$T/agent.out" 2> "$T/agent.err") &
		apid=$!; pids+=("$apid")
		# page-fault events and uprobes on the 1 thread, on every cpu
		wait_perf_fds "$apid" "$(armed_fds)"
		release
		wait "$tpid" || fail "the target failed"
		wait "$apid"; st=$?
	else
		(cd "$T" && "$AMEBA" run --backend pagefault -o "$T/rep.json" \
			--property FirstTouchPlacement:threshold=0.4 -- "$BIN/backends_first_touch" \
			> "$T/agent.out" 2> "$T/agent.err"); st=$?
	fi
	cat "$T/agent.out"
	[ $st -eq 0 ] || { cat "$T/agent.err"; fail "ameba exited with $st"; }
	grep -Eq '"backend":[[:space:]]+"pagefault"' "$T/rep.json" || fail "report backend"

	m=$(evidence "$T/rep.json" FirstTouchPlacement master_data)
	w=$(evidence "$T/rep.json" FirstTouchPlacement worker_data)
	echo "master_data: $m"
	echo "worker_data: $w"
	# the main thread (T0) placed every page of master_data, no worker any
	echo "$m" | grep -q "^thread 0 placed 1024 of 1024 pages" || fail "master_data: $m"
	echo "$m" | grep -Eq "pages per thread: T0=1024( T[0-9]+=0)*$" || fail "master_data: $m"
	# two workers placed half of worker_data each, the main thread none
	echo "$w" | grep -Eq "placed 512 of 1024 pages" || fail "worker_data: $w"
	# (a context lists the threads that counted on it: T0 is absent or 0)
	echo "$w" | grep -Eq "pages per thread: .*T0=[1-9]" && fail "worker_data: $w"
	[ "$(echo "$w" | grep -oE 'T[1-9][0-9]*=512' | sort -u | wc -l)" -eq 2 ] ||
		fail "worker_data: want two workers with 512 pages each: $w"
	ok "first touch per object and thread: $m / $w"
	;;
watch_attach|watch_nothing)
	need watch
	start_held "$BIN/backends_false_sharing"
	[ -n "$tpid" ] || fail "no target"
	;;&
watch_attach)
	# the workers exist (held at a barrier): 3 threads x 2 words
	watch_words object=shared_counters,bytes=16
	cat "$T/agent.out"
	e=$(evidence "$T/rep.json" WordFalseSharing shared_counters)
	echo "evidence: $e"
	# each worker wrote its own word (field a / b from DWARF), exactly 20000
	# times (the program's count)
	echo "$e" | grep -Eq "^T([12]) wrote \+0 \(a\) 20000x; T([12]) wrote \+8 \(b\) 20000x$" ||
		fail "per-thread words: $e"
	a=$(echo "$e" | sed -E 's/^T([12]) .*/\1/') b=$(echo "$e" | sed -E 's/.*; T([12]) .*/\1/')
	[ "$a" != "$b" ] || fail "one thread wrote both words: $e"
	ok "watch: exact per-thread writes per word: $e"
	;;
watch_nothing)
	# words on a global no thread writes (nr_inc: set only from argv):
	# no finding, and the report and stderr say why
	watch_words object=nr_inc
	jq -e '.findings | length == 0' "$T/rep.json" > /dev/null ||
		fail "findings on an unwritten word: $(jq -c '.findings' "$T/rep.json")"
	w=$(jq -r '.warnings[] | select(startswith("words: no write of nr_inc"))' "$T/rep.json")
	[ -n "$w" ] || fail "no warning on the empty words search: $(jq -c .warnings "$T/rep.json")"
	echo "$w" | grep -Eq "counted in [0-9.]+ s over 3 threads" || fail "warning: $w"
	has "$T/agent.err" "words: no write of nr_inc"
	ok "an empty words search says so: $w"
	;;
sigkill)
	# a watch agent killed mid-run, where breakpoints count; then a
	# pagefault agent with its uprobes armed, which works on more machines
	[ "$(probe_of watch)" = available ] || [ "$(probe_of pagefault)" = available ] ||
		skip "neither the watch nor the pagefault backend works here: $probe"
	if [ "$(probe_of watch)" != available ]; then
		echo "watch part not run: breakpoints here: $(probe_of watch)"
	else
		start_held "$BIN/backends_false_sharing"
		(cd "$T" && exec "$AMEBA" attach "$tpid" --backend watch -v \
			--strategy words:object=shared_counters,bytes=16 -o "$T/rep.json" \
			> "$T/agent.out" 2> "$T/agent.err") &
		apid=$!; pids+=("$apid")
		wait_measured
		kill -KILL "$apid"
		wait "$apid" 2>/dev/null
		release
		wait "$tpid"; st=$?
		cat "$T/target.out"
		[ $st -eq 0 ] || fail "the target exited with $st after the agent was killed"
		has "$T/target.out" "false_sharing: a=20000 b=20000"
		ok "SIGKILL of the agent: the target ran to a correct finish"
		rm -f "$fifo" "$T/target.out"
	fi
	need pagefault
	start_held "$BIN/backends_heap_blocks"
	(cd "$T" && exec "$AMEBA" attach "$tpid" --backend pagefault -o "$T/rep2.json" \
		> "$T/agent.out" 2> "$T/agent.err") &
	apid=$!; pids+=("$apid")
	wait_perf_fds "$apid" "$(armed_fds)"
	kill -KILL "$apid"
	wait "$apid" 2>/dev/null
	release
	wait "$tpid"; st=$?
	[ $st -eq 0 ] || fail "heap_blocks exited with $st after the agent was killed"
	has "$T/target.out" "heap_blocks: ok"
	ok "SIGKILL with uprobes armed: the target ran to a correct finish"
	;;
heap_uprobes)
	need pagefault
	[ -r /sys/bus/event_source/devices/uprobe/type ] || skip "no uprobe PMU"
	start_held "$BIN/backends_heap_blocks"
	(cd "$T" && exec "$AMEBA" attach "$tpid" --backend pagefault --top 0 -o "$T/rep.json" \
		> "$T/agent.out" 2> "$T/agent.err") &
	apid=$!; pids+=("$apid")
	wait_perf_fds "$apid" "$(armed_fds)"
	release
	wait "$tpid" || fail "the target failed"
	wait "$apid"; st=$?
	cat "$T/agent.out"
	[ $st -eq 0 ] || { cat "$T/agent.err"; fail "ameba exited with $st"; }
	python3 - "$T/rep.json" <<'PY' || fail "heap blocks"
import json, sys
rep = json.load(open(sys.argv[1]))
objs = {o["name"]: o for o in rep["objects"]}
print("objects:", [(o["name"], o["kind"], o.get("site"), o["size"]) for o in rep["objects"]])
ok = True
for site, size in (("make_grid", 1 << 20), ("make_table", 256 << 10)):
    hit = [o for o in rep["objects"] if (o.get("site") or "").startswith(site)]
    if not hit:
        print("no object allocated at", site); ok = False; continue
    o = hit[0]
    if o["kind"] not in ("heap", "bin") or o["size"] != size:
        print("bad object", o); ok = False
    if o["totals"].get("samples", 0) < size // 4096 - 1:  # malloc faults its header page
        print("too few page faults on", o); ok = False
# page faults say where pages were placed, not where memory time goes: no
# property that reads traffic (HotObject's "traverse it in address order")
# is evaluated on them
wrong = [f["property"] for f in rep["findings"] if f["property"] != "FirstTouchPlacement"]
if wrong:
    print("properties that do not fit page-fault data:", wrong); ok = False
sys.exit(0 if ok else 1)
PY
	ok "heap blocks allocated after attach carry their allocation sites"
	;;
*)
	fail "unknown case"
	;;
esac
exit 0
