#!/usr/bin/env bash
# batch.sh REST KEEP BIN[:ARG]...: the access batch (monitor/batch.c) against the hooks
# delivering each access (AMEBA_SIM_BATCH=0): every BIN (run with ARG, if
# given) writes the same oracle counts both ways - every metric of every
# object and thread - and the same output, under the bench geometry
# (bench/sim_validate/cachegrind.conf, a lean path's: the batch runs only
# on those) with the TLB model on and off; and the batch is what ran (gdb
# stops in its loop by default, never with AMEBA_SIM_BATCH=0 or under
# skylake-sp, whose two nodes no lean kind takes; lean_l2_3c.sh runs it with
# an L2). ASLR off (setarch -R) and environments of one
# size, so that both runs see the same addresses. The batch never rests
# there (AMEBA_SIM_BATCH_MISS=100: every record through its loop); the
# policy last: with the default, a batch of mostly misses rests (REST, a
# program of L1 misses) and one of few misses does not (KEEP), and the
# counts stay the same through the batch going off and on (REST).
#
# usage: batch.sh REST KEEP BIN[:ARG]...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=oracle_lib.sh
. "$here/oracle_lib.sh"
bench_setup

status=0
rest=$1 keep=$2
shift 2
for spec in "$@"; do
	parse_spec "$spec"
	export AMEBA_SIM_BATCH_MISS=100
	expect_ran hit mon_batch_flush "the batch never ran by default" AMEBA_SIM_BATCH= || status=1
	expect_ran "not hit" mon_batch_flush "AMEBA_SIM_BATCH=0 ran the batch" \
		AMEBA_SIM_BATCH=0 || status=1
	expect_ran "not hit" mon_batch_flush "the batch ran with two nodes" \
		AMEBA_SIM_BATCH=1 AMEBA_PRESET=skylake-sp || status=1
	same_both_ways AMEBA_SIM_BATCH batch || status=1
done
unset AMEBA_SIM_BATCH_MISS
parse_spec "$rest"
expect_ran hit batch_rest "a batch of mostly misses did not rest" AMEBA_SIM_BATCH=1 || status=1
expect_ran "not hit" batch_rest "AMEBA_SIM_BATCH_MISS=100 rested" \
	AMEBA_SIM_BATCH=1 AMEBA_SIM_BATCH_MISS=100 || status=1
same_both_ways AMEBA_SIM_BATCH "batch, resting" || status=1
parse_spec "$keep"
expect_ran "not hit" batch_rest "a batch of few misses rested" AMEBA_SIM_BATCH=1 || status=1
expect_ran hit batch_rest "AMEBA_SIM_BATCH_MISS=0 did not rest" \
	AMEBA_SIM_BATCH=1 AMEBA_SIM_BATCH_MISS=0 || status=1
exit $status
