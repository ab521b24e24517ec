#!/usr/bin/env bash
# batch.sh BIN[:ARG]...: the access batch (monitor/batch.c) against the hooks
# delivering each access (AMEBA_SIM_BATCH=0, the default): every BIN (run with ARG, if
# given) writes the same oracle counts both ways - every metric of every
# object and thread - and the same output, under the bench geometry
# (bench/sim_validate/cachegrind.conf, the lean path's: the batch runs only
# on it) with the TLB model on and off; and the batch is what ran (gdb
# stops in its loop by default, never with AMEBA_SIM_BATCH=0 or under a
# geometry with an L2). ASLR off (setarch -R) and environments of one
# size, so that both runs see the same addresses.
set -euo pipefail
command -v gdb >/dev/null || { echo "batch: gdb not found (apt-get install gdb)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
bench_conf=$here/../../bench/sim_validate/cachegrind.conf
export AMEBA_BACKEND=sim AMEBA_PRESET=$bench_conf AMEBA_SIM_3C=0
# shellcheck source=oracle_lib.sh
. "$here/oracle_lib.sh"

status=0
for spec in "$@"; do
	parse_spec "$spec"
	expect_ran hit mon_batch_flush "the batch never ran" AMEBA_SIM_BATCH=1 || status=1
	expect_ran "not hit" mon_batch_flush "AMEBA_SIM_BATCH=0 ran the batch" \
		AMEBA_SIM_BATCH=0 || status=1
	expect_ran "not hit" mon_batch_flush "the batch ran with an L2" \
		AMEBA_SIM_BATCH=1 AMEBA_PRESET=skylake-sp || status=1
	same_both_ways AMEBA_SIM_BATCH batch || status=1
done
exit $status
