/*
 * backend_count.c - the `count` backend: exact reads and writes per object
 * and thread. No cache model; the ground truth for access counts.
 */
#include "mon.h"

static const int count_metrics[] = { AMEBA_M_MEM_REF, AMEBA_M_READS, AMEBA_M_WRITES };

static void count_access(struct mon_thread *t, struct mon_obj *obj, uintptr_t addr, uint32_t sz,
			 unsigned flags, uintptr_t pc, struct mon_events *ev)
{
	mon_ev_add(ev, AMEBA_M_MEM_REF, 1);
	if (flags & MON_ACC_READ)
		mon_ev_add(ev, AMEBA_M_READS, 1);
	if (flags & MON_ACC_WRITE)
		mon_ev_add(ev, AMEBA_M_WRITES, 1);
}

const struct mon_backend_ops mon_backend_count = {
	.name = "count",
	.metrics = count_metrics,
	.nr_metrics = sizeof(count_metrics) / sizeof(count_metrics[0]),
	.access = count_access,
};
