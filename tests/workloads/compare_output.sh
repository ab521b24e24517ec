#!/bin/sh
# compare_output.sh [--dormant-only | --native-pair] NATIVE_BIN INSTR_BIN [ARGS...]
#
# Runs the reference build NATIVE_BIN and the instrumented build INSTR_BIN with
# the same ARGS and fails unless every run exits with status 0 and prints
# byte for byte the same stdout. The instrumented build runs twice:
#   dormant   without AMEBA_ORACLE (the runtime only keeps its books), and
#   active    with AMEBA_ORACLE=<tmp file> (a backend counts every access;
#             AMEBA_BACKEND from the environment chooses which, default
#             count); the oracle file must then exist and be non-empty.
# --dormant-only   skips the active run.
# --native-pair    INSTR_BIN is another native build (a workload's fixed twin):
#                  one plain run of each, outputs compared.
# stderr is not compared (the runtime may log there); it is shown on failure.
#
# Exit status: 0 identical, 1 different or a run failed, 2 usage error.

set -u

mode=both
case "${1:-}" in
--dormant-only) mode=dormant; shift ;;
--native-pair) mode=pair; shift ;;
esac
if [ $# -lt 2 ]; then
	echo "usage: $0 [--dormant-only | --native-pair] NATIVE_BIN INSTR_BIN [ARGS...]" >&2
	exit 2
fi
ref=$1
cand=$2
shift 2
args=${*:-none}

for bin in "$ref" "$cand"; do
	if [ ! -x "$bin" ]; then
		echo "FAIL: $bin does not exist or is not executable (was it built?)" >&2
		exit 1
	fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ameba-compare.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

ref_name=$(basename "$ref")
cand_name=$(basename "$cand")

# describe_status STATUS: "exit status N" or "killed by signal N".
describe_status() {
	if [ "$1" -gt 128 ]; then
		echo "killed by signal $(($1 - 128))"
	else
		echo "exit status $1"
	fi
}

# run TAG BIN [ARGS...]: runs BIN into $tmp/TAG.out / .err; fails the test on
# a non-zero exit status.
run() {
	tag=$1
	bin=$2
	shift 2
	"$bin" "$@" >"$tmp/$tag.out" 2>"$tmp/$tag.err" </dev/null
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "FAIL: $(basename "$bin")${*:+ $*} ($tag run) ended with $(describe_status $rc)" >&2
		echo "--- stdout (last 20 lines):" >&2
		tail -n 20 "$tmp/$tag.out" >&2
		echo "--- stderr (last 20 lines):" >&2
		tail -n 20 "$tmp/$tag.err" >&2
		exit 1
	fi
}

# same TAG: the TAG run printed what the reference printed.
same() {
	if ! cmp -s "$tmp/ref.out" "$tmp/$1.out"; then
		echo "FAIL: $cand_name ($1 run) printed something other than $ref_name" \
			"(args: $args)" >&2
		echo "--- diff (- $ref_name, + $cand_name):" >&2
		diff -u "$tmp/ref.out" "$tmp/$1.out" | tail -n +3 | head -n 40 >&2
		exit 1
	fi
}

unset AMEBA_ORACLE
run ref "$ref" "$@"
case $mode in
pair)
	run twin "$cand" "$@"
	same twin
	runs="native pair"
	;;
*)
	run dormant "$cand" "$@"
	same dormant
	runs=dormant
	if [ $mode = both ]; then
		AMEBA_ORACLE="$tmp/oracle.json"
		export AMEBA_ORACLE
		run active "$cand" "$@"
		unset AMEBA_ORACLE
		same active
		if [ ! -s "$tmp/oracle.json" ]; then
			echo "FAIL: $cand_name (active run) wrote no oracle file" \
				"(AMEBA_ORACLE=$tmp/oracle.json, backend ${AMEBA_BACKEND:-count})" >&2
			tail -n 20 "$tmp/active.err" >&2
			exit 1
		fi
		runs="dormant, active (${AMEBA_BACKEND:-count})"
	fi
	;;
esac

echo "OK: $cand_name prints the same $(wc -l <"$tmp/ref.out") line(s) as $ref_name [$runs]"
exit 0
