/*
 * fold.c - bounded memory: the counts of freed blocks are folded into their
 * site's retired record and the blocks' records recycled
 * (docs/objmap.md, "Freed blocks").
 *
 * Notes:
 *  - Why. A program that allocates without end keeps a small live heap, but
 *    every block it touched left a record (64 bytes) and a counter vector per
 *    thread that touched it (27 words under the sim backend): 10,000,000
 *    allocations cost 2.8 GB. Nothing reads a freed small block's counts
 *    apart from its site bin's, the thread totals and the served counters
 *    (cond.c), which see the same sums when the counts move to a record of
 *    the same site and kind.
 *  - Who may fold. A thread's counter vectors are written by their owner
 *    only (the merger in ordered mode) and its object cache and simulated
 *    core's line tags point at records without a lock; a record may be
 *    reused only when none of those still names it. The object map records
 *    who holds a record (mon_obj.holder: every thread that cached it or made
 *    a vector of it). A record freed by its only holder is folded by that
 *    thread, in its own table; one held by two threads stays (its memory is
 *    what it was before this file).
 *  - When. A freed record waits in the thread's batch; a full batch (and the
 *    thread's end) is folded at once: the object cache and the core's tags
 *    are forgotten (cheap: the batch amortises the misses), then, under
 *    cond.c's lock, each record's vector is added to the retired record's
 *    and dropped, and the record recycled. In ordered mode the merger may
 *    still hold vectors of entries not merged yet: the batch waits until
 *    the thread's log is merged (mon_seq_sync once when it is full).
 *  - Served counters with ranges read an object by its start address: a
 *    record such a counter of the armed set names is kept in the batch
 *    until the next arm (its counts must stay its own meanwhile).
 *  - Off when the oracle is written (it lists every block) or AMEBA_FOLD=0.
 */
#include <stdlib.h>
#include <string.h>

#include "mon.h"
#include "seq.h"

static int fold_off = 1;
static uint64_t nr_folded;	/* atomic */

void mon_fold_init(int off)
{
	const char *e = getenv("AMEBA_FOLD");

	fold_off = off || (e && !strcmp(e, "0"));
}

uint64_t mon_fold_nr_folded(void)
{
	return __atomic_load_n(&nr_folded, __ATOMIC_RELAXED);
}

struct fold_run {
	struct mon_thread *t;
	struct mon_fold *f;
};

/* Under cond.c's lock: folds what may be folded, keeps the rest. */
static void fold_locked(void *arg)
{
	struct fold_run *r = arg;
	struct mon_fold *f = r->f;
	uint32_t kept = 0;

	for (uint32_t i = 0; i < f->nr; i++) {
		struct mon_obj *o = f->dead[i], *ret;
		uint64_t *into;

		if (mon_cond_ranges_name(o) || !(ret = mon_objmap_retired(o->site_id, o->kind)) ||
		    !(into = mon_counts_get(r->t, ret->idx))) {
			f->dead[kept++] = o;
			continue;
		}
		mon_counts_retire(r->t, o->idx, into);
		mon_objmap_recycle(o);
		__atomic_fetch_add(&nr_folded, 1, __ATOMIC_RELAXED);
	}
	f->nr = kept;
}

/* Folds t's batch when nothing still points at its records' vectors. */
static void fold_batch(struct mon_thread *t, struct mon_fold *f, int wait)
{
	struct fold_run r = { .t = t, .f = f };

	if (!f->nr)
		return;
	if (!mon_seq_log_merged(t)) {
		if (!wait)
			return;
		mon_seq_sync();
		if (!mon_seq_log_merged(t))
			return;
	}
	mon_objmap_cache_clear(t);
	mon_backend_sim_forget(t);
	mon_cond_locked(fold_locked, &r);
}

void mon_fold_dead(struct mon_obj *o)
{
	struct mon_thread *t = mon_self;
	struct mon_fold *f;

	/* in_rt 1: the free interposer's own; more, the runtime was busy on
	 * this thread (its cache and tags may be in use): the record stays */
	if (fold_off || !t || t->in_rt != 1 ||
	    __atomic_load_n(&o->holder, __ATOMIC_ACQUIRE) != t->id + 1 ||
	    __atomic_load_n(&t->exited, __ATOMIC_RELAXED))
		return;
	if (!(f = mon_counts_fold_state(t)))
		return;
	if (f->nr == f->cap) {
		fold_batch(t, f, 1);
		if (f->nr == f->cap)
			return;	/* still held: this record stays as it is */
	}
	f->dead[f->nr++] = o;
	if (f->nr == f->cap)
		fold_batch(t, f, 0);
}

void mon_fold_thread_exit(struct mon_thread *t)
{
	struct mon_fold *f;

	if (fold_off || !t->counts || !(f = mon_counts_fold_state(t)) || !f->nr)
		return;
	fold_batch(t, f, 1);
}
