/*
 * fold.c - bounded memory: the counts of freed blocks are folded into their
 * site's retired record and the blocks' records recycled
 * (docs/objmap.md, "Freed blocks").
 *
 * Notes:
 *  - Why. A program that allocates without end keeps a small live heap, but
 *    every block it touched left a record (64 bytes) and a counter vector per
 *    thread that touched it (33 words under the sim backend: 26 metrics,
 *    six outcome slots, a header): 10,000,000
 *    allocations cost 2.8 GB. Nothing reads a freed small block's counts
 *    apart from its site bin's, the thread totals and the served counters
 *    (cond.c), which see the same sums when the counts move to a record of
 *    the same site and kind.
 *  - Who may fold. A thread's counter vectors are written by their owner
 *    only (the merger in ordered mode) and its object cache and simulated
 *    core's line tags point at records without a lock; a record may be
 *    reused only when none of those still names it. The object map records
 *    who holds a record: the threads that cached it or made a vector of it,
 *    the first two in the record (mon_obj.holder, holder2), any more (a
 *    block that passes through a pool shared by many threads) in this
 *    file's list of extra holders, counted in mon_obj.extra, up to
 *    MON_EXTRA_MAX (past that the record stays). Each holder folds its own
 *    part, in its own table, and clears its slot or takes one off the
 *    count; the one that leaves none recycles the record.
 *  - When. A freed record joins the batch of the freeing thread when that
 *    thread holds it, and the inbox of each other live holder (a producer
 *    whose blocks a consumer frees); a thread takes its inbox into its batch
 *    at its allocations, its frees and the access path's slow path (a
 *    thread that only reads the blocks others free) once a quarter of it is
 *    full. A full
 *    batch (and the thread's end) is folded at once: the object cache and
 *    the core's tags are forgotten (cheap: the batch amortises the misses),
 *    then, under cond.c's lock, each record's vector is added to the
 *    retired record's and dropped. A holder that has ended is folded for
 *    by the freeing thread, in its table under its lock. In ordered mode
 *    the merger may still hold vectors of entries not merged yet: the
 *    batch waits until the thread's log is merged (mon_seq_sync once when
 *    it is full); what an ended thread left in its batch or inbox is
 *    folded by the merger once it merged the thread's exit, and from then
 *    on an ended holder is folded for as in host order. A full inbox
 *    leaves the record as it was.
 *  - An ended thread's fold state (8 KiB) is unmapped once empty; its
 *    counter table stays (its rows and per-object counts are still read).
 *  - Served counters with ranges read an object by its start address: a
 *    record such a counter of the armed set names is kept in the batch
 *    until the next arm (its counts must stay its own meanwhile).
 *  - Off when the oracle is written (it lists every block) or AMEBA_FOLD=0.
 */
#include <pthread.h>
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
	int lock;		/* mon_spin_lock: a few stores, or one fold */
	uint32_t nr;
	struct mon_obj *r[INBOX_CAP];
};

/* Ordered mode: thread id's log is merged to its end, its counts are
 * final (a bit per thread id; set by the merger, read under the inbox's
 * lock). */
static uint64_t merged_bits[INBOX_CHUNK * INBOX_NR_CHUNKS / 64];

static int merged(uint32_t id)
{
	return id < INBOX_CHUNK * INBOX_NR_CHUNKS &&
	       (__atomic_load_n(&merged_bits[id / 64], __ATOMIC_SEQ_CST) >> (id % 64) & 1);
}

static struct fold_inbox **inbox_chunks[INBOX_NR_CHUNKS];
static pthread_mutex_t inbox_make_lock = PTHREAD_MUTEX_INITIALIZER;

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

/*
 * Extra holders: (record idx, thread id) nodes in chains hashed by idx,
 * striped by idx; nodes in chunks mapped on first use and reused through a
 * free list. A record's nodes are added by its holders while it is live
 * and all taken at once by the thread that frees it, so that a node's
 * life never overlaps the record's recycling.
 */
#define XH_STRIPES 64
#define XH_BUCKETS 1024		/* per stripe */
#define XH_CHUNK 4096		/* nodes per mapping */
#define XH_NR_CHUNKS 1024	/* per stripe: 4M nodes */

