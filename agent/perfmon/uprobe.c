/*
 * uprobe.c - heap blocks of an outside process through uprobes (see
 * uprobe.h). Not implemented yet: no blocks are reported.
 */
#include <stdlib.h>

#include "uprobe.h"

struct pm_uprobes *pm_uprobes_open(int32_t pid, int nr_cpus, const struct ameba_thread *threads,
				   uint32_t nr_threads)
{
	return NULL;
}

void pm_uprobes_drain(struct pm_uprobes *u)
{
}

void pm_uprobes_objects(struct pm_uprobes *u, const struct pm_extra_obj **out, uint32_t *nr)
{
	*out = NULL;
	*nr = 0;
}

void pm_uprobes_close(struct pm_uprobes *u)
{
}
