/*
 * objmap_int.h - what the object map's files share (objmap.c: records,
 * range indexes, blocks, stacks, lookup; objmap_globals.c: the globals of
 * the loaded modules). Private to monitor/objmap*.c.
 */
#ifndef AMEBA_OBJMAP_INT_H
#define AMEBA_OBJMAP_INT_H

#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elfsyms.h"
#include "mon.h"

#define LOAD_RLX(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_RLX(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/*
 * Is o a live record containing addr? Returns its seq (never 0) or 0. The
 * answer is a snapshot: obj_mark() confirms the identity.
 */
static inline uint64_t obj_hit(struct mon_obj *o, uintptr_t addr)
{
	uintptr_t start, end;
	uint64_t seq;

	if (!(LOAD_ACQ(&o->flags) & MON_OBJF_LIVE))
		return 0;
	seq = LOAD_RLX(&o->seq);
	start = LOAD_RLX(&o->start);
	end = LOAD_RLX(&o->end);
	return addr - start < end - start ? seq : 0;
}

/* objmap.c */
struct mon_obj *mon_objmap_obj_new(struct mon_obj **free_list, int kind, uintptr_t start,
				   uintptr_t end, size_t sz_bytes, uint32_t site_id,
				   uint32_t thread_id, const char *name);
void mon_objmap_boot(void);
void mon_objmap_kill(struct mon_obj *o);

/* objmap_globals.c */
extern pthread_mutex_t mon_objmap_mod_lock;	/* held across fork */
struct mon_obj *mon_objmap_globals_lookup(uintptr_t a, uint64_t *seq);

#endif