struct xh_node {
	uint32_t idx, id;
	uint32_t next;		/* node ref (below), 0: end */
};

struct xh_stripe {
	int lock;
	uint32_t free;		/* free list (node refs), 0: empty */
	uint32_t nr_refs;	/* refs made so far: 1 .. nr_refs */
	uint32_t head[XH_BUCKETS];
	struct xh_node *chunk[XH_NR_CHUNKS];
};

static struct xh_stripe *xh_stripes;	/* mapped on first use (atomic) */

static struct xh_stripe *xh_stripe_of(uint32_t idx)
{
	struct xh_stripe *x = __atomic_load_n(&xh_stripes, __ATOMIC_ACQUIRE);

	if (!x) {
		void *p = mmap(NULL, XH_STRIPES * sizeof(*x), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return NULL;
		if (!__atomic_compare_exchange_n(&xh_stripes, &x, p, 0, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			munmap(p, XH_STRIPES * sizeof(*x));	/* another thread's won */
		else
			x = p;
	}
	return &x[idx % XH_STRIPES];
}

static uint32_t *xh_head(struct xh_stripe *s, uint32_t idx)
{
	return &s->head[(idx / XH_STRIPES) % XH_BUCKETS];
}

static struct xh_node *xh_node(struct xh_stripe *s, uint32_t ref)
{
	return &s->chunk[(ref - 1) / XH_CHUNK][(ref - 1) % XH_CHUNK];
}

/* Under s's lock: a free node's ref, 0 when out of memory. */
static uint32_t xh_alloc(struct xh_stripe *s)
{
	uint32_t ref = s->free;

	if (ref) {
		s->free = xh_node(s, ref)->next;
		return ref;
	}
	if (s->nr_refs % XH_CHUNK == 0) {
		uint32_t c = s->nr_refs / XH_CHUNK;
		void *p;

		if (c >= XH_NR_CHUNKS)
			return 0;
		p = mmap(NULL, XH_CHUNK * sizeof(struct xh_node), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return 0;
		s->chunk[c] = p;
	}
	return ++s->nr_refs;
}

void mon_fold_hold_more(struct mon_obj *o, uint32_t id)
{
	struct xh_stripe *s;
	uint32_t *head, ref;
	uint16_t n = __atomic_load_n(&o->extra, __ATOMIC_ACQUIRE);

	if (n == MON_EXTRA_SAT)
		return;
	/* only heap and mmap records are ever folded */
	if (fold_off || (o->kind != MON_OBJ_HEAP && o->kind != MON_OBJ_MMAP) ||
	    !(s = xh_stripe_of(o->idx))) {
		__atomic_store_n(&o->extra, MON_EXTRA_SAT, __ATOMIC_RELEASE);
		return;
	}
	head = xh_head(s, o->idx);
	mon_spin_lock(&s->lock);
	for (ref = *head; ref; ref = xh_node(s, ref)->next)
		if (xh_node(s, ref)->idx == o->idx && xh_node(s, ref)->id == id)
			break;
	n = __atomic_load_n(&o->extra, __ATOMIC_ACQUIRE);
	if (!ref && n != MON_EXTRA_SAT) {
		if (n >= MON_EXTRA_MAX || !(ref = xh_alloc(s))) {
			__atomic_store_n(&o->extra, MON_EXTRA_SAT, __ATOMIC_RELEASE);
		} else {
			struct xh_node *x = xh_node(s, ref);

			x->idx = o->idx;
			x->id = id;
			x->next = *head;
			*head = ref;
			__atomic_add_fetch(&o->extra, 1, __ATOMIC_SEQ_CST);
		}
	}
	mon_spin_unlock(&s->lock);
}

/* Takes record idx's extra holders off the list: their ids in ids[] (at
 * most MON_EXTRA_MAX); returns how many. */
static uint32_t xh_take(uint32_t idx, uint32_t *ids)
{
	struct xh_stripe *s = xh_stripe_of(idx);
	uint32_t *link, ref, n = 0;

	if (!s)
		return 0;
	mon_spin_lock(&s->lock);
	link = xh_head(s, idx);
	while ((ref = *link)) {
		struct xh_node *x = xh_node(s, ref);

		if (x->idx != idx) {
			link = &x->next;
			continue;
		}
		if (n < MON_EXTRA_MAX)
			ids[n++] = x->id;
		*link = x->next;
		x->next = s->free;
		s->free = ref;
	}
	mon_spin_unlock(&s->lock);
	return n;
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

/* Thread id's part of o is folded: clears its holder slot, or takes one
 * off the extra holders; the one that leaves none recycles the record. */
static void release(struct mon_obj *o, uint32_t id)
{
	uint32_t me = id + 1, h = me;

	/* sequentially consistent, so that of two last holders at least one
	 * sees the other's part gone */
	if (!__atomic_compare_exchange_n(&o->holder, &h, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
		h = me;
		if (!__atomic_compare_exchange_n(&o->holder2, &h, 0, 0, __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST))
			__atomic_sub_fetch(&o->extra, 1, __ATOMIC_SEQ_CST);
	}
	if (!__atomic_load_n(&o->holder, __ATOMIC_SEQ_CST) &&
	    !__atomic_load_n(&o->holder2, __ATOMIC_SEQ_CST) &&
	    !__atomic_load_n(&o->extra, __ATOMIC_SEQ_CST) &&
	    /* none left: two releasers may both see that; the exchange picks
	     * one */
	    __atomic_exchange_n(&o->holder2, MON_HOLDER_MANY, __ATOMIC_SEQ_CST) == 0) {
		mon_objmap_recycle(o);	/* obj_new clears the holders */
		__atomic_fetch_add(&nr_folded, 1, __ATOMIC_RELAXED);
	}
}

struct fold_run {
	struct mon_thread *t;
	struct mon_obj **list;		/* records whose t's parts are folded */
	uint32_t nr;			/* in list; fold_list leaves those it could not fold */
};

/* Under cond.c's lock: r->t's parts of the records in r->list. */
static void fold_list_locked(void *arg)
{
	struct fold_run *r = arg;
	uint32_t kept = 0;

	for (uint32_t i = 0; i < r->nr; i++) {
		struct mon_obj *o = r->list[i], *ret;

		/* kept: named by a served counter's ranges, or out of memory */
		if (mon_cond_ranges_name(o) || !(ret = mon_objmap_retired(o->site_id, o->kind)) ||
		    mon_counts_retire(r->t, o->idx, ret->idx) < 0) {
			r->list[kept++] = o;
			continue;
		}
		release(o, r->t->id);
	}
	r->nr = kept;
}

/*
 * Folds t's parts of the nr records in list (t the calling thread, or an
 * ended one nobody else folds for meanwhile); returns how many are left,
 * at the start of list: a record a served counter's ranges name waits for
 * the next arm.
 */
static uint32_t fold_list(struct mon_thread *t, struct mon_obj **list, uint32_t nr)
{
	struct fold_run r = { .t = t, .list = list, .nr = nr };

	if (nr)
		mon_cond_locked(fold_list_locked, &r);
	return r.nr;
}

/* Folds t's batch when nothing still points at its records' vectors. */
static void fold_batch(struct mon_thread *t, struct mon_fold *f, int wait)
{
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
	f->nr = fold_list(t, f->dead, f->nr);
}

/* Moves t's inbox into its batch (as much as fits). */
static void inbox_take(struct mon_thread *t, struct mon_fold *f)
{
	struct fold_inbox *b = inbox_of(t->id, 0);
	uint32_t n;

	if (!b || !__atomic_load_n(&b->nr, __ATOMIC_RELAXED))
		return;
	mon_spin_lock(&b->lock);
	n = b->nr < f->cap - f->nr ? b->nr : f->cap - f->nr;
	memcpy(f->dead + f->nr, b->r + (b->nr - n), n * sizeof(*b->r));
	f->nr += n;
	b->nr -= n;
	mon_spin_unlock(&b->lock);
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

/* o's part of holder id, which is not the calling thread. */
static void hand_over(struct mon_obj *o, uint32_t id)
{
	struct mon_thread *h = mon_thread_get(id);
	struct fold_inbox *b = inbox_of(id, 1);

	if (!h || !b)
		return;
	mon_spin_lock(&b->lock);
	/* the fence pairs with mon_fold_thread_merged's: either it sees this
	 * inbox or this sees its bit */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (merged(id) || (__atomic_load_n(&h->exited, __ATOMIC_ACQUIRE) && !mon_seq_engaged())) {
		/* nobody uses its table, cache or tags any more, nor will
		 * the merger: fold for it */
		fold_list(h, &o, 1);
	} else if (b->nr < INBOX_CAP) {
		/* a live thread takes it; an ended one's is folded once
		 * ordered mode merged its log (mon_fold_thread_merged) */
		b->r[b->nr++] = o;
		if (b->nr == INBOX_CAP / 4)
			__atomic_store_n(&mon_fold_mail, 1, __ATOMIC_RELAXED);
	}
	mon_spin_unlock(&b->lock);
}

void mon_fold_dead(struct mon_obj *o)
{
	struct mon_thread *t = mon_self;
	uint32_t h1, h2, ids[MON_EXTRA_MAX], nr_ids = 0, me;
	uint16_t extra;
	int mine;

	if (fold_off)
		return;
	/* the extra holders' list is emptied whatever happens next */
	extra = __atomic_load_n(&o->extra, __ATOMIC_ACQUIRE);
	if (extra)
		nr_ids = xh_take(o->idx, ids);
	/* in_rt 1: the free interposer's own; more, the runtime was busy on
	 * this thread (its cache and tags may be in use): the record stays */
	if (!t || t->in_rt != 1 || __atomic_load_n(&t->exited, __ATOMIC_RELAXED) ||
	    extra == MON_EXTRA_SAT || nr_ids != extra)
		return;
	h1 = __atomic_load_n(&o->holder, __ATOMIC_ACQUIRE);
	h2 = __atomic_load_n(&o->holder2, __ATOMIC_ACQUIRE);
	if (h2 == MON_HOLDER_MANY || (!h1 && !h2))
		return;	/* never folded; or no holder, which no lookup of a thread makes */
	me = t->id + 1;
	mine = h1 == me || h2 == me;
	if (h1 && h1 != me)
		hand_over(o, h1 - 1);
	if (h2 && h2 != me)
		hand_over(o, h2 - 1);
	for (uint32_t i = 0; i < nr_ids; i++)
		if (ids[i] == t->id)
			mine = 1;
		else
			hand_over(o, ids[i]);
	if (mine)
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
	struct fold_inbox *b = inbox_of(t->id, 0);
	struct mon_fold *f;

	/* no fold state is made for an empty inbox */
	if (fold_off || !t->counts ||
	    !(f = b && __atomic_load_n(&b->nr, __ATOMIC_ACQUIRE) ? mon_counts_fold_state(t)
								 : mon_counts_fold_peek(t)))
		return;
	for (int i = 0; i < 4; i++) {
		inbox_take(t, f);
		if (!f->nr)
			break;
		fold_batch(t, f, 1);
	}
	/* in ordered mode what is left waits for mon_fold_thread_merged */
	mon_counts_fold_end(t);
}

void mon_fold_thread_merged(struct mon_thread *t)
{
	struct fold_inbox *b;
	struct mon_fold *f;

	if (fold_off || t->id >= INBOX_CHUNK * INBOX_NR_CHUNKS)
		return;
	__atomic_or_fetch(&merged_bits[t->id / 64], (uint64_t)1 << (t->id % 64), __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* with its inbox's lock held, if it has one: no hand_over is folding
	 * for t meanwhile */
	if ((b = inbox_of(t->id, 0))) {
		mon_spin_lock(&b->lock);
		b->nr = fold_list(t, b->r, b->nr);
	}
	if ((f = mon_counts_fold_peek(t))) {
		f->nr = fold_list(t, f->dead, f->nr);
		mon_counts_fold_end(t);
	}
	if (b)
		mon_spin_unlock(&b->lock);
}
