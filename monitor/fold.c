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
 *    who holds a record (mon_obj.holder, holder2: the threads that cached
 *    it or made a vector of it, two at most; a third makes it "many",
 *    which stays as before this file). Each holder folds its own part, in
 *    its own table, and clears its slot; the one that clears the last
 *    recycles the record.
 *  - When. A freed record joins the batch of the freeing thread when that
 *    thread holds it, and the inbox of each other live holder (a producer
 *    whose blocks a consumer frees); a thread takes its inbox into its batch
 *    at its allocations and frees once a quarter of it is full. A full
 *    batch (and the thread's end) is folded at once: the object cache and
 *    the core's tags are forgotten (cheap: the batch amortises the misses),
 *    then, under cond.c's lock, each record's vector is added to the
 *    retired record's and dropped. A holder that has ended is folded for
 *    by the freeing thread, in its table under its lock (not in ordered
 *    mode). In ordered mode the merger may still hold vectors of entries
 *    not merged yet: the batch waits until the thread's log is merged
 *    (mon_seq_sync once when it is full). A full inbox, or an ended holder
 *    in ordered mode, leaves the record as it was.
 *  - Served counters with ranges read an object by its start address: a
 *    record such a counter of the armed set names is kept in the batch
 *    until the next arm (its counts must stay its own meanwhile).
 *  - Off when the oracle is written (it lists every block) or AMEBA_FOLD=0.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "mon.h"
#include "seq.h"

static int fold_off = 1;
static uint64_t nr_folded;	/* atomic */
int mon_fold_mail;

/* A thread's inbox: records other threads freed that it holds. Mapped on
 * first use, by thread id in chunks; never freed (a thread id is never
 * reused). The lock also serialises folds for an ended thread. */
#define INBOX_BYTES 8192
#define INBOX_CAP ((INBOX_BYTES - 16) / sizeof(struct mon_obj *))
#define INBOX_CHUNK 1024
#define INBOX_NR_CHUNKS 1024	/* threads 0 .. 1M */

struct fold_inbox {
	int lock;
	uint32_t nr;
	struct mon_obj *r[INBOX_CAP];
};

static struct fold_inbox **inbox_chunks[INBOX_NR_CHUNKS];
static pthread_mutex_t inbox_make_lock = PTHREAD_MUTEX_INITIALIZER;

static void inbox_lock(struct fold_inbox *b)
{
	while (__atomic_exchange_n(&b->lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&b->lock, __ATOMIC_RELAXED))
			sched_yield();	/* held for a few stores, or one fold */
}

static void inbox_unlock(struct fold_inbox *b)
{
	__atomic_store_n(&b->lock, 0, __ATOMIC_RELEASE);
}

/* Thread id's inbox; make: create it. NULL when none (or no memory). */
static struct fold_inbox *inbox_of(uint32_t id, int make)
{
	uint32_t c = id / INBOX_CHUNK, i = id % INBOX_CHUNK;
	struct fold_inbox **chunk, *b;

	if (c >= INBOX_NR_CHUNKS)
		return NULL;
	chunk = __atomic_load_n(&inbox_chunks[c], __ATOMIC_ACQUIRE);
	if (chunk && (b = __atomic_load_n(&chunk[i], __ATOMIC_ACQUIRE)))
		return b;
	if (!make)
		return NULL;
	pthread_mutex_lock(&inbox_make_lock);
	if (!(chunk = inbox_chunks[c])) {
		void *p = mmap(NULL, INBOX_CHUNK * sizeof(*chunk), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p != MAP_FAILED)
			__atomic_store_n(&inbox_chunks[c], chunk = p, __ATOMIC_RELEASE);
	}
	b = chunk ? chunk[i] : NULL;
	if (chunk && !b) {
		void *p = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);

		if (p != MAP_FAILED)
			__atomic_store_n(&chunk[i], b = p, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&inbox_make_lock);
	return b;
}

void mon_fold_init(int off)
{
	const char *e = getenv("AMEBA_FOLD");

	fold_off = off || (e && !strcmp(e, "0"));
}

uint64_t mon_fold_nr_folded(void)
{
	return __atomic_load_n(&nr_folded, __ATOMIC_RELAXED);
}

/* Thread id's part of o is folded: clears its holder slot; the last one
 * recycles the record. */
static void release(struct mon_obj *o, uint32_t id)
{
	uint32_t me = id + 1, h = me;

	if (!__atomic_compare_exchange_n(&o->holder, &h, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		h = me;
		if (!__atomic_compare_exchange_n(&o->holder2, &h, 0, 0, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			return;	/* not ours (cannot happen) */
	}
	if (!__atomic_load_n(&o->holder, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n(&o->holder2, __ATOMIC_ACQUIRE) &&
	    /* both slots empty: only the one that emptied the last gets here
	     * first; the exchange makes it the only one */
	    __atomic_exchange_n(&o->holder2, MON_HOLDER_MANY, __ATOMIC_ACQ_REL) == 0) {
		mon_objmap_recycle(o);	/* obj_new clears the holders */
		__atomic_fetch_add(&nr_folded, 1, __ATOMIC_RELAXED);
	}
}

struct fold_run {
	struct mon_thread *t;
	struct mon_fold *f;
	struct mon_obj *o;		/* fold_for: one record, for an ended thread */
	int done;
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
		release(o, r->t->id);
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

/* Moves t's inbox into its batch (as much as fits). */
static void inbox_take(struct mon_thread *t, struct mon_fold *f)
{
	struct fold_inbox *b = inbox_of(t->id, 0);
	uint32_t n;

	if (!b || !__atomic_load_n(&b->nr, __ATOMIC_RELAXED))
		return;
	inbox_lock(b);
	n = b->nr < f->cap - f->nr ? b->nr : f->cap - f->nr;
	memcpy(f->dead + f->nr, b->r + (b->nr - n), n * sizeof(*b->r));
	f->nr += n;
	b->nr -= n;
	inbox_unlock(b);
}

/* Adds o to t's batch (t the calling thread); folds a full batch. */
static void batch_add(struct mon_thread *t, struct mon_obj *o)
{
	struct mon_fold *f = mon_counts_fold_state(t);

	if (!f)
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

/* Under cond.c's lock: o's part of the ended thread r->t. */
static void fold_for_locked(void *arg)
{
	struct fold_run *r = arg;
	struct mon_obj *ret;

	if (mon_cond_ranges_name(r->o) || !(ret = mon_objmap_retired(r->o->site_id, r->o->kind)))
		return;
	mon_counts_retire_for(r->t, r->o->idx, ret->idx);
	r->done = 1;
}

/* o's part of holder id, which is not the calling thread. */
static void hand_over(struct mon_obj *o, uint32_t id)
{
	struct mon_thread *h = mon_thread_get(id);
	struct fold_inbox *b = inbox_of(id, 1);

	if (!h || !b)
		return;
	inbox_lock(b);
	if (__atomic_load_n(&h->exited, __ATOMIC_ACQUIRE)) {
		/* nobody uses its table, cache or tags any more: fold for it
		 * (not in ordered mode: the merger may still add to them) */
		struct fold_run r = { .t = h, .o = o };

		if (!mon_seq_engaged()) {
			mon_cond_locked(fold_for_locked, &r);
			if (r.done)
				release(o, id);
		}
	} else if (b->nr < INBOX_CAP) {
		b->r[b->nr++] = o;
		if (b->nr == INBOX_CAP / 4)
			__atomic_store_n(&mon_fold_mail, 1, __ATOMIC_RELAXED);
	}
	inbox_unlock(b);
}

void mon_fold_dead(struct mon_obj *o)
{
	struct mon_thread *t = mon_self;
	uint32_t h1, h2;

	/* in_rt 1: the free interposer's own; more, the runtime was busy on
	 * this thread (its cache and tags may be in use): the record stays */
	if (fold_off || !t || t->in_rt != 1 || __atomic_load_n(&t->exited, __ATOMIC_RELAXED))
		return;
	h1 = __atomic_load_n(&o->holder, __ATOMIC_ACQUIRE);
	h2 = __atomic_load_n(&o->holder2, __ATOMIC_ACQUIRE);
	if (h2 == MON_HOLDER_MANY || (!h1 && !h2))
		return;	/* many holders; or none, which no lookup of a thread makes */
	if (h1 && h1 != t->id + 1)
		hand_over(o, h1 - 1);
	if (h2 && h2 != t->id + 1)
		hand_over(o, h2 - 1);
	if (h1 == t->id + 1 || h2 == t->id + 1)
		batch_add(t, o);
	mon_fold_poll(t);
}

void mon_fold_poll(struct mon_thread *t)
{
	struct fold_inbox *b;
	struct mon_fold *f;

	if (fold_off || t->in_rt != 1 || !(b = inbox_of(t->id, 0)) ||
	    __atomic_load_n(&b->nr, __ATOMIC_RELAXED) < INBOX_CAP / 4 || !(f = mon_counts_fold_state(t)))
		return;
	inbox_take(t, f);
	if (f->nr == f->cap)
		fold_batch(t, f, 1);	/* a thread that only allocates folds here */
}

void mon_fold_thread_exit(struct mon_thread *t)
{
	struct mon_fold *f;

	if (fold_off || !t->counts || !(f = mon_counts_fold_state(t)))
		return;
	for (int i = 0; i < 4; i++) {
		inbox_take(t, f);
		if (!f->nr)
			break;
		fold_batch(t, f, 1);
	}
}
