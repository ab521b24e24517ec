/*
 * uprobe.h - heap blocks of an outside process through uprobes on the
 * malloc family of the C library it maps (perf uprobe PMU).
 */
#ifndef AMEBA_PERFMON_UPROBE_H
#define AMEBA_PERFMON_UPROBE_H

#include <stdint.h>

#include "ameba/plugin.h"
#include "procmap.h"

struct pm_uprobes;

/* The path of the C library pid maps (from /proc/PID/maps): 0 or -errno. */
int pm_find_libc(int32_t pid, char *path, size_t len);

/*
 * Opens entry probes (malloc, calloc, realloc, free) and return probes
 * (malloc, calloc, realloc) on the libc of pid, per thread; never
 * inherited (see uprobe.c). NULL when the probes cannot be opened (the monitor then runs
 * without heap blocks: they stay in [heap] / anonymous mappings).
 */
struct pm_uprobes *pm_uprobes_open(int32_t pid, int nr_cpus, const struct ameba_thread *threads,
				   uint32_t nr_threads);
/* Opens the probes on the threads not probed yet. */
void pm_uprobes_sync(struct pm_uprobes *u, const struct ameba_thread *threads, uint32_t nr);
/* Reads the probes' rings and updates the live blocks. */
void pm_uprobes_drain(struct pm_uprobes *u);
/* The live blocks allocated since attach, as extra objects for procmap. */
void pm_uprobes_objects(struct pm_uprobes *u, const struct pm_extra_obj **out, uint32_t *nr);
void pm_uprobes_close(struct pm_uprobes *u);

#endif
