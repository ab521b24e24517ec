/*
 * objmap.c - address -> object: globals, heap and mmap blocks, thread stacks
 * and TLS, and the single "[other]" record.
 *
 * Notes (concurrency design):
 *  - Records (struct mon_obj) live in a two-level table of fixed chunks that
 *    never moves; a fresh index is one atomic fetch-add. A record is
 *    published by storing MON_OBJF_LIVE with release after its fields, and is
 *    the ground truth: every index below is only a hint that must never *miss*
 *    a live block, so each candidate is re-checked against its record (LIVE,
 *    start <= addr < end). Records are type-stable memory (never freed), so a
 *    stale pointer is always safe to read.
 *  - Freed heap/mmap records that were never ACCESSED are recycled. ACCESSED is
 *    set by a CAS that requires LIVE, and a free clears LIVE by CAS, so the
 *    two are ordered; a lookup re-reads seq after its CAS, so it can never
 *    hand out a recycled record under an old identity. An ACCESSED record is
 *    never recycled: that is what makes the per-thread MRU cache safe with a
 *    LIVE check alone.
 *  - Heap/mmap blocks, stacks and TLS blocks each have a range index: a radix
 *    tree over the 48-bit address space (4 levels of 512 slots, like a page
 *    table) whose leaves describe one 4 KiB page each: a sorted array of the
 *    blocks *starting* in that page. A block reaching into later pages is
 *    also hung as a "cover" on the fewest slots (leaf pages or whole 2 MiB /
 *    1 GiB / 512 GiB subtrees) whose start it contains; since live blocks of
 *    one index do not overlap, a slot has at most one cover. A lookup walks
 *    root to leaf, checks the covers it passes, then binary-searches the leaf.
 *  - Writers of a page take that page's stripe lock (512 stripes per index,
 *    hashed by page number): there is no global lock. Readers take no lock:
 *    each leaf is a seqlock, and a leaf that grows is replaced (published
 *    with release) and the old one retired with an odd sequence into a pool
 *    of type-stable leaves. Interior nodes are installed by CAS and never
 *    freed. Covers are single pointer stores (set) and CAS (clear).
 *  - Globals are immutable sorted arrays per module inside an immutable
 *    module set, published by one pointer; dlopen/dlclose build a new set
 *    under a mutex. Old sets are leaked deliberately: a reader may still be
 *    walking one, and they are a few pointers per module per dlopen.
 *
 * Other assumptions:
 *  - A freed-and-reused address always gets a new record and a new seq.
 *  - munmap of part of an mmap block ends that object and creates new
 *    objects (new seq, same site) for the parts that stay mapped.
 *  - Tolerated inconsistencies: a block whose free was never seen is dropped
 *    when a new block starts at the same address or inside it on the same
 *    page; anything else it overlaps keeps answering for its own range.
 *  - Addresses at or above 2^48 are not indexed (they resolve to [other]).
 */
#include "objmap_int.h"

/* ------------------------------------------------------------------------ */
/* Records                                                                  */
/* ------------------------------------------------------------------------ */

#define OBJ_CHUNK_SHIFT 14
#define OBJ_CHUNK (1u << OBJ_CHUNK_SHIFT)
#define OBJ_NR_CHUNKS ((1u << (32 - OBJ_CHUNK_SHIFT)) - 1)	/* idx < 2^32 - 2^14 */
#define OBJ_LIMIT (OBJ_NR_CHUNKS * OBJ_CHUNK)

static struct mon_obj *obj_chunks[OBJ_NR_CHUNKS];
static uint32_t obj_nr;		/* indices handed out (atomic) */
static uint64_t obj_nr_killed;	/* records that stopped being live (atomic) */
static uint64_t obj_seq;	/* last allocation sequence number (atomic) */
static struct mon_obj *other_obj;	/* idx 0, "[other]" */
static uintptr_t page_mask;	/* run-time page size - 1 */

static const char *const kind_names[MON_OBJ_NR_KINDS] = {
	[MON_OBJ_GLOBAL] = "global",
	[MON_OBJ_HEAP] = "heap",
	[MON_OBJ_MMAP] = "mmap",
	[MON_OBJ_STACK] = "stack",
	[MON_OBJ_TLS] = "tls",
	[MON_OBJ_OTHER] = "other",
};

const char *mon_obj_kind_name(int kind)
{
	if (kind < 0 || kind >= MON_OBJ_NR_KINDS)
		return "?";
	return kind_names[kind];
}

uint64_t mon_objmap_nr_killed(void)
{
	return LOAD_ACQ(&obj_nr_killed);
}

uint32_t mon_objmap_nr_objs(void)
{
	uint32_t nr = LOAD_ACQ(&obj_nr);

	return nr < OBJ_LIMIT ? nr : OBJ_LIMIT;
}

/*
 * Record idx, or NULL when its chunk does not exist (out of range, or the
 * chunk could not be allocated). A record with idx < nr_objs whose flags are
 * still 0 is being built or waits for recycling; it has no counts.
 */
struct mon_obj *mon_objmap_get(uint32_t idx)
{
	struct mon_obj *chunk;

	if (idx >= OBJ_LIMIT)
		return NULL;
	chunk = LOAD_ACQ(&obj_chunks[idx >> OBJ_CHUNK_SHIFT]);
	return chunk ? &chunk[idx & (OBJ_CHUNK - 1)] : NULL;
}

/* A fresh record slot with its idx set, or NULL. Lock-free. */
static struct mon_obj *obj_fresh(void)
{
	uint32_t idx = __atomic_fetch_add(&obj_nr, 1, __ATOMIC_RELAXED);
	struct mon_obj **slot, *chunk, *fresh;

