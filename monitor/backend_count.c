/*
 * backend_count.c - the `count` backend: exact reads and writes per object
 * and thread. No cache model; the ground truth for access counts.
 */
#include "mon.h"

static const int count_metrics[] = { AMEBA_M_MEM_REF, AMEBA_M_READS, AMEBA_M_WRITES };

static void count_access(struct mon_thread *t, struct mon_obj *obj, uint64_t *v,
			 uintptr_t addr, uint32_t sz, unsigned flags, uintptr_t pc)
{
	/* Slots follow count_metrics[]: the table configured at activation. */
	mon_count_add(v, 0, 1);
	if (flags & MON_ACC_READ)
		mon_count_add(v, 1, 1);
	if (flags & MON_ACC_WRITE)
		mon_count_add(v, 2, 1);
}

const struct mon_backend_ops mon_backend_count = {
	.name = "count",
	.metrics = count_metrics,
	.nr_metrics = sizeof(count_metrics) / sizeof(count_metrics[0]),
	.access = count_access,
};
