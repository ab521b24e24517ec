/*
 * procmap.h - the objects of an outside process, for the out-of-process
 * monitor: /proc/PID/maps plus the ELF symbols of every mapped file.
 */
#ifndef AMEBA_PERFMON_PROCMAP_H
#define AMEBA_PERFMON_PROCMAP_H

#include <stdint.h>

#include "ameba/plugin.h"
#include "pm_elf.h"

struct pm_file {
	char *path;
	uint64_t dev, ino;
	int loaded;		/* ELF read (ok or not) */
	int ok;
	struct pm_elf elf;
};

/* Extra objects (heap blocks seen by uprobes) merged into the map. */
struct pm_extra_obj {
	uintptr_t start, end;
	const char *name, *site;
	uint64_t id;
};

struct pm_procmap {
	int32_t pid;
	struct pm_file *files;
	uint32_t nr_files;
	struct ameba_object *objs;	/* sorted by start, non-overlapping */
	uint32_t nr_objs, cap_objs;
	char *names;			/* generated names of this refresh */
	size_t names_used, names_cap;
	uintptr_t heap_start, heap_end;	/* [heap], 0 when none */
	char exe[512];			/* the executable's path, kept from the
					   last refresh that could read it */
};

/*
 * Rebuilds the object list of m->pid: globals (ELF STT_OBJECT symbols,
 * relocated by each file's load bias), [heap], [stack], and the other
 * anonymous writable mappings; extra objects (heap blocks) replace the
 * part of [heap] or of an anonymous mapping they cover. 0, or -errno
 * (ESRCH: the process is gone).
 */
int pm_procmap_refresh(struct pm_procmap *m, const struct pm_extra_obj *extra,
		       uint32_t nr_extra);
void pm_procmap_free(struct pm_procmap *m);

/* The object holding addr, or NULL. */
const struct ameba_object *pm_procmap_find(const struct pm_procmap *m, uintptr_t addr);

#endif