	if (idx >= OBJ_LIMIT)
		return NULL;
	slot = &obj_chunks[idx >> OBJ_CHUNK_SHIFT];
	chunk = LOAD_ACQ(slot);
	if (!chunk) {
		fresh = mon_calloc(OBJ_CHUNK, sizeof(*fresh));
		if (!fresh)
			return NULL;	/* the index stays unused */
		if (__atomic_compare_exchange_n(slot, &chunk, fresh, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			chunk = fresh;
		else
			mon_free(fresh);
	}
	chunk[idx & (OBJ_CHUNK - 1)].idx = idx;
	return &chunk[idx & (OBJ_CHUNK - 1)];
}

/*
 * Dead recyclable records are chained through their name field (unused by
 * heap and mmap records), on the free list of a heap index stripe.
 */
static inline struct mon_obj *obj_free_next(struct mon_obj *o)
{
	return (struct mon_obj *)(uintptr_t)o->name;
}

/*
 * Fills and publishes a record: from *free_list when one is given and not
 * empty, else fresh. Returns NULL when out of memory.
 */
struct mon_obj *mon_objmap_obj_new(struct mon_obj **free_list, int kind, uintptr_t start,
				   uintptr_t end, size_t sz_bytes, uint32_t site_id,
				   uint32_t thread_id, const char *name)
{
	struct mon_obj *o;

	if (free_list && *free_list) {
		o = *free_list;
		*free_list = obj_free_next(o);
	} else {
		o = obj_fresh();
		if (!o)
			return NULL;
	}
	/* While flags == 0 no reader trusts these fields (see obj_hit). */
	o->kind = (uint8_t)kind;
	o->site_id = site_id;
	o->thread_id = thread_id;
	STORE_RLX(&o->holder, 0);
	STORE_RLX(&o->holder2, 0);
	STORE_RLX(&o->extra, 0);
	o->sz_bytes = sz_bytes;
	o->name = name;
	STORE_RLX(&o->seq, __atomic_add_fetch(&obj_seq, 1, __ATOMIC_RELAXED));
	STORE_RLX(&o->start, start);
	STORE_RLX(&o->end, end);
	STORE_REL(&o->flags, (uint8_t)MON_OBJF_LIVE);
	return o;
}

enum { KILL_KEEP, KILL_RECYCLE, KILL_FOLD };

void (*mon_obj_dead_hook)(const struct mon_obj *o);

/* Clears LIVE (and calls mon_obj_dead_hook for a record that was accessed).
 * Returns KILL_RECYCLE when the record may be recycled at once
 * (it was live and never accessed), KILL_FOLD when it may be once its counts
 * are folded (fold.c: an accessed heap block, or an anonymous mapping; a
 * file's view must stay readable, see mri_server.c), else KILL_KEEP. */
static int obj_kill(struct mon_obj *o)
{
	uint8_t f = LOAD_RLX(&o->flags);
	void (*dead)(const struct mon_obj *);

	do {
		if (!(f & MON_OBJF_LIVE))
			return KILL_KEEP;
	} while (!__atomic_compare_exchange_n(&o->flags, &f, (uint8_t)(f & ~MON_OBJF_LIVE), 0,
					      __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
	__atomic_fetch_add(&obj_nr_killed, 1, __ATOMIC_RELEASE);
	/* (a record never accessed is in no cache) */
	if ((f & MON_OBJF_ACCESSED) && (dead = __atomic_load_n(&mon_obj_dead_hook, __ATOMIC_ACQUIRE)))
		dead(o);
	if (o->kind != MON_OBJ_HEAP && o->kind != MON_OBJ_MMAP)
		return KILL_KEEP;
	if (!(f & MON_OBJF_ACCESSED))
		return KILL_RECYCLE;
	return o->kind == MON_OBJ_HEAP || !o->name ? KILL_FOLD : KILL_KEEP;
}

/*
 * Sets ACCESSED on o if it is still live and still incarnation seq. Returns 0,
 * or -1 when the lookup must be redone (freed or recycled meanwhile; a
 * recycled record may then carry ACCESSED without need, which only stops its
 * recycling).
 */
static inline int obj_mark(struct mon_obj *o, uint64_t seq)
{
	uint8_t f = LOAD_ACQ(&o->flags);

	for (;;) {
		if (!(f & MON_OBJF_LIVE))
			return -1;
		if (f & MON_OBJF_ACCESSED)
			break;
		if (__atomic_compare_exchange_n(&o->flags, &f, (uint8_t)(f | MON_OBJF_ACCESSED), 0,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			break;
	}
	return LOAD_RLX(&o->seq) == seq ? 0 : -1;
}

/* ------------------------------------------------------------------------ */
/* Range indexes                                                            */
/* ------------------------------------------------------------------------ */

#define RX_PAGE_SHIFT 12
#define RX_BITS 9
#define RX_FANOUT (1u << RX_BITS)
#define RX_LEVELS 4		/* node levels 3 (root) .. 0 (slots = pages) */
#define RX_LIMIT ((uintptr_t)1 << (RX_PAGE_SHIFT + RX_LEVELS * RX_BITS))
#define RX_STRIPE_BITS 9
#define RX_NR_STRIPES (1u << RX_STRIPE_BITS)
#define RX_LEAF_MIN_CAP 4
#define RX_LEAF_NR_CLASSES 11	/* capacities 4 .. 4096 entries */

struct rx_slot {
	void *child;		/* struct rx_node, or at level 0 struct rx_leaf */
	struct mon_obj *cover;	/* the block containing this slot's start, if it began earlier */
};

struct rx_node {
	struct rx_slot slot[RX_FANOUT];
};

/*
 * The blocks starting in one page, sorted by start. Entry i is the block at
 * page offset off[i] with record obj[i]: the offsets are a dense array of
 * their own so that the binary search touches one or two cache lines (with
 * 16-byte (start, obj) pairs it took several misses and dominated the
 * lookup: 400 ns -> see bench/objmap_lookup.c). seq is a seqlock: odd while
 * being written and while retired. cap, cls and obj never change for one
 * piece of memory (the pool is per class).
 */
struct rx_leaf {
	uint32_t seq;
	uint32_t nr;
	uint32_t cap;
	uint32_t cls;
	uintptr_t page;		/* page number (addr >> RX_PAGE_SHIFT) this leaf describes */
	struct rx_leaf *next_free;
	struct mon_obj **obj;	/* cap records, after off[] in the same allocation */
	uint16_t off[];		/* cap page offsets, ascending */
};

#define RX_PAGE_MASK ((((uintptr_t)1) << RX_PAGE_SHIFT) - 1)

struct rx_stripe {
	int lock;
	struct mon_obj *free_objs;	/* recyclable records (heap index) */
} __attribute__((aligned(64)));

struct rx_index {
	struct rx_node root;
	struct rx_stripe stripe[RX_NR_STRIPES];
};

static struct rx_index heap_ix, stack_ix, tls_ix;

/* Retired leaves by class: type-stable memory, reused, never freed. */
static struct rx_leaf *leaf_pool[RX_LEAF_NR_CLASSES];
static int leaf_pool_lock;

static inline unsigned rx_shift(int level)
{
	return RX_PAGE_SHIFT + RX_BITS * (unsigned)level;
}

static inline unsigned rx_slot_idx(uintptr_t a, int level)
{
	return (unsigned)(a >> rx_shift(level)) & (RX_FANOUT - 1);
}

static inline struct rx_stripe *rx_stripe_of(struct rx_index *ix, uintptr_t a)
{
	uint64_t h = (uint64_t)(a >> RX_PAGE_SHIFT) * 0x9e3779b97f4a7c15ull;

	return &ix->stripe[h >> (64 - RX_STRIPE_BITS)];
}

/*
 * The node at `level` whose slots cover a (level 0: slots are pages). With
 * create, missing interior nodes are installed by CAS. NULL when absent or
 * out of memory.
 */
static struct rx_node *rx_node_at(struct rx_index *ix, uintptr_t a, int level, int create)
{
	struct rx_node *n = &ix->root;

	for (int l = RX_LEVELS - 1; l > level; l--) {
		struct rx_slot *s = &n->slot[rx_slot_idx(a, l)];
		struct rx_node *c = LOAD_ACQ((struct rx_node **)&s->child);

		if (!c) {
			struct rx_node *fresh;

			if (!create)
				return NULL;
			fresh = mon_calloc(1, sizeof(*fresh));
			if (!fresh)
				return NULL;
			if (__atomic_compare_exchange_n((struct rx_node **)&s->child, &c, fresh, 0,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				c = fresh;
			else
				mon_free(fresh);
		}
		n = c;
	}
	return n;
}

/* A leaf of class cls for page, seq odd (not yet valid), empty; or NULL. */
static struct rx_leaf *leaf_alloc(unsigned cls, uintptr_t page)
{
	struct rx_leaf *lf;

	if (cls >= RX_LEAF_NR_CLASSES)
		return NULL;
	mon_spin_lock(&leaf_pool_lock);
	lf = leaf_pool[cls];
	if (lf)
		leaf_pool[cls] = lf->next_free;
	mon_spin_unlock(&leaf_pool_lock);
	if (!lf) {
		uint32_t cap = RX_LEAF_MIN_CAP << cls;

		size_t obj_at = (sizeof(*lf) + cap * sizeof(lf->off[0]) + 7) & ~(size_t)7;

		lf = mon_malloc(obj_at + cap * sizeof(lf->obj[0]));
		if (!lf)
			return NULL;
		lf->obj = (struct mon_obj **)((char *)lf + obj_at);
		lf->seq = 1;
		lf->cap = cap;
		lf->cls = cls;
	}
	STORE_RLX(&lf->page, page);
	STORE_RLX(&lf->nr, 0);
	return lf;
}

/* Retires a leaf that is no longer reachable from its slot. */
static void leaf_retire(struct rx_leaf *lf)
{
	STORE_RLX(&lf->seq, lf->seq + 1);	/* odd from now on: readers retry */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	mon_spin_lock(&leaf_pool_lock);
	lf->next_free = leaf_pool[lf->cls];
	leaf_pool[lf->cls] = lf;
	mon_spin_unlock(&leaf_pool_lock);
}

static inline void leaf_write_begin(struct rx_leaf *lf)
{
	STORE_RLX(&lf->seq, lf->seq + 1);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void leaf_write_end(struct rx_leaf *lf)
{
	STORE_REL(&lf->seq, lf->seq + 1);
}

static inline void ent_set(struct rx_leaf *lf, uint32_t i, uint16_t off, struct mon_obj *o)
{
	STORE_RLX(&lf->off[i], off);
	STORE_RLX(&lf->obj[i], o);
}

static inline uintptr_t ent_start(const struct rx_leaf *lf, uint32_t i)
{
	return lf->page << RX_PAGE_SHIFT | lf->off[i];
}

/* First entry index with start >= a (writer side: the stripe lock is held). */
static uint32_t leaf_lower_bound(const struct rx_leaf *lf, uintptr_t a)
{
	uintptr_t base = lf->page << RX_PAGE_SHIFT;
	uint32_t lo = 0, hi = lf->nr;
	uint16_t key;

	if (a <= base)
		return 0;
	if (a - base > RX_PAGE_MASK)
		return lf->nr;
	key = (uint16_t)(a - base);
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (lf->off[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Sets (o) or clears (o's own, by CAS) the covers of a block [start, end):
 * one slot per step, at the highest level whose slot starts at p, so a block
 * of n bytes takes O(levels * fanout) steps, not n / 4096. Returns 0 or
 * AMEBA_ENOMEM (setting only; covers already set stay, the caller undoes).
 */
static int rx_covers(struct rx_index *ix, uintptr_t start, uintptr_t end, struct mon_obj *o, int set)
{
	uintptr_t p = (start | (((uintptr_t)1 << RX_PAGE_SHIFT) - 1)) + 1;

	if (end > RX_LIMIT)
		end = RX_LIMIT;
	while (p < end) {
		struct rx_node *n;
		int l = 0;

		while (l < RX_LEVELS - 1 && !(p & (((uintptr_t)1 << rx_shift(l + 1)) - 1)))
			l++;
		n = rx_node_at(ix, p, l, set);
		if (n) {
			struct rx_slot *s = &n->slot[rx_slot_idx(p, l)];

			if (set) {
				STORE_REL(&s->cover, o);
			} else {
				struct mon_obj *want = o;

				__atomic_compare_exchange_n(&s->cover, &want, NULL, 0,
							    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
			}
		} else if (set) {
			return AMEBA_ENOMEM;
		}
		p += (uintptr_t)1 << rx_shift(l);
	}
	return 0;
}

/*
 * Removes entries [lo, hi) of leaf slot s and inserts (start, o) there when o
 * is not NULL, growing the leaf (by replacement) when it is full. Stripe lock
 * held. Returns 0 or AMEBA_ENOMEM (leaf unchanged).
 */
static int leaf_splice(struct rx_slot *s, struct rx_leaf *lf, uint32_t lo, uint32_t hi,
		       uintptr_t start, struct mon_obj *o)
{
	uint32_t nr_ins = o ? 1 : 0;
	uint32_t nr_new = lf->nr - (hi - lo) + nr_ins;

	if (nr_new > lf->cap) {
		struct rx_leaf *nl = leaf_alloc(lf->cls + 1, lf->page);
		uint32_t k = 0;

		if (!nl)
			return AMEBA_ENOMEM;
		for (uint32_t i = 0; i < lo; i++, k++)
			ent_set(nl, k, lf->off[i], lf->obj[i]);
		if (o)
			ent_set(nl, k++, (uint16_t)(start & RX_PAGE_MASK), o);
		for (uint32_t i = hi; i < lf->nr; i++, k++)
			ent_set(nl, k, lf->off[i], lf->obj[i]);
		STORE_RLX(&nl->nr, k);
		STORE_REL(&nl->seq, nl->seq + 1);	/* even: valid */
		STORE_REL((struct rx_leaf **)&s->child, nl);
		leaf_retire(lf);
		return 0;
	}

	leaf_write_begin(lf);
	if (hi - lo != nr_ins) {
		/* Move the tail [hi, nr) to lo + nr_ins, in the safe direction. */
		uint32_t dst = lo + nr_ins, nr_tail = lf->nr - hi;

		if (dst < hi) {
			for (uint32_t i = 0; i < nr_tail; i++)
				ent_set(lf, dst + i, lf->off[hi + i], lf->obj[hi + i]);
		} else {
			for (uint32_t i = nr_tail; i-- > 0;)
				ent_set(lf, dst + i, lf->off[hi + i], lf->obj[hi + i]);
		}
	}
	if (o)
		ent_set(lf, lo, (uint16_t)(start & RX_PAGE_MASK), o);
	STORE_RLX(&lf->nr, nr_new);
	leaf_write_end(lf);
	return 0;
}

/* The leaf slot of page(a), creating the path (not the leaf); NULL = no memory. */
static struct rx_slot *rx_leaf_slot(struct rx_index *ix, uintptr_t a, int create)
{
	struct rx_node *n0 = rx_node_at(ix, a, 0, create);

	return n0 ? &n0->slot[rx_slot_idx(a, 0)] : NULL;
}

static void rx_kill_stale(struct rx_index *ix, struct mon_obj *o);

/*
 * Inserts the live record o = [start, end) (stripe lock of page(start) held).
 * Blocks of the same page starting inside [start, end), or at start, are
 * stale (their free was never seen): they are dropped and killed.
 */
static int rx_insert_locked(struct rx_index *ix, struct mon_obj *o, uintptr_t start, uintptr_t end)
{
	struct rx_slot *s = rx_leaf_slot(ix, start, 1);
	struct mon_obj *stale[8];
	uint32_t lo, hi, nr_stale = 0;
	uintptr_t stale_end = end > start ? end : start + 1;
	struct rx_leaf *lf;
	int err;

	if (!s)
		return AMEBA_ENOMEM;
	lf = LOAD_RLX((struct rx_leaf **)&s->child);
	if (!lf) {
		lf = leaf_alloc(0, start >> RX_PAGE_SHIFT);
		if (!lf)
			return AMEBA_ENOMEM;
		STORE_REL(&lf->seq, lf->seq + 1);
		STORE_REL((struct rx_leaf **)&s->child, lf);
	}
	lo = leaf_lower_bound(lf, start);
	hi = lo;
	while (hi < lf->nr && ent_start(lf, hi) < stale_end && nr_stale < 8)
		stale[nr_stale++] = lf->obj[hi++];
	err = leaf_splice(s, lf, lo, hi, start, o);
	if (err)
		return err;
	for (uint32_t i = 0; i < nr_stale; i++)
		rx_kill_stale(ix, stale[i]);
	err = rx_covers(ix, start, end, o, 1);
	if (err) {
		rx_covers(ix, start, end, o, 0);
		lf = LOAD_RLX((struct rx_leaf **)&s->child);
		lo = leaf_lower_bound(lf, start);
		leaf_splice(s, lf, lo, lo + 1, 0, NULL);	/* shrinking cannot fail */
	}
	return err;
}

/*
 * Removes the entry (start, o) - any record starting at start when o is NULL -
 * and its covers (stripe lock held). Returns the removed record or NULL.
 */
static struct mon_obj *rx_remove_locked(struct rx_index *ix, uintptr_t start, struct mon_obj *o)
{
	struct rx_slot *s = rx_leaf_slot(ix, start, 0);
	struct rx_leaf *lf;
	uint32_t i;

	if (!s || !(lf = LOAD_RLX((struct rx_leaf **)&s->child)))
		return NULL;
	for (i = leaf_lower_bound(lf, start); i < lf->nr && ent_start(lf, i) == start; i++)
		if (!o || lf->obj[i] == o)
			break;
	if (i >= lf->nr || ent_start(lf, i) != start)
		return NULL;
	o = lf->obj[i];
	leaf_splice(s, lf, i, i + 1, 0, NULL);
	rx_covers(ix, LOAD_RLX(&o->start), LOAD_RLX(&o->end), o, 0);
	return o;
}

/* Drops a stale record found while inserting: covers cleared, LIVE cleared,
 * not recycled (we hold one stripe lock and take no other). */
static void rx_kill_stale(struct rx_index *ix, struct mon_obj *o)
{
	rx_covers(ix, LOAD_RLX(&o->start), LOAD_RLX(&o->end), o, 0);
	obj_kill(o);
}

/*
 * The record of ix containing a, with its seq in *seq; NULL when none. Takes
 * no lock: covers on the way down, then the page's leaf under its seqlock.
 * Live blocks do not overlap, so at most one candidate matches; when a block
 * whose free was never seen still covers the page, the leaf's (newer, more
 * specific) block wins over the cover.
 */
static struct mon_obj *rx_lookup(struct rx_index *ix, uintptr_t a, uint64_t *seq)
{
	uint16_t key = (uint16_t)(a & RX_PAGE_MASK);

	if (a >= RX_LIMIT)
		return NULL;
	for (;;) {
		struct mon_obj *o, *cover = NULL;
		struct rx_node *n = &ix->root;
		uint64_t cover_seq = 0;
		uint32_t s1, nr, lo, hi;
		struct rx_leaf *lf;
		struct rx_slot *s;
		uintptr_t page;

		for (int l = RX_LEVELS - 1;; l--) {
			s = &n->slot[rx_slot_idx(a, l)];
			o = LOAD_ACQ(&s->cover);
			if (o && !cover && (cover_seq = obj_hit(o, a)))
				cover = o;
			if (!l)
				break;
			n = LOAD_ACQ((struct rx_node **)&s->child);
			if (!n)
				goto out_cover;
		}
		lf = LOAD_ACQ((struct rx_leaf **)&s->child);
		if (!lf)
			goto out_cover;
		s1 = LOAD_ACQ(&lf->seq);
		if (s1 & 1) {
			mon_cpu_relax();
			continue;
		}
		page = LOAD_RLX(&lf->page);
		nr = LOAD_RLX(&lf->nr);
		if (nr > lf->cap)
			nr = lf->cap;
		/* Last entry with start <= a. */
		lo = 0;
		hi = nr;
		while (lo < hi) {
			uint32_t mid = (lo + hi) / 2;

			if (LOAD_RLX(&lf->off[mid]) <= key)
				lo = mid + 1;
			else
				hi = mid;
		}
		o = lo ? LOAD_RLX(&lf->obj[lo - 1]) : NULL;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (LOAD_RLX(&lf->seq) != s1 || page != a >> RX_PAGE_SHIFT)
			continue;
		if (o && (*seq = obj_hit(o, a)))
			return o;
out_cover:
		*seq = cover_seq;
		return cover;
	}
}

/* First live, non-empty block of leaf page `base` starting in [lo, hi). */
static struct mon_obj *rx_leaf_first(struct rx_index *ix, struct rx_slot *s, uintptr_t base,
				     uintptr_t lo, uintptr_t hi)
{
	struct rx_stripe *st = rx_stripe_of(ix, base);
	struct mon_obj *found = NULL;
	struct rx_leaf *lf;

	mon_spin_lock(&st->lock);
	lf = LOAD_RLX((struct rx_leaf **)&s->child);
	if (lf) {
		for (uint32_t i = leaf_lower_bound(lf, lo); i < lf->nr && ent_start(lf, i) < hi; i++) {
			struct mon_obj *o = lf->obj[i];

			if ((LOAD_RLX(&o->flags) & MON_OBJF_LIVE) && o->end > o->start) {
				found = o;
				break;
			}
		}
	}
	mon_spin_unlock(&st->lock);
	return found;
}

/* Walks node n (level l, covering from base) for the first block starting in [lo, hi). */
static struct mon_obj *rx_walk(struct rx_index *ix, struct rx_node *n, int l, uintptr_t base,
			       uintptr_t lo, uintptr_t hi)
{
	unsigned i = lo > base ? (unsigned)((lo - base) >> rx_shift(l)) : 0;

	for (; i < RX_FANOUT; i++) {
		uintptr_t sb = base + ((uintptr_t)i << rx_shift(l));
		struct mon_obj *o;
		void *c;

		if (sb >= hi)
			break;
		c = LOAD_ACQ(&n->slot[i].child);
		if (!c)
			continue;
		if (l)
			o = rx_walk(ix, c, l - 1, sb, lo, hi);
		else
			o = rx_leaf_first(ix, &n->slot[i], sb, lo, hi);
		if (o)
			return o;
	}
	return NULL;
}

/* A live block of ix overlapping [lo, hi): the one containing lo, else the
 * first starting inside. NULL when none. */
static struct mon_obj *rx_first_overlap(struct rx_index *ix, uintptr_t lo, uintptr_t hi)
{
	struct mon_obj *o;
	uint64_t seq;

	if (lo >= RX_LIMIT || lo >= hi)
		return NULL;
	o = rx_lookup(ix, lo, &seq);
	if (o)
		return o;
	return rx_walk(ix, &ix->root, RX_LEVELS - 1, 0, lo, hi < RX_LIMIT ? hi : RX_LIMIT);
}

/* Removes o (starting at start) from ix and kills it; recycles when allowed. */
static struct mon_obj *rx_del(struct rx_index *ix, uintptr_t start, struct mon_obj *want)
{
	struct rx_stripe *st = rx_stripe_of(ix, start);
	struct mon_obj *o;

	int k = KILL_KEEP;

	mon_spin_lock(&st->lock);
	o = rx_remove_locked(ix, start, want);
	if (o && (k = obj_kill(o)) == KILL_RECYCLE) {
		o->name = (const char *)st->free_objs;
		st->free_objs = o;
	}
	mon_spin_unlock(&st->lock);
	if (k == KILL_FOLD && ix == &heap_ix)
		mon_fold_dead(o);
	return o;
}

void mon_objmap_recycle(struct mon_obj *o)
{
	struct rx_stripe *st = rx_stripe_of(&heap_ix, LOAD_RLX(&o->start));

	mon_spin_lock(&st->lock);
	/* flags first: a reader that sees the link sees them cleared (mri_server.c) */
	STORE_REL(&o->flags, 0);
	STORE_REL(&o->name, (const char *)st->free_objs);
	st->free_objs = o;
	mon_spin_unlock(&st->lock);
}

/* Inserts the already published record o into ix; 0 or AMEBA_ENOMEM. */
static int rx_add(struct rx_index *ix, struct mon_obj *o)
{
	struct rx_stripe *st = rx_stripe_of(ix, o->start);
	int err;

	mon_spin_lock(&st->lock);
	err = rx_insert_locked(ix, o, o->start, o->end);
	mon_spin_unlock(&st->lock);
	return err;
}

static struct mon_obj *block_add(int kind, uintptr_t start, uintptr_t end, size_t sz_bytes,
				 uint32_t site_id, uint32_t thread_id, const char *name);

/*
 * Retired records (fold.c), one per (site, kind) that had a block folded:
 * by site id in chunks of RET_CHUNK, mapped when first needed; read without
 * a lock (published with release), made under ret_lock.
 */
#define RET_CHUNK_SHIFT 12
#define RET_CHUNK (1u << RET_CHUNK_SHIFT)
#define RET_NR_CHUNKS ((MON_COND_MAX_SITE >> RET_CHUNK_SHIFT) + 1)

static struct mon_obj **ret_chunks[2][RET_NR_CHUNKS];	/* [kind == MMAP] */
static pthread_mutex_t ret_lock = PTHREAD_MUTEX_INITIALIZER;

struct mon_obj *mon_objmap_retired(uint32_t site_id, int kind)
{
	struct mon_obj ***chunk, *o;
	uint32_t c = site_id >> RET_CHUNK_SHIFT, i = site_id & (RET_CHUNK - 1);

	if ((kind != MON_OBJ_HEAP && kind != MON_OBJ_MMAP) || c >= RET_NR_CHUNKS)
		return NULL;
	chunk = &ret_chunks[kind == MON_OBJ_MMAP][c];
	if (LOAD_ACQ(chunk) && (o = LOAD_ACQ(&(*chunk)[i])))
		return o;
	pthread_mutex_lock(&ret_lock);
	if (!LOAD_RLX(chunk)) {
		void *p = mmap(NULL, RET_CHUNK * sizeof(struct mon_obj *), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p != MAP_FAILED)
			STORE_REL(chunk, (struct mon_obj **)p);
	}
	o = LOAD_RLX(chunk) ? LOAD_RLX(&(*chunk)[i]) : NULL;
	if (LOAD_RLX(chunk) && !o && (o = obj_fresh())) {
		o->kind = (uint8_t)kind;
		o->site_id = site_id;
		o->thread_id = 0;
		o->holder = 0;
		o->holder2 = MON_HOLDER_MANY;
		o->extra = 0;
		o->sz_bytes = 0;
		o->name = NULL;
		o->start = o->end = 0;
		STORE_RLX(&o->seq, __atomic_add_fetch(&obj_seq, 1, __ATOMIC_RELAXED));
		STORE_REL(&o->flags, (uint8_t)MON_OBJF_RETIRED);
		STORE_REL(&(*chunk)[i], o);
	}
	pthread_mutex_unlock(&ret_lock);
	return o;
}

/*
 * Removes everything of ix overlapping [start, end). With split, an mmap
 * block reaching outside the range is replaced by new records for its
 * remaining parts (new objects: their seq is new, their site the same; a
 * file's part shows the file at its own offset).
 */
static void rx_unmap(struct rx_index *ix, uintptr_t start, uintptr_t end, int split)
{
	uintptr_t cur = start;
	struct mon_obj *o;

	while (cur < end && (o = rx_first_overlap(ix, cur, end))) {
		uintptr_t ost = LOAD_RLX(&o->start), oend = LOAD_RLX(&o->end);
		uint32_t site = o->site_id, tid = o->thread_id;
		int kind = o->kind;
		const char *view = kind == MON_OBJ_MMAP ? o->name : NULL;	/* before rx_del recycles o */

		if (rx_del(ix, ost, o) == o && split && kind == MON_OBJ_MMAP) {
			if (ost < start)
				block_add(MON_OBJ_MMAP, ost, start, start - ost, site, tid, view);
			if (oend > end)
				block_add(MON_OBJ_MMAP, end, oend, oend - end, site, tid,
					  view ? mon_file_view(view, mon_file_view_off(view) + (end - ost)) :
						 NULL);
		}
		cur = oend > cur ? oend : cur + 1;
	}
}

/* ------------------------------------------------------------------------ */
/* Heap and mmap blocks                                                     */
/* ------------------------------------------------------------------------ */

static pthread_once_t boot_once = PTHREAD_ONCE_INIT;

/* [other] when even the first record could not be allocated: lookups never
 * return NULL (it has no idx of its own and no counts will find it). */
static struct mon_obj other_fallback = {
	.kind = MON_OBJ_OTHER, .flags = MON_OBJF_LIVE | MON_OBJF_ACCESSED, .end = UINTPTR_MAX,
};

static void objmap_boot_once(void)
{
	long pg = sysconf(_SC_PAGESIZE);

	page_mask = (uintptr_t)(pg > 0 ? pg : 4096) - 1;
	/* The first record: idx 0. Covers everything, never cached. */
	struct mon_obj *o = mon_objmap_obj_new(NULL, MON_OBJ_OTHER, 0, UINTPTR_MAX, 0, 0, 0, NULL);

	if (o)
		__atomic_or_fetch(&o->flags, MON_OBJF_ACCESSED, __ATOMIC_RELAXED);
	STORE_REL(&other_obj, o ? o : &other_fallback);
}

static inline void objmap_boot(void)
{
	if (mon_unlikely(!LOAD_ACQ(&other_obj)))
		pthread_once(&boot_once, objmap_boot_once);
}

/* For objmap_globals.c: the map booted; a global's record no longer live. */
void mon_objmap_boot(void)
{
	objmap_boot();
}

void mon_objmap_kill(struct mon_obj *o)
{
	obj_kill(o);
}

/* Inserts [start, end) into the heap index under its stripe lock, with a
 * recycled record when the stripe has one. */
static struct mon_obj *block_add(int kind, uintptr_t start, uintptr_t end, size_t sz_bytes,
				 uint32_t site_id, uint32_t thread_id, const char *name)
{
	struct rx_stripe *st = rx_stripe_of(&heap_ix, start);
	struct mon_obj *o;

	mon_spin_lock(&st->lock);
	o = mon_objmap_obj_new(&st->free_objs, kind, start, end, sz_bytes, site_id, thread_id, name);
	if (o && rx_insert_locked(&heap_ix, o, start, end)) {
		obj_kill(o);
		o->name = (const char *)st->free_objs;
		st->free_objs = o;
		o = NULL;
	}
	mon_spin_unlock(&st->lock);
	return o;
}

static struct mon_obj *add_block(int kind, uintptr_t start, size_t sz_bytes, uint32_t site_id,
				  uint32_t thread_id, const char *view)
{
	uintptr_t end = start + sz_bytes;
	struct mon_obj *o;

	if (kind != MON_OBJ_HEAP && kind != MON_OBJ_MMAP)
		return NULL;
	if (end < start || end > RX_LIMIT)
		return NULL;
	objmap_boot();
	if (kind == MON_OBJ_MMAP) {
		/* Mappings are whole pages: an mmap record's size is its extent. */
		end = (end + page_mask) & ~page_mask;
		if (end < start || end > RX_LIMIT)
			return NULL;
		sz_bytes = end - start;
		rx_unmap(&heap_ix, start, end, 1);	/* MAP_FIXED over old blocks */
	}
	o = block_add(kind, start, end, sz_bytes, site_id, thread_id, view);
	if (o)
		mon_site_count(site_id, sz_bytes);
	return o;
}

struct mon_obj *mon_objmap_add_block(int kind, uintptr_t start, size_t sz_bytes, uint32_t site_id,
				     uint32_t thread_id)
{
	return add_block(kind, start, sz_bytes, site_id, thread_id, NULL);
}

struct mon_obj *mon_objmap_add_file(uintptr_t start, size_t sz_bytes, uint32_t site_id,
				    uint32_t thread_id, const char *view)
{
	return add_block(MON_OBJ_MMAP, start, sz_bytes, site_id, thread_id, view);
}

/* ------------------------------------------------------------------------ */
/* File views                                                               */
/* ------------------------------------------------------------------------ */

/*
 * One (path, offset) pair; the path string is what a record's name points
 * at, so the offset is found from it. Interned in a hash table of chains
 * under a mutex: file mappings are system calls, rare next to accesses.
 */
struct file_view {
	struct file_view *next;
	uint64_t off;
	char path[];
};

#define VIEW_NR_BUCKETS 256

static struct file_view *view_buckets[VIEW_NR_BUCKETS];
static pthread_mutex_t view_lock = PTHREAD_MUTEX_INITIALIZER;

const char *mon_file_view(const char *path, uint64_t off)
{
	uint64_t h = 0xcbf29ce484222325ull ^ off;
	struct file_view *v;
	size_t n = strlen(path);

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)path[i]) * 0x100000001b3ull;
	h = (h ^ (h >> 29)) % VIEW_NR_BUCKETS;
	pthread_mutex_lock(&view_lock);
	for (v = view_buckets[h]; v; v = v->next)
		if (v->off == off && !strcmp(v->path, path))
			break;
	if (!v && (v = mon_malloc(sizeof(*v) + n + 1))) {
		v->off = off;
		memcpy(v->path, path, n + 1);
		v->next = view_buckets[h];
		view_buckets[h] = v;
	}
	pthread_mutex_unlock(&view_lock);
	return v ? v->path : NULL;
}

uint64_t mon_file_view_off(const char *view)
{
	return ((const struct file_view *)(view - offsetof(struct file_view, path)))->off;
}

void mon_objmap_del_block(uintptr_t start)
{
	if (start >= RX_LIMIT)
		return;
	rx_del(&heap_ix, start, NULL);
}

void mon_objmap_unmap_range(uintptr_t start, uintptr_t end)
{
	if (start >= end)
		return;
	rx_unmap(&heap_ix, start, end, 1);
}

/* ------------------------------------------------------------------------ */
/* Thread stacks and TLS                                                    */
/* ------------------------------------------------------------------------ */

static void thread_range_del(struct rx_index *ix, struct mon_obj **slot)
{
	struct mon_obj *o = LOAD_RLX(slot);

	if (!o)
		return;
	rx_del(ix, o->start, o);
	obj_kill(o);		/* in case another add replaced its entry */
	STORE_REL(slot, NULL);
}

static void thread_range_add(struct rx_index *ix, struct mon_obj **slot, int kind, uintptr_t lo,
			     uintptr_t hi, uint32_t thread_id)
{
	struct mon_obj *o = LOAD_RLX(slot);

	if (o && o->start == lo && o->end == hi && (LOAD_RLX(&o->flags) & MON_OBJF_LIVE))
		return;
	thread_range_del(ix, slot);
	if (lo >= hi || hi > RX_LIMIT)
		return;
	/* A dead thread's range that was never removed (its stack reused). */
	rx_unmap(ix, lo, hi, 0);
	o = mon_objmap_obj_new(NULL, kind, lo, hi, hi - lo, 0, thread_id, NULL);
	if (!o)
		return;
	if (rx_add(ix, o)) {
		obj_kill(o);
		return;
	}
	STORE_REL(slot, o);
}

void mon_objmap_thread_add(struct mon_thread *t)
{
	objmap_boot();
	thread_range_add(&stack_ix, &t->stack_obj, MON_OBJ_STACK, t->stack_lo, t->stack_hi, t->id);
	thread_range_add(&tls_ix, &t->tls_obj, MON_OBJ_TLS, t->tls_lo, t->tls_hi, t->id);
}

static void memo_del(struct mon_thread *t);

void mon_objmap_thread_del(struct mon_thread *t)
{
	thread_range_del(&stack_ix, &t->stack_obj);
	thread_range_del(&tls_ix, &t->tls_obj);
	memset(&t->cache, 0, sizeof(t->cache));
	memo_del(t);
}

/* ------------------------------------------------------------------------ */
/* The memo: a second level behind the object cache                         */
/* ------------------------------------------------------------------------ */

/*
 * A thread's objects by line, behind its 4-way object cache: MEMO_NR
 * entries, direct-mapped on the line of an address that missed the cache,
 * each the object the map's lookup found there (its range, its record,
 * the thread's counter vector of it once known). A program of many small
 * blocks - an interpreter's stack, tables and strings, 6-8 of them in its
 * inner loop - missed the 4 ways often, and every miss took the radix
 * walk and a binary search (rx_lookup, 10-13% of the samples of Lua's
 * run under the simulator). An entry is valid as a way is: its range
 * holds the address and its record is live (objects never overlap; a
 * record that was looked up is recycled only after its fold, which clears
 * the memo with the cache), so it keeps no tag. Per thread, 32 KiB mapped for it (struct
 * mon_thread keeps its size: the runtime allocates it from the program's
 * heap; a static array would have grown the .bss and moved the heap),
 * found by the thread's id; read and written by the owner only (fold.c
 * clears caches in the thread's own fold only). Unmapped when the thread
 * ends (memo_del, before `exited`), not made again after. 1,024 entries:
 * Lua's matrix product cycles through 90 rows (a header and an array
 * each); with 256 entries about half of its misses still took the radix
 * walk, with 1,024 one in six.
 */
#define MEMO_SHIFT 10
#define MEMO_NR (1u << MEMO_SHIFT)
#define MEMO_CHUNK_SHIFT 10
#define MEMO_CHUNK (1u << MEMO_CHUNK_SHIFT)
#define MEMO_NR_CHUNKS 4096	/* thread ids below 4M, as rt.c's registry */

struct memo_entry {
	uintptr_t start, end;
	struct mon_obj *obj;
	uint64_t *counts;
};

struct memo {
	struct memo_entry e[MEMO_NR];
};

/* The chunks of memo pointers by thread id, mapped on first use: the
 * program's data and heap do not move (a larger .bss would move the heap) */
static struct memo ***memo_dir;
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;

/* Maps *p (n bytes) under memo_lock unless there; what *p is then. */
static void *memo_map(void **p, size_t n)
{
	void *m;

	pthread_mutex_lock(&memo_lock);
	if (!(m = LOAD_RLX(p))) {
		m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			m = NULL;
		else
			STORE_REL(p, m);
	}
	pthread_mutex_unlock(&memo_lock);
	return m;
}

/* t's memo slot, made with its chunk when make is set; NULL when none. */
static inline struct memo **memo_slot(const struct mon_thread *t, int make)
{
	uint32_t c = t->id >> MEMO_CHUNK_SHIFT;
	struct memo ***dir = LOAD_ACQ(&memo_dir), **chunk;

	if (c >= MEMO_NR_CHUNKS)
		return NULL;
	if (!dir && (!make || !(dir = memo_map((void **)&memo_dir,
					       MEMO_NR_CHUNKS * sizeof(*dir)))))
		return NULL;
	chunk = LOAD_ACQ(&dir[c]);
	if (!chunk && (!make || !(chunk = memo_map((void **)&dir[c],
						   MEMO_CHUNK * sizeof(*chunk)))))
		return NULL;
	return &chunk[t->id & (MEMO_CHUNK - 1)];
}

/* t's memo (the owner thread), made on first use; NULL once t has ended,
 * or when memory is short. */
static struct memo *memo_get(struct mon_thread *t)
{
	struct memo **slot, *m;
	slot = memo_slot(t, 1);
	if (!slot)
		return NULL;
	m = LOAD_RLX(slot);
	if (mon_likely(m != NULL) || LOAD_RLX(&t->exited))
		return m;
	m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	STORE_REL(slot, m);
	return m;
}

static inline struct memo_entry *memo_entry_of(struct memo *m, uintptr_t a)
{
	return &m->e[(a >> MON_LINE_SHIFT) & (MEMO_NR - 1)];
}

/* The entry of t's memo for a (made on first use), NULL without a memo. */
static inline struct memo_entry *memo_entry_for(struct mon_thread *t, uintptr_t a)
{
	struct memo *m = memo_get(t);

	return m ? memo_entry_of(m, a) : NULL;
}

/* Whether entry e names a's object: as a cache way, its range holds a and
 * its record is live. */
static inline int memo_holds(const struct memo_entry *e, uintptr_t a)
{
	return e && a - e->start < e->end - e->start &&
	       (LOAD_RLX(&e->obj->flags) & MON_OBJF_LIVE);
}

/* Forgets every entry of t's memo. */
static void memo_clear(struct mon_thread *t)
{
	struct memo **slot = memo_slot(t, 0), *m;

	if (slot && (m = LOAD_ACQ(slot)))
		memset(m, 0, sizeof(*m));
}

/* t ends: its memo goes, before `exited` is stored (so a fold for an ended
 * thread finds none to clear). */
static void memo_del(struct mon_thread *t)
{
	struct memo **slot = memo_slot(t, 0), *m;

	if (slot && (m = LOAD_RLX(slot))) {
		STORE_REL(slot, NULL);
		munmap(m, sizeof(*m));
	}
}

void mon_objmap_cache_counts(struct mon_thread *t, int w, uintptr_t addr, uint64_t *v)
{
	struct memo **slot = memo_slot(t, 0), *m;
	struct memo_entry *e;

	t->cache.counts[w] = v;
	if (slot && (m = LOAD_RLX(slot)) && (e = memo_entry_of(m, addr))->obj == t->cache.obj[w])
		e->counts = v;
}

/* ------------------------------------------------------------------------ */
/* Lookup                                                                   */
/* ------------------------------------------------------------------------ */

/* Round robin: cheaper than keeping the ways in recency order, and a
 * thread's working set of objects (a few arrays) fits either way. */
void mon_objmap_cache_clear(struct mon_thread *t)
{
	struct mon_objcache *c = &t->cache;

	for (int w = 0; w < MON_OBJCACHE_WAYS; w++) {
		c->start[w] = c->end[w] = 0;
		c->counts[w] = NULL;
	}
	memo_clear(t);
}

static inline uint32_t cache_insert(struct mon_objcache *c, struct mon_obj *o, uint64_t *counts)
{
	uint32_t w = c->next;

	c->next = (w + 1) % MON_OBJCACHE_WAYS;
	c->start[w] = o->start;
	c->end[w] = o->end;
	c->obj[w] = o;
	c->counts[w] = counts;
	return w;
}

/* Forgets t's way that holds addr, whose object was freed (a way that
 * holds addr and was not found by mon_objcache_way is one). */
static inline void cache_forget_dead(struct mon_objcache *c, uintptr_t addr)
{
	for (uint32_t w = 0; w < MON_OBJCACHE_WAYS; w++) {
		if (addr - c->start[w] < c->end[w] - c->start[w]) {
			c->start[w] = c->end[w] = 0;
			c->counts[w] = NULL;
			return;
		}
	}
}


/* The calling thread's own stack or TLS record containing a. */
static inline struct mon_obj *own_lookup(struct mon_thread *t, uintptr_t a, uint64_t *seq)
{
	struct mon_obj *o;

	if (a - t->tls_lo < t->tls_hi - t->tls_lo && (o = LOAD_RLX(&t->tls_obj)) &&
	    (*seq = obj_hit(o, a)))
		return o;
	if (a - t->stack_lo < t->stack_hi - t->stack_lo && (o = LOAD_RLX(&t->stack_obj)) &&
	    (*seq = obj_hit(o, a)))
		return o;
	return NULL;
}

/* The order of the design: own stack/TLS, heap, globals, other threads. */
static struct mon_obj *lookup_uncached(struct mon_thread *t, uintptr_t a, uint64_t *seq)
{
	struct mon_obj *o;

	if (t && (o = own_lookup(t, a, seq)))
		return o;
	if ((o = rx_lookup(&heap_ix, a, seq)))
		return o;
	if ((o = mon_objmap_globals_lookup(a, seq)))
		return o;
	if ((o = rx_lookup(&tls_ix, a, seq)))
		return o;
	return rx_lookup(&stack_ix, a, seq);
}

/* The map's own lookup of addr; with t, its object goes into t's cache and
 * into memo entry e (when given). */
static struct mon_obj *lookup_slow(struct mon_thread *t, uintptr_t addr, struct memo_entry *e)
{
	struct mon_obj *o;
	uint64_t seq;

	for (;;) {
		o = lookup_uncached(t, addr, &seq);
		if (!o) {
			objmap_boot();
			return other_obj;
		}
		if (!obj_mark(o, seq))
			break;
	}
	if (t) {
		mon_objmap_hold(o, t->id);	/* before the cache names it (fold.c) */
		cache_insert(&t->cache, o, NULL);
		if (e) {
			e->start = o->start;
			e->end = o->end;
			e->obj = o;
			e->counts = NULL;
		}
	}
	return o;
}

struct mon_obj *mon_objmap_lookup(struct mon_thread *t, uintptr_t addr)
{
	struct memo_entry *e = NULL;

	if (t) {
		struct mon_objcache *c = &t->cache;
		int w = mon_objcache_way(t, addr);

		if (mon_likely(w >= 0))
			return c->obj[w];
		cache_forget_dead(c, addr);
		if (memo_holds(e = memo_entry_for(t, addr), addr)) {
			cache_insert(c, e->obj, e->counts);
			return e->obj;
		}
	}
	return lookup_slow(t, addr, e);
}

int mon_objmap_cache_fill(struct mon_thread *t, uintptr_t addr)
{
	struct mon_objcache *c = &t->cache;
	struct memo_entry *e = memo_entry_for(t, addr);
	uint32_t w;

	/* a way that holds addr holds a freed block: forgotten, or every
	 * search that met it before the new way would miss (bzip2 -d: a new
	 * stream's blocks where the last one's were, 20x the filter's C
	 * misses) */
	cache_forget_dead(c, addr);
	if (memo_holds(e, addr)) {
		w = cache_insert(c, e->obj, e->counts);
	} else {
		if (lookup_slow(t, addr, e)->kind == MON_OBJ_OTHER)
			return -1;
		w = (c->next + MON_OBJCACHE_WAYS - 1) % MON_OBJCACHE_WAYS;
		if (!(LOAD_RLX(&c->obj[w]->flags) & MON_OBJF_LIVE))
			return -1;	/* freed meanwhile: the general path */
	}
	c->hint = w;
	return (int)w;
}

/* ------------------------------------------------------------------------ */
/* Init and fork                                                            */
/* ------------------------------------------------------------------------ */

static struct rx_index *const all_ix[] = { &heap_ix, &stack_ix, &tls_ix };

/* Every lock of the map is held across fork, so the child never inherits one
 * taken by a thread that does not exist there. */
static void objmap_fork_prepare(void)
{
	pthread_mutex_lock(&view_lock);	/* a leaf lock: never held with another */
	pthread_mutex_lock(&mon_objmap_mod_lock);
	for (size_t k = 0; k < sizeof(all_ix) / sizeof(all_ix[0]); k++)
		for (unsigned i = 0; i < RX_NR_STRIPES; i++)
			mon_spin_lock(&all_ix[k]->stripe[i].lock);
	mon_spin_lock(&leaf_pool_lock);
}

static void objmap_fork_release(void)
{
	mon_spin_unlock(&leaf_pool_lock);
	for (size_t k = 0; k < sizeof(all_ix) / sizeof(all_ix[0]); k++)
		for (unsigned i = 0; i < RX_NR_STRIPES; i++)
			mon_spin_unlock(&all_ix[k]->stripe[i].lock);
	pthread_mutex_unlock(&mon_objmap_mod_lock);
	pthread_mutex_unlock(&view_lock);
}

int mon_objmap_init(void)
{
	static int done;

	objmap_boot();
	if (other_obj == &other_fallback)
		return AMEBA_ENOMEM;
	if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
		return 0;
	pthread_atfork(objmap_fork_prepare, objmap_fork_release, objmap_fork_release);
	mon_objmap_modules_changed();
	return 0;
}
