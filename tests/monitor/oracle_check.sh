#!/usr/bin/env bash
# oracle_check.sh BIN SPEC [ARGS...]: runs an instrumented BIN with
# AMEBA_ORACLE set and checks the oracle file against SPEC with oracle_expect.
set -euo pipefail
bin=$1 spec=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
expect=${ORACLE_EXPECT:?set ORACLE_EXPECT to the oracle_expect binary}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
AMEBA_ORACLE="$out/oracle.json" "$bin" "$@" > "$out/stdout"
[ -s "$out/oracle.json" ] || { echo "oracle_check: $bin wrote no oracle file" >&2; exit 1; }
"$expect" "$out/oracle.json" "$spec"
