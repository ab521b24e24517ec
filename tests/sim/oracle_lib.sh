# oracle_lib.sh - sourced by the sim tests that run one program two ways and
# want the same counts (asm_entry.sh, lean_path.sh, batch.sh,
# line_filter.sh).

# bench_setup: what the tests of the lean path's geometry share - gdb
# there (else exit 1 naming the script), $out a temporary directory
# removed at exit, the sim backend under bench/sim_validate/cachegrind.conf
# with 3C off. Needs $here (the script's directory).
bench_setup() {
	command -v gdb >/dev/null ||
		{ echo "$(basename "$0" .sh): gdb not found (apt-get install gdb)" >&2; exit 1; }
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
	export AMEBA_BACKEND=sim AMEBA_PRESET=$here/../../bench/sim_validate/cachegrind.conf
	export AMEBA_SIM_3C=0
}

# parse_spec BIN[:ARG]: sets bin, arg (an array: ARG, or empty) and name
parse_spec() {
	bin=${1%%:*} arg=()
	[ "$1" = "$bin" ] || arg=("${1#*:}")
	name="$(basename "$bin") ${arg[*]}"
}

# ran FUNC BIN ARG...: "hit" when gdb stopped in FUNC (or in any of the
# functions FUNC lists, separated by spaces) while BIN ran, else "not hit"
ran() {
	local func brk=()
	for func in $1; do
		brk+=(-ex "break $func")
	done
	shift
	gdb -q -batch -ex 'set breakpoint pending on' "${brk[@]}" -ex run \
		-ex 'info breakpoints' --args "$@" 2>&1 |
		grep -q 'already hit' && echo hit || echo "not hit"
}

# expect_ran WANT FUNC MESSAGE VAR=VALUE...: runs $bin "${arg[@]}" (see
# parse_spec) under the variables, its oracle in $out/probe.json; prints
# "<test>: $name: MESSAGE" and fails unless `ran FUNC` says WANT ("hit" or
# "not hit"). <test>: the script's name.
expect_ran() {
	local want=$1 func=$2 msg=$3 r
	shift 3
	r=$(export "$@" AMEBA_ORACLE="$out/probe.json"; ran "$func" "$bin" "${arg[@]}")
	[ "$r" = "$want" ] && return 0
	echo "$(basename "$0" .sh): $name: $msg" >&2
	return 1
}

# same A B: the objects of two oracle files, every metric of every thread;
# prints the accesses counted, fails (naming the first difference) when they
# differ or when nothing was counted
same() {
	python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(f))["objects"] for f in sys.argv[1:3])
key = lambda o: (o.get("kind"), o.get("name"), o.get("site"), o.get("start"))
if len(a) != len(b):
    sys.exit(f"{len(a)} objects against {len(b)}")
refs = 0
for x, y in zip(a, b):
    for part in ("total", "threads"):
        if x.get(part) != y.get(part):
            sys.exit(f"object {key(x)}: {part} differs:\n  first  {x.get(part)}\n  second {y.get(part)}")
    refs += x["total"].get("mem_ref", 0)
if refs == 0:
    sys.exit("no accesses counted")
print(refs)
PY
}

# same_both_ways VAR WHAT: runs $bin "${arg[@]}" with VAR=1 and VAR=0 (WHAT
# names the VAR=1 side), the TLB model on and off (AMEBA_SIM_TLB), ASLR
# off; prints a line per TLB setting and fails when the outputs or the
# oracles differ. Uses $out and $name (parse_spec).
same_both_ways() {
	local var=$1 what=$2 tlb v refs rc=0 me
	me=$(basename "$0" .sh)
	for tlb in 1 0; do
		for v in 1 0; do
			env AMEBA_SIM_TLB=$tlb "$var=$v" AMEBA_ORACLE="$out/$v.json" \
				setarch -R "$bin" "${arg[@]}" >"$out/$v.out"
		done
		cmp -s "$out/1.out" "$out/0.out" || { echo "$me: $name: output differs" >&2; rc=1; }
		if refs=$(same "$out/1.json" "$out/0.json"); then
			echo "$me: $name, TLB=$tlb: identical, $refs accesses"
		else
			echo "$me: $name, TLB=$tlb: oracles differ (first: $what, second: $var=0)" >&2
			rc=1
		fi
	done
	return $rc
}
