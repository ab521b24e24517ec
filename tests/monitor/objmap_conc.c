/*
 * objmap_conc.c - concurrent add / del / lookup on the object map.
 *
 * Slots are owned by one thread each (slot % NR_THREADS), interleaved so
 * that the threads share pages, leaves and stripe locks:
 *   small slots: BASE_CONC + k * 64, 48 bytes        (one leaf entry each)
 *   big slots:   BASE_CONC + 1 GiB + k * 20000, 12000 bytes  (page covers)
 * A thread checks its own slots exactly (its record, or [other] when free)
 * and other threads' slots loosely: [other], or a record of exactly that
 * slot. Lookups alternate between no thread and a thread with an MRU cache.
 */
#include <pthread.h>
#include <string.h>

#include "mon.h"
#include "objmap_conc.h"

#define GiB ((uintptr_t)1 << 30)
#define BASE_CONC ((uintptr_t)0x130000000000ull)
#define FAKE_SITE 0x40000000u	/* no such site: not counted */
#define NR_THREADS 4
#define NR_SLOTS 4096
#define NR_OPS 300000

struct conc_slot {
	uintptr_t start, sz;
	struct mon_obj *obj;	/* owner only */
};

static struct conc_slot conc_slots[2 * NR_SLOTS];
static uint64_t conc_wrong[NR_THREADS];
static pthread_barrier_t conc_barrier;

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static int is_other(const struct mon_obj *o)
{
	return o && o->kind == MON_OBJ_OTHER;
}

static void *conc_thread(void *arg)
{
	uint32_t me = (uint32_t)(uintptr_t)arg;
	uint64_t s = 0x9e3779b97f4a7c15ull * (me + 1), wrong = 0;
	struct mon_thread tt;

	memset(&tt, 0, sizeof(tt));
	/* an id of its own, far from those the registry hands the test's real
	 * threads: objmap.c keeps state per id (the memo), as for a real one */
	tt.id = (1u << 21) + me;
	pthread_barrier_wait(&conc_barrier);
	for (uint32_t n = 0; n < NR_OPS; n++) {
		uint64_t r = rng_next(&s);
		uint32_t k = (uint32_t)(r % (2 * NR_SLOTS));
		struct conc_slot *sl = &conc_slots[k];
		uintptr_t q = sl->start + (r >> 32) % sl->sz;
		struct mon_thread *t = r & (1ull << 20) ? &tt : NULL;
		struct mon_obj *o;

		if (k % NR_THREADS == me) {
			if (sl->obj) {
				o = mon_objmap_lookup(t, q);
				wrong += o != sl->obj;
				mon_objmap_del_block(sl->start);
				sl->obj = NULL;
				wrong += !is_other(mon_objmap_lookup(t, q));
			} else {
				sl->obj = mon_objmap_add_block(MON_OBJ_HEAP, sl->start, sl->sz,
							       FAKE_SITE + k, me);
				wrong += sl->obj == NULL || mon_objmap_lookup(t, q) != sl->obj;
			}
		} else {
			o = mon_objmap_lookup(t, q);
			/* Looked-up records are ACCESSED: never recycled, fields stable. */
			if (!is_other(o))
				wrong += o->start != sl->start || o->end != sl->start + sl->sz ||
					 o->site_id != FAKE_SITE + k;
		}
	}
	conc_wrong[me] = wrong;
	return NULL;
}

uint64_t objmap_conc_run(void)
{
	pthread_t th[NR_THREADS];
	uint64_t wrong = 0;

	for (uint32_t k = 0; k < NR_SLOTS; k++) {
		conc_slots[k].start = BASE_CONC + k * 64;
		conc_slots[k].sz = 48;
		conc_slots[k].obj = NULL;
		conc_slots[NR_SLOTS + k].start = BASE_CONC + GiB + k * 20000;
		conc_slots[NR_SLOTS + k].sz = 12000;
		conc_slots[NR_SLOTS + k].obj = NULL;
	}
	pthread_barrier_init(&conc_barrier, NULL, NR_THREADS);
	for (uintptr_t i = 0; i < NR_THREADS; i++)
		pthread_create(&th[i], NULL, conc_thread, (void *)i);
	for (int i = 0; i < NR_THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&conc_barrier);
	for (int i = 0; i < NR_THREADS; i++)
		wrong += conc_wrong[i];
	/* Everything left is removed; nothing may answer afterwards. */
	for (uint32_t k = 0; k < 2 * NR_SLOTS; k++)
		if (conc_slots[k].obj)
			mon_objmap_del_block(conc_slots[k].start);
	for (uint32_t k = 0; k < 2 * NR_SLOTS; k++)
		wrong += !is_other(mon_objmap_lookup(NULL, conc_slots[k].start + 8));
	return wrong;
}
