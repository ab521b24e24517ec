/*
 * cond.c - conditional counters: metric x address ranges x threads, counted
 * exactly while the program runs (design.md section 6).
 *
 * Notes:
 *  - A request arms a whole *set* of counters at once; the set is immutable
 *    and has a generation number. Re-arming replaces the set and every
 *    counter starts from zero, so a reader never mixes two experiments.
 *  - Address lookup: all range boundaries of a set, sorted and unique, cut
 *    the address space into elementary intervals; each interval carries the
 *    list of counters that cover it (a counter appears once per interval even
 *    when its own ranges overlap). A line access finds its interval by a
 *    binary search, short-circuited by the thread's last interval. Counters
 *    without ranges apply to every access.
 *      ranges:    A=[0x100,0x300)  B=[0x200,0x400)
 *      intervals: [0x100,0x200):{A} [0x200,0x300):{A,B} [0x300,0x400):{B}
 *  - Values are per thread: each thread owns an array for the set it last
 *    saw and is the only writer. Readers sum the arrays of every thread
 *    whose array belongs to the generation asked for; a thread that did not
 *    touch memory since the set was armed contributed nothing, which is
 *    exactly right.
 *  - Site where-sets (bins): a CSR from site id to the counters that count
 *    the site's blocks. The access path already knows the object it falls
 *    in (the object map's lookup, for the per-object counters), so a site
 *    costs one bound check and a short list walk on heap and mmap blocks,
 *    and nothing at all while no armed counter names a site. A counter
 *    with both ranges and sites counts an access in both once: the site
 *    walk skips it when the interval's list held it.
 *  - Kind where-sets ("[stack]", "[tls]" bins): the same on the object's
 *    kind, a CSR from kind to counters; the object a stack or TLS access
 *    falls in is found anyway, so it is one array walk, and a thread's
 *    block counts whether the thread started before the arm or after.
 *  - Exceptions: a counter's ranges may leave out the blocks of some sites
 *    and kinds (what an address search measures by bin apart). Checked per
 *    counter of the access's interval, only in sets that have any.
 *  - Served counters: with a backend whose per-object, per-thread counts
 *    are exact (sim, count), a counter whose where-set is made of whole
 *    objects -- no ranges (the whole space), site bins, kinds, or ranges
 *    that begin and end at object boundaries (the objects strategy's
 *    extents) -- is not matched per access at all: it is read from the
 *    counts the backend keeps anyway (counts.c), as the difference between
 *    the read and a snapshot taken when the set was armed. An object counts
 *    for such a counter's ranges when its start lies in them. Ranges that
 *    cut an object or end in unknown memory ([other]: nway's spans, the
 *    words strategy's) stay per access. All or none per set: a set made
 *    only of served counters leaves the access path untouched
 *    (mon_cond_armed drops back to 0 once the snapshot is taken); one with
 *    any per-access counter is matched per access whole.
 *    AMEBA_COND_SERVED=0 turns serving off.
 *  - Before: the snapshot is also what a served counter's objects counted
 *    from their births until the arm; a read hands it out (mon_cond_read's
 *    before) so that a strategy counting an object born during the last
 *    interval can count it from its birth.
 *  - Swap: mon_cond_arm_swap reads the replaced set in the instant the new
 *    one is published (every thread stopped at its next access), so that
 *    consecutive intervals leave no access uncounted between them.
 *  - Lifetime: a set is referenced by the global slot and by each thread
 *    state that adopted it; it is freed when the last reference goes.
 *    Adopting a set (once per thread per arm) and arming take cond_lock; the
 *    per-access path takes no lock.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mon.h"

struct cond_set {
	uint64_t gen;
	uint32_t refs;			/* protected by cond_lock */
	uint32_t nr;			/* counters */
	uint16_t *slot;			/* [nr] counter slot of each counter's metric */
	uint32_t *thr_off, *thr;	/* CSR: counter i's threads, sorted; empty = all */
	uint32_t nr_global;		/* counters without ranges */
	uint32_t *global;
	uint32_t nr_bounds;
	uintptr_t *bounds;		/* [nr_bounds], sorted, unique */
	uint32_t *iv_off, *iv_ctr;	/* CSR over the nr_bounds - 1 intervals */
	uint32_t nr_site_ids;		/* site ids below this have a list; 0 = no sites */
	uint32_t *site_off, *site_ctr;	/* CSR over site ids */
	uint8_t *both;			/* [nr]: the counter has ranges and sites or kinds */
	uint32_t kind_off[MON_OBJ_NR_KINDS + 1];	/* CSR over object kinds ... */
	uint32_t *kind_ctr;		/* ... of the counters with kinds */
	int by_obj;			/* some counter names sites or kinds */
	/* exceptions: counter i's ranges do not count blocks of the sites
	 * ex_site[ex_off[i]..ex_off[i+1]) (sorted) or of the kinds ex_kinds[i] */
	uint32_t *ex_off, *ex_site;
	uint8_t *ex_kinds;
	int has_ex;
	/* served counters (Notes): served[i]; the snapshot at the arm, per
	 * thread id below nr_base: base[id] ([nr] values, NULL: the thread had
	 * no counts), gone[id]: it had exited (its counts can change no more) */
	uint8_t *served;
	uint32_t nr_served;
	uint32_t nr_base;
	uint64_t **base;
	uint8_t *gone;
	struct served_walk *walk;	/* served_sum's scratch, made at first use */
	/* per-thread rows (set_read): quiet[id] is the number of the read
	 * with rows that first found thread id exited, after which its row
	 * no longer changes and is no longer sent; 0: not yet */
	uint32_t *quiet;
	uint32_t nr_quiet;
	uint32_t nr_row_reads;
};

static void served_scratch_free(struct served_walk *w);

/* One access's events by counter slot (a slot appears at most once per
 * access, mon_events): a counter then finds its amount in one load instead
 * of a pass over the events (an armed objects search puts ~26 counters on
 * an object's interval and a coherence miss has ~15 events: a pass would
 * be 390 compares per access, half the ordered merger's time on the
 * false-sharing workload). */
struct ev_by_slot {
	uint64_t n[AMEBA_M_NR];
};

struct cond_tstate {
	pthread_spinlock_t lock;	/* owner's adoption vs. readers */
	uint64_t gen;
	struct cond_set *set;
	uint64_t *vals;			/* [set->nr] */
	uint8_t *applies;		/* [set->nr]: counter i counts this thread */
	uint32_t last_k;
	struct ev_by_slot by_slot;	/* mon_cond_account's scratch, all 0 between calls */
};

static uint64_t cond_cur_gen;		/* atomic; 0 = never armed */
static struct cond_set *cond_cur;	/* protected by cond_lock */
static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;

static void set_free(struct cond_set *s)
{
	if (!s)
		return;
	mon_free(s->slot);
	mon_free(s->thr_off);
	mon_free(s->thr);
	mon_free(s->global);
	mon_free(s->bounds);
	mon_free(s->iv_off);
	mon_free(s->iv_ctr);
	mon_free(s->site_off);
	mon_free(s->site_ctr);
	mon_free(s->both);
	mon_free(s->kind_ctr);
	mon_free(s->ex_off);
	mon_free(s->ex_site);
	mon_free(s->ex_kinds);
	mon_free(s->served);
	for (uint32_t id = 0; s->base && id < s->nr_base; id++)
		mon_free(s->base[id]);
	mon_free(s->base);
	mon_free(s->gone);
	mon_free(s->quiet);
	served_scratch_free(s->walk);
	mon_free(s);
}


/* Drops one reference; caller holds cond_lock. */
static void set_put(struct cond_set *s)
{
	if (s && --s->refs == 0)
		set_free(s);
}

static int cmp_uptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Index k of the interval [bounds[k], bounds[k+1]) holding addr, or -1. */
static long find_interval(const struct cond_set *s, uintptr_t addr)
{
	uint32_t lo = 0, hi;

	if (s->nr_bounds < 2 || addr < s->bounds[0] || addr >= s->bounds[s->nr_bounds - 1])
		return -1;
	hi = s->nr_bounds - 1;	/* invariant: bounds[lo] <= addr < bounds[hi] */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (s->bounds[mid] <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/*
 * find_interval with a hint: the interval of the object walked before.
 * A thread's counts are walked in the order it first touched its objects,
 * which for blocks allocated one after another is address order: the
 * object lies in the hint's interval or the next one far more often than
 * not (run_cost's blocks: a binary search over every bound per block was
 * half of a served read's walk of 200,000 blocks).
 */
static long find_interval_near(const struct cond_set *s, uintptr_t addr, uint32_t *hint)
{
	uint32_t k = *hint;
	long r;

	if (k + 1 < s->nr_bounds && s->bounds[k] <= addr) {
		if (addr < s->bounds[k + 1])
			return k;
		if (k + 2 < s->nr_bounds && addr < s->bounds[k + 2]) {
			*hint = k + 1;
			return k + 1;
		}
	}
	r = find_interval(s, addr);
	if (r >= 0)
		*hint = (uint32_t)r;
	return r;
}

static uint32_t bound_index(const struct cond_set *s, uintptr_t a)
{
	uintptr_t *p = bsearch(&a, s->bounds, s->nr_bounds, sizeof(*s->bounds), cmp_uptr);

	return (uint32_t)(p - s->bounds);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/*
 * The site CSR of s (nothing when no counter names a site): the (site,
 * counter) pairs sorted and made unique, so that a site a counter lists
 * twice counts once. 0 or AMEBA_ENOMEM.
 */
static int sites_build(struct cond_set *s, const struct mon_cond_spec *specs, uint32_t nr)
{
	uint32_t max = 0, nr_pairs = 0, k = 0;
	uint64_t *pairs;

	for (uint32_t i = 0; i < nr; i++) {
		nr_pairs += specs[i].nr_sites;
		for (uint32_t j = 0; j < specs[i].nr_sites; j++)
			max = specs[i].sites[j] > max ? specs[i].sites[j] : max;
	}
	if (!max)
		return 0;
	pairs = mon_calloc(nr_pairs, sizeof(*pairs));
	s->site_off = mon_calloc((size_t)max + 2, sizeof(*s->site_off));
	s->site_ctr = mon_calloc(nr_pairs, sizeof(*s->site_ctr));
	s->both = mon_calloc(nr + 1, sizeof(*s->both));
	if (!pairs || !s->site_off || !s->site_ctr || !s->both) {
		mon_free(pairs);
		return AMEBA_ENOMEM;
	}
	nr_pairs = 0;
	for (uint32_t i = 0; i < nr; i++) {
		s->both[i] = specs[i].nr_ranges && specs[i].nr_sites;
		for (uint32_t j = 0; j < specs[i].nr_sites; j++)
			pairs[nr_pairs++] = (uint64_t)specs[i].sites[j] << 32 | i;
	}
	qsort(pairs, nr_pairs, sizeof(*pairs), cmp_u64);
	for (uint32_t j = 0; j < nr_pairs; j++) {
		if (j && pairs[j] == pairs[j - 1])
			continue;
		s->site_off[(pairs[j] >> 32) + 1]++;
		s->site_ctr[k++] = (uint32_t)pairs[j];
	}
	for (uint32_t id = 0; id <= max; id++)
		s->site_off[id + 1] += s->site_off[id];
	s->nr_site_ids = max + 1;
	s->by_obj = 1;
	mon_free(pairs);
	return 0;
}

/* The kind CSR of s (nothing when no counter names a kind). 0 or AMEBA_ENOMEM. */
static int kinds_build(struct cond_set *s, const struct mon_cond_spec *specs, uint32_t nr)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < nr; i++)
		for (int k = 0; k < MON_OBJ_NR_KINDS; k++)
			n += (specs[i].kinds >> k) & 1;
	if (!n)
		return 0;
	s->kind_ctr = mon_calloc(n, sizeof(*s->kind_ctr));
	if (!s->both)
		s->both = mon_calloc(nr + 1, sizeof(*s->both));
	if (!s->kind_ctr || !s->both)
		return AMEBA_ENOMEM;
	n = 0;
	for (int k = 0; k < MON_OBJ_NR_KINDS; k++) {
		s->kind_off[k] = n;
		for (uint32_t i = 0; i < nr; i++)
			if ((specs[i].kinds >> k) & 1)
				s->kind_ctr[n++] = i;
	}
	s->kind_off[MON_OBJ_NR_KINDS] = n;
	for (uint32_t i = 0; i < nr; i++)
		s->both[i] |= specs[i].nr_ranges && specs[i].kinds;
	s->by_obj = 1;
	return 0;
}

/* The exception lists of s (nothing when no counter has one). 0 or AMEBA_ENOMEM. */
static int except_build(struct cond_set *s, const struct mon_cond_spec *specs, uint32_t nr)
{
	uint32_t n = 0, any = 0;

	for (uint32_t i = 0; i < nr; i++) {
		n += specs[i].nr_except_sites;
		any |= specs[i].nr_except_sites | specs[i].except_kinds;
	}
	if (!any)
		return 0;
	s->ex_off = mon_calloc(nr + 1, sizeof(*s->ex_off));
	s->ex_site = mon_calloc(n + 1, sizeof(*s->ex_site));
	s->ex_kinds = mon_calloc(nr + 1, sizeof(*s->ex_kinds));
	if (!s->ex_off || !s->ex_site || !s->ex_kinds)
		return AMEBA_ENOMEM;
	n = 0;
	for (uint32_t i = 0; i < nr; i++) {
		s->ex_off[i] = n;
		memcpy(s->ex_site + n, specs[i].except_sites,
		       specs[i].nr_except_sites * sizeof(*s->ex_site));
		qsort(s->ex_site + n, specs[i].nr_except_sites, sizeof(*s->ex_site), cmp_u32);
		n += specs[i].nr_except_sites;
		s->ex_kinds[i] = (uint8_t)specs[i].except_kinds;
	}
	s->ex_off[nr] = n;
	s->has_ex = 1;
	return 0;
}

static int iv_has(const struct cond_set *s, long k, uint32_t c, const struct mon_obj *obj);

/* Does counter c leave obj out of its ranges? */
static int excepted(const struct cond_set *s, uint32_t c, const struct mon_obj *obj)
{
	uint32_t n = s->ex_off[c + 1] - s->ex_off[c];

	if (obj->kind >= MON_OBJ_NR_KINDS)
		return 0;
	if ((s->ex_kinds[c] >> obj->kind) & 1)
		return 1;
	if (!n || (obj->kind != MON_OBJ_HEAP && obj->kind != MON_OBJ_MMAP))
		return 0;
	return bsearch(&obj->site_id, s->ex_site + s->ex_off[c], n, sizeof(uint32_t), cmp_u32) != NULL;
}

/* AMEBA_COND_DEBUG=1: each arm logs how many counters are served. */
static int cond_debug(void)
{
	const char *e = getenv("AMEBA_COND_DEBUG");

	return e && *e && strcmp(e, "0");
}

/* AMEBA_COND_SERVED=0: match every counter per access (a check of the
 * served path, and a way around it). */
static int served_allowed(void)
{
	const char *e = getenv("AMEBA_COND_SERVED");

	return !e || strcmp(e, "0");
}

/* Are the active backend's per-object counts exact (every access counted
 * where it falls)? Its row of the backend table (mri/common.c) says. */
static int counts_exact(void)
{
	const struct mon_backend_ops *b = mon_backend;
	const struct ameba_backend_info *row = b ? ameba_backend_by_name(b->name) : NULL;

	return row && row->where == AMEBA_BACKEND_RUNTIME && row->exact;
}

/* Can counter spec be read from the per-object counts? Its ranges (if any)
 * must each begin at the start of a known object and end at the end of
 * one, and cut no object at either end. */
static int servable(const struct mon_cond_spec *spec)
{
	for (uint32_t j = 0; j < spec->nr_ranges; j++) {
		const struct mon_range *r = &spec->ranges[j];
		const struct mon_obj *a = mon_objmap_lookup(NULL, r->start);
		const struct mon_obj *z = mon_objmap_lookup(NULL, r->end - 1);

		if (!a || !z || a->kind == MON_OBJ_OTHER || z->kind == MON_OBJ_OTHER ||
		    a->start != r->start || z->end != r->end)
			return 0;
	}
	return 1;
}

/*
 * served_sum's walk of one thread's counts. A read walks every object the
 * thread ever touched (200,000 for a program of many blocks), so the walk
 * adds each object's whole vector into one sum per place it belongs to --
 * the thread's total, its interval of the ranges, its kind, its site --
 * and the counters take their metric's slot from those sums afterwards:
 * one vector add per place and object instead of one indirect add per
 * counter and object. With exceptions or counters that have both ranges
 * and sites (an access in both counts once), each object goes to its
 * counters one by one instead (served_obj_exact).
 */
struct served_walk {
	const struct cond_set *s;
	uint64_t *out;
	uint32_t nr_slots;
	uint64_t *tot;			/* [nr_slots] */
	uint64_t *iv_sum, *kind_sum, *site_sum;	/* [place][nr_slots] */
	uint32_t *iv_touched, nr_iv_touched;
	uint32_t *site_touched, nr_site_touched;
	uint8_t *iv_on, *site_on;	/* in the touched lists */
	uint8_t kind_on[MON_OBJ_NR_KINDS];
	uint32_t hint;			/* find_interval_near's */
};

static void served_scratch_free(struct served_walk *w)
{
	if (!w)
		return;
	mon_free(w->tot);
	mon_free(w->iv_sum);
	mon_free(w->iv_touched);
	mon_free(w->iv_on);
	mon_free(w->kind_sum);
	mon_free(w->site_sum);
	mon_free(w->site_touched);
	mon_free(w->site_on);
	mon_free(w);
}

static inline void vec_add(uint64_t *restrict sum, const uint64_t *restrict v, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		sum[i] += __atomic_load_n(&v[i], __ATOMIC_RELAXED);
}

static void served_obj_exact(struct served_walk *w, const struct mon_obj *obj, const uint64_t *v)
{
	const struct cond_set *s = w->s;
	uint64_t *out = w->out;
	long k;

	if (obj->kind == MON_OBJ_OTHER)
		return;
	/* a retired record (fold.c) has no extent: its site and kind only */
	k = __atomic_load_n(&obj->flags, __ATOMIC_RELAXED) & MON_OBJF_RETIRED ? -1 :
	    find_interval_near(s, obj->start, &w->hint);
	if (k >= 0)
		for (uint32_t j = s->iv_off[k]; j < s->iv_off[k + 1]; j++) {
			uint32_t c = s->iv_ctr[j];

			if (s->served[c] && !(s->has_ex && excepted(s, c, obj)))
				out[c] += __atomic_load_n(&v[s->slot[c]], __ATOMIC_RELAXED);
		}
	if (!s->by_obj)
		return;
	if (obj->kind < MON_OBJ_NR_KINDS)
		for (uint32_t j = s->kind_off[obj->kind]; j < s->kind_off[obj->kind + 1]; j++) {
			uint32_t c = s->kind_ctr[j];

			if (s->served[c] && (!s->both[c] || !iv_has(s, k, c, obj)))
				out[c] += __atomic_load_n(&v[s->slot[c]], __ATOMIC_RELAXED);
		}
	if (obj->site_id < s->nr_site_ids &&
	    (obj->kind == MON_OBJ_HEAP || obj->kind == MON_OBJ_MMAP))
		for (uint32_t j = s->site_off[obj->site_id]; j < s->site_off[obj->site_id + 1]; j++) {
			uint32_t c = s->site_ctr[j];

			if (s->served[c] && (!s->both[c] || !iv_has(s, k, c, obj)))
				out[c] += __atomic_load_n(&v[s->slot[c]], __ATOMIC_RELAXED);
		}
}

static int served_obj(uint32_t obj_idx, const uint64_t *v, void *arg)
{
	struct served_walk *w = arg;
	const struct cond_set *s = w->s;
	const struct mon_obj *obj = mon_objmap_get(obj_idx);
	uint32_t n = w->nr_slots;
	long k;

	if (!obj)
		return 0;
	vec_add(w->tot, v, n);
	if (!w->iv_sum) {	/* exceptions or counters on ranges and sites */
		served_obj_exact(w, obj, v);
		return 0;
	}
	if (obj->kind == MON_OBJ_OTHER)
		return 0;
	if (!(__atomic_load_n(&obj->flags, __ATOMIC_RELAXED) & MON_OBJF_RETIRED) &&
	    (k = find_interval_near(s, obj->start, &w->hint)) >= 0 &&
	    s->iv_off[k] < s->iv_off[k + 1]) {
		if (!w->iv_on[k]) {
			w->iv_on[k] = 1;
			w->iv_touched[w->nr_iv_touched++] = (uint32_t)k;
		}
		vec_add(w->iv_sum + (size_t)k * n, v, n);
	}
	if (!s->by_obj)
		return 0;
	if (obj->kind < MON_OBJ_NR_KINDS && s->kind_off[obj->kind] < s->kind_off[obj->kind + 1]) {
		w->kind_on[obj->kind] = 1;
		vec_add(w->kind_sum + (size_t)obj->kind * n, v, n);
	}
	if (obj->site_id < s->nr_site_ids && (obj->kind == MON_OBJ_HEAP || obj->kind == MON_OBJ_MMAP) &&
	    s->site_off[obj->site_id] < s->site_off[obj->site_id + 1]) {
		if (!w->site_on[obj->site_id]) {
			w->site_on[obj->site_id] = 1;
			w->site_touched[w->nr_site_touched++] = obj->site_id;
		}
		vec_add(w->site_sum + (size_t)obj->site_id * n, v, n);
	}
	return 0;
}

/* The sums' scratch of s (one per set: reads and the snapshot run under
 * cond_lock), made at the first use; 0 or AMEBA_ENOMEM. Without it (the
 * exact walk) when the set has exceptions or counters on both ranges and
 * sites or kinds. */
static int served_scratch(struct cond_set *s)
{
	uint32_t n = (uint32_t)mon_nr_slots, nr_iv = s->nr_bounds > 1 ? s->nr_bounds - 1 : 0;
	struct served_walk *w;
	int both = 0;

	if (s->walk)
		return 0;
	w = mon_calloc(1, sizeof(*w));
	if (!w)
		return AMEBA_ENOMEM;
	w->s = s;
	w->nr_slots = n;
	w->tot = mon_calloc(n + 1, sizeof(uint64_t));
	for (uint32_t i = 0; s->both && i < s->nr; i++)
		both |= s->both[i];
	if (!s->has_ex && !both) {
		w->iv_sum = mon_calloc((size_t)(nr_iv + 1) * n, sizeof(uint64_t));
		w->iv_touched = mon_calloc(nr_iv + 1, sizeof(uint32_t));
		w->iv_on = mon_calloc(nr_iv + 1, 1);
		w->kind_sum = mon_calloc((size_t)MON_OBJ_NR_KINDS * n, sizeof(uint64_t));
		w->site_sum = mon_calloc((size_t)(s->nr_site_ids + 1) * n, sizeof(uint64_t));
		w->site_touched = mon_calloc(s->nr_site_ids + 1, sizeof(uint32_t));
		w->site_on = mon_calloc(s->nr_site_ids + 1, 1);
		if (!w->iv_sum || !w->iv_touched || !w->iv_on || !w->kind_sum || !w->site_sum ||
		    !w->site_touched || !w->site_on) {
			served_scratch_free(w);
			w = mon_calloc(1, sizeof(*w));	/* the exact walk needs no sums */
			if (!w)
				return AMEBA_ENOMEM;
			w->s = s;
			w->nr_slots = n;
			w->tot = mon_calloc(n + 1, sizeof(uint64_t));
		}
	}
	if (!w->tot) {
		served_scratch_free(w);
		return AMEBA_ENOMEM;
	}
	s->walk = w;
	return 0;
}

/* One place's sum (of nr_slots slots) into its served counters ctr[from,
 * to), each its metric's slot; clears the sum for the next walk. */
static void take_sum(const struct cond_set *s, uint64_t *out, uint64_t *sum, uint32_t nr_slots,
		     const uint32_t *ctr, uint32_t from, uint32_t to)
{
	for (uint32_t j = from; j < to; j++)
		if (s->served[ctr[j]])
			out[ctr[j]] += sum[s->slot[ctr[j]]];
	memset(sum, 0, nr_slots * sizeof(uint64_t));
}

/* Thread t's counts so far for the served counters of s that apply to it,
 * into out[0..s->nr) (zeroed here); 1 if any is non-zero. */
static int served_sum(struct cond_set *s, struct mon_thread *t, uint64_t *out)
{
	struct served_walk *w;
	uint32_t n;
	int any = 0;

	memset(out, 0, s->nr * sizeof(*out));
	if (served_scratch(s))
		return 0;
	w = s->walk;
	n = w->nr_slots;
	w->out = out;
	w->hint = 0;
	memset(w->tot, 0, n * sizeof(uint64_t));
	mon_counts_for_each(t, served_obj, w);
	for (uint32_t i = 0; i < s->nr_global; i++) {
		uint32_t c = s->global[i];

		if (s->served[c])
			out[c] += w->tot[s->slot[c]];
	}
	if (w->iv_sum) {
		for (uint32_t i = 0; i < w->nr_iv_touched; i++) {
			uint32_t k = w->iv_touched[i];

			take_sum(s, out, w->iv_sum + (size_t)k * n, n, s->iv_ctr, s->iv_off[k],
				 s->iv_off[k + 1]);
			w->iv_on[k] = 0;
		}
		w->nr_iv_touched = 0;
		for (int kind = 0; kind < MON_OBJ_NR_KINDS; kind++)
			if (w->kind_on[kind]) {
				take_sum(s, out, w->kind_sum + (size_t)kind * n, n, s->kind_ctr,
					 s->kind_off[kind], s->kind_off[kind + 1]);
				w->kind_on[kind] = 0;
			}
		for (uint32_t i = 0; i < w->nr_site_touched; i++) {
			uint32_t id = w->site_touched[i];

			take_sum(s, out, w->site_sum + (size_t)id * n, n, s->site_ctr, s->site_off[id],
				 s->site_off[id + 1]);
			w->site_on[id] = 0;
		}
		w->nr_site_touched = 0;
	}
	for (uint32_t i = 0; i < s->nr; i++) {
		uint32_t nt = s->thr_off[i + 1] - s->thr_off[i];

		if (out[i] && nt && !bsearch(&t->id, s->thr + s->thr_off[i], nt, sizeof(uint32_t), cmp_u32))
			out[i] = 0;
		any |= out[i] != 0;
	}
	return any;
}

/* The snapshot of the served counters at the arm (cond_lock held, every
 * thread stopped at its next access). 0 or AMEBA_ENOMEM. */
static int served_snapshot(struct cond_set *s)
{
	uint32_t nr = mon_thread_nr();

	if (!s->nr_served)
		return 0;
	s->base = mon_calloc(nr + 1, sizeof(*s->base));
	s->gone = mon_calloc(nr + 1, sizeof(*s->gone));
	if (!s->base || !s->gone)
		return AMEBA_ENOMEM;
	s->nr_base = nr;
	for (uint32_t id = 0; id < nr; id++) {
		struct mon_thread *t = mon_thread_get(id);

		if (!t)
			continue;
		if (__atomic_load_n(&t->exited, __ATOMIC_ACQUIRE)) {
			s->gone[id] = 1;
			continue;
		}
		if (!mon_counts_nr(t))
			continue;
		s->base[id] = mon_calloc(s->nr, sizeof(uint64_t));
		if (!s->base[id])
			return AMEBA_ENOMEM;
		served_sum(s, t, s->base[id]);
	}
	return 0;
}

/* Builds the immutable set; NULL with *err set on failure. */
static struct cond_set *set_build(const struct mon_cond_spec *specs, uint32_t nr, int *err)
{
	struct cond_set *s = mon_calloc(1, sizeof(*s));
	uint32_t nr_ranges = 0, nr_thr = 0, nr_b = 0;
	uint32_t *mark = NULL, *fill = NULL;
	uint64_t cover = 0;

	*err = AMEBA_ENOMEM;
	if (!s)
		return NULL;
	for (uint32_t i = 0; i < nr; i++) {
		nr_ranges += specs[i].nr_ranges;
		nr_thr += specs[i].nr_threads;
	}
	s->nr = nr;
	s->slot = mon_calloc(nr + 1, sizeof(*s->slot));
	s->thr_off = mon_calloc(nr + 1, sizeof(*s->thr_off));
	s->thr = mon_calloc(nr_thr + 1, sizeof(*s->thr));
	s->global = mon_calloc(nr + 1, sizeof(*s->global));
	s->bounds = mon_calloc(2 * (size_t)nr_ranges + 1, sizeof(*s->bounds));
	if (!s->slot || !s->thr_off || !s->thr || !s->global || !s->bounds)
		goto fail;

	for (uint32_t i = 0, t = 0; i < nr; i++) {
		s->slot[i] = (uint16_t)mon_slot_of_metric[specs[i].metric];
		s->thr_off[i] = t;
		for (uint32_t j = 0; j < specs[i].nr_threads; j++)
			s->thr[t++] = specs[i].threads[j];
		qsort(s->thr + s->thr_off[i], specs[i].nr_threads, sizeof(*s->thr), cmp_u32);
		s->thr_off[i + 1] = t;
		if (specs[i].nr_ranges == 0 && specs[i].nr_sites == 0 && specs[i].kinds == 0)
			s->global[s->nr_global++] = i;
		for (uint32_t j = 0; j < specs[i].nr_ranges; j++) {
			s->bounds[nr_b++] = specs[i].ranges[j].start;
			s->bounds[nr_b++] = specs[i].ranges[j].end;
		}
	}
	qsort(s->bounds, nr_b, sizeof(*s->bounds), cmp_uptr);
	s->nr_bounds = 0;
	for (uint32_t i = 0; i < nr_b; i++)
		if (s->nr_bounds == 0 || s->bounds[s->nr_bounds - 1] != s->bounds[i])
			s->bounds[s->nr_bounds++] = s->bounds[i];

	/* Two passes over the coverage: count per interval, then fill. */
	uint32_t nr_iv = s->nr_bounds > 1 ? s->nr_bounds - 1 : 0;

	s->iv_off = mon_calloc(nr_iv + 2, sizeof(*s->iv_off));
	mark = mon_calloc(nr_iv + 1, sizeof(*mark));
	fill = mon_calloc(nr_iv + 1, sizeof(*fill));
	if (!s->iv_off || !mark || !fill)
		goto fail;
	for (int pass = 0; pass < 2; pass++) {
		memset(mark, 0, (nr_iv + 1) * sizeof(*mark));
		for (uint32_t i = 0; i < nr; i++) {
			for (uint32_t j = 0; j < specs[i].nr_ranges; j++) {
				uint32_t k0 = bound_index(s, specs[i].ranges[j].start);
				uint32_t k1 = bound_index(s, specs[i].ranges[j].end);

				for (uint32_t k = k0; k < k1; k++) {
					if (mark[k] == i + 1)
						continue;	/* this counter covers k already */
					mark[k] = i + 1;
					if (pass == 0) {
						s->iv_off[k + 1]++;
						if (++cover > (64u << 20)) {
							*err = AMEBA_ERANGE;
							goto fail;
						}
					} else {
						s->iv_ctr[s->iv_off[k] + fill[k]++] = i;
					}
				}
			}
		}
		if (pass == 0) {
			for (uint32_t k = 0; k < nr_iv; k++)
				s->iv_off[k + 1] += s->iv_off[k];
			s->iv_ctr = mon_calloc(cover + 1, sizeof(*s->iv_ctr));
			if (!s->iv_ctr)
				goto fail;
		}
	}
	if (sites_build(s, specs, nr) || kinds_build(s, specs, nr) || except_build(s, specs, nr)) {
		*err = AMEBA_ENOMEM;
		goto fail;
	}
	s->served = mon_calloc(nr + 1, sizeof(*s->served));
	if (!s->served) {
		*err = AMEBA_ENOMEM;
		goto fail;
	}
	/* all or none: a set with any per-access counter keeps the access
	 * path, and then gains little from serving the others */
	if (counts_exact() && served_allowed()) {
		uint32_t n = 0;

		for (uint32_t i = 0; i < nr; i++)
			n += (s->served[i] = (uint8_t)servable(&specs[i]));
		if (n == nr)
			s->nr_served = n;
		else
			memset(s->served, 0, nr);
	}
	mon_free(mark);
	mon_free(fill);
	*err = 0;
	return s;
fail:
	mon_free(mark);
	mon_free(fill);
	set_free(s);
	return NULL;
}

static int arm_set(const struct mon_cond_spec *specs, uint32_t nr, uint64_t *gen,
		   void (*then)(void *arg), void *arg, struct mon_cond_final *fin);
static int set_read(struct cond_set *set, uint64_t gen, uint64_t *total, uint64_t *before, uint32_t nr,
		    mon_cond_row_fn per_thread, void *arg);

int mon_cond_arm(const struct mon_cond_spec *specs, uint32_t nr, uint64_t *gen)
{
	return mon_cond_arm_then(specs, nr, gen, NULL, NULL);
}

int mon_cond_arm_then(const struct mon_cond_spec *specs, uint32_t nr, uint64_t *gen,
		      void (*then)(void *arg), void *arg)
{
	return arm_set(specs, nr, gen, then, arg, NULL);
}

int mon_cond_arm_swap(const struct mon_cond_spec *specs, uint32_t nr, uint64_t *gen,
		      struct mon_cond_final *fin)
{
	return arm_set(specs, nr, gen, NULL, NULL, fin);
}

static int arm_set(const struct mon_cond_spec *specs, uint32_t nr, uint64_t *gen,
		   void (*then)(void *arg), void *arg, struct mon_cond_final *fin)
{
	struct cond_set *s = NULL, *old;
	uint32_t nr_ranges = 0, nr_threads = mon_thread_nr();
	uint64_t nr_sites = 0;
	int err;

	if (nr > MON_COND_MAX || (nr && !specs))
		return AMEBA_EINVAL;
	for (uint32_t i = 0; i < nr; i++) {
		const struct mon_cond_spec *c = &specs[i];

		if (c->metric < 0 || c->metric >= AMEBA_M_NR)
			return AMEBA_EINVAL;
		if (!mon_backend || mon_slot_of_metric[c->metric] < 0)
			return AMEBA_ENOTSUP;
		if ((c->nr_ranges && !c->ranges) || (c->nr_threads && !c->threads) ||
		    (c->nr_sites && !c->sites))
			return AMEBA_EINVAL;
		for (uint32_t j = 0; j < c->nr_sites; j++)
			if (c->sites[j] == 0 || c->sites[j] > MON_COND_MAX_SITE)
				return AMEBA_EINVAL;
		nr_sites += c->nr_sites + c->nr_except_sites;
		if ((c->nr_except_sites && !c->except_sites) ||
		    (c->except_kinds & ~((1u << MON_OBJ_STACK) | (1u << MON_OBJ_TLS))))
			return AMEBA_EINVAL;
		if (c->kinds & ~((1u << MON_OBJ_STACK) | (1u << MON_OBJ_TLS)))
			return AMEBA_EINVAL;
		for (uint32_t j = 0; j < c->nr_ranges; j++)
			if (c->ranges[j].start >= c->ranges[j].end)
				return AMEBA_EINVAL;
		nr_ranges += c->nr_ranges;
		(void)nr_threads;
	}
	if (nr_ranges > MON_COND_MAX_RANGES || nr_sites > MON_COND_MAX_RANGES)
		return AMEBA_EINVAL;
	if (nr) {
		s = set_build(specs, nr, &err);
		if (!s)
			return err;
	}

	/* the batch (batch.c) simulates nothing while the set changes, so
	 * that the old set's final read, the served counters' snapshot and
	 * then() see one instant; taken before cond_lock, which a batch being
	 * simulated may need (a thread adopting a set) */
	mon_batch_hold(1);
	pthread_mutex_lock(&cond_lock);
	old = cond_cur;
	if (s) {
		s->gen = __atomic_load_n(&cond_cur_gen, __ATOMIC_RELAXED) + 1;
		s->refs = 1;
	}
	cond_cur = s;
	__atomic_store_n(&mon_cond_armed, s != NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&cond_cur_gen, __atomic_load_n(&cond_cur_gen, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELEASE);
	if (gen)
		*gen = __atomic_load_n(&cond_cur_gen, __ATOMIC_RELAXED);
	/* every thread counts into the new set only once it adopted it,
	 * under cond_lock: until the lock is released, a thread stops at its
	 * first access (at most one uncounted in-flight event each); so the
	 * served counters' snapshot and then() see the same instant */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (fin) {
		/* the threads have not adopted s yet: old holds their counts */
		fin->err = old && old->gen == fin->gen ?
				   set_read(old, fin->gen, fin->total, fin->before, fin->nr,
					    fin->per_thread, fin->arg) :
				   AMEBA_ENOENT;
	}
	if (s && served_snapshot(s)) {
		/* no memory for the snapshot: every counter per access */
		memset(s->served, 0, s->nr);
		s->nr_served = 0;
	}
	if (then)
		then(arg);
	if (s && cond_debug()) {
		uint32_t shown = 0;

		uint32_t both = 0;

		for (uint32_t i = 0; s->both && i < s->nr; i++)
			both += s->both[i];
		mon_log("cond: armed %u counters, %u served from the per-object counts (%u with "
			"ranges and bins%s)", s->nr, s->nr_served, both,
			s->has_ex ? ", exceptions" : "");
		for (uint32_t i = 0; i < nr && shown < 4; i++)
			if (!s->served[i] && specs[i].nr_ranges) {
				shown++;
				mon_log("cond:   per access: counter %u, %u ranges, the first "
					"[%#lx, %#lx)", i, specs[i].nr_ranges,
					(unsigned long)specs[i].ranges[0].start,
					(unsigned long)specs[i].ranges[0].end);
			}
	}
	if (s && s->nr_served == s->nr)
		__atomic_store_n(&mon_cond_armed, 0, __ATOMIC_RELEASE);	/* nothing per access */
	set_put(old);
	/* Exited threads will never adopt the new set: release what they hold. */
	for (uint32_t id = 0; id < mon_thread_nr(); id++) {
		struct mon_thread *t = mon_thread_get(id);
		struct cond_tstate *ts;

		if (!t || !__atomic_load_n(&t->exited, __ATOMIC_ACQUIRE) || !(ts = t->cond) ||
		    ts->set == s)
			continue;
		pthread_spin_lock(&ts->lock);
		if (ts->gen + 1 < __atomic_load_n(&cond_cur_gen, __ATOMIC_RELAXED)) {
			/* Two generations old: nobody reads it any more. */
			set_put(ts->set);
			ts->set = NULL;
			mon_free(ts->vals);
			mon_free(ts->applies);
			ts->vals = NULL;
			ts->applies = NULL;
		}
		pthread_spin_unlock(&ts->lock);
	}
	pthread_mutex_unlock(&cond_lock);
	mon_batch_hold(0);
	return 0;
}

/* Adopts the current set on thread t (slow path, once per arm). */
static struct cond_tstate *cond_adopt(struct mon_thread *t)
{
	struct cond_tstate *ts = t->cond;
	struct cond_set *s;
	uint64_t *vals = NULL;
	uint8_t *applies = NULL;

	if (!ts) {
		ts = mon_calloc(1, sizeof(*ts));
		if (!ts)
			return NULL;
		pthread_spin_init(&ts->lock, PTHREAD_PROCESS_PRIVATE);
		__atomic_store_n(&t->cond, ts, __ATOMIC_RELEASE);
	}
	pthread_mutex_lock(&cond_lock);
	s = cond_cur;
	if (s) {
		vals = mon_calloc(s->nr, sizeof(*vals));
		applies = mon_calloc(s->nr, sizeof(*applies));
		if (!vals || !applies) {
			mon_free(vals);
			mon_free(applies);
			pthread_mutex_unlock(&cond_lock);
			return NULL;
		}
		for (uint32_t i = 0; i < s->nr; i++) {
			uint32_t n = s->thr_off[i + 1] - s->thr_off[i];

			applies[i] = !s->served[i] &&
				     (n == 0 || bsearch(&t->id, s->thr + s->thr_off[i], n,
							sizeof(uint32_t), cmp_u32) != NULL);
		}
		s->refs++;
	}
	pthread_spin_lock(&ts->lock);
	set_put(ts->set);
	mon_free(ts->vals);
	mon_free(ts->applies);
	ts->set = s;
	ts->vals = vals;
	ts->applies = applies;
	ts->last_k = 0;
	ts->gen = __atomic_load_n(&cond_cur_gen, __ATOMIC_RELAXED);
	pthread_spin_unlock(&ts->lock);
	pthread_mutex_unlock(&cond_lock);
	return ts;
}

static inline void ev_spread(struct ev_by_slot *b, const struct mon_events *ev)
{
	for (uint32_t e = 0; e < ev->nr; e++)
		b->n[ev->slot[e]] = ev->n[e];
}

static inline void ev_unspread(struct ev_by_slot *b, const struct mon_events *ev)
{
	for (uint32_t e = 0; e < ev->nr; e++)
		b->n[ev->slot[e]] = 0;
}

static inline void apply(struct cond_tstate *ts, uint32_t c, const struct ev_by_slot *b)
{
	uint64_t n = b->n[ts->set->slot[c]];

	if (n && ts->applies[c])
		__atomic_store_n(&ts->vals[c], __atomic_load_n(&ts->vals[c], __ATOMIC_RELAXED) + n,
				 __ATOMIC_RELAXED);
}

/* Did counter c count obj's access in interval k? (lists are short) */
static int iv_has(const struct cond_set *s, long k, uint32_t c, const struct mon_obj *obj)
{
	if (k < 0 || (s->has_ex && excepted(s, c, obj)))
		return 0;
	for (uint32_t j = s->iv_off[k]; j < s->iv_off[k + 1]; j++)
		if (s->iv_ctr[j] == c)
			return 1;
	return 0;
}

/* The counters naming the site of obj (a heap or mmap block) or its kind. */
static inline void account_site(struct cond_tstate *ts, const struct cond_set *s, long k,
				const struct mon_obj *obj, const struct ev_by_slot *ev)
{
	uint32_t id = obj->site_id;

	if (obj->kind < MON_OBJ_NR_KINDS)
		for (uint32_t j = s->kind_off[obj->kind]; j < s->kind_off[obj->kind + 1]; j++) {
			uint32_t c = s->kind_ctr[j];

			if (!s->both[c] || !iv_has(s, k, c, obj))
				apply(ts, c, ev);
		}
	if (id >= s->nr_site_ids || (obj->kind != MON_OBJ_HEAP && obj->kind != MON_OBJ_MMAP))
		return;
	for (uint32_t j = s->site_off[id]; j < s->site_off[id + 1]; j++) {
		uint32_t c = s->site_ctr[j];

		if (!s->both[c] || !iv_has(s, k, c, obj))
			apply(ts, c, ev);
	}
}

void mon_cond_account(struct mon_thread *t, uintptr_t addr, const struct mon_obj *obj,
		      const struct mon_events *ev)
{
	struct cond_tstate *ts = t->cond;
	const struct cond_set *s;
	long k;

	if (mon_unlikely(!ts || ts->gen != __atomic_load_n(&cond_cur_gen, __ATOMIC_ACQUIRE))) {
		ts = cond_adopt(t);
		if (!ts)
			return;
	}
	s = ts->set;
	if (!s || ev->nr == 0)
		return;
	/* per thread (the one writer of ts): spread, apply, clear */
	struct ev_by_slot *b = &ts->by_slot;
	ev_spread(b, ev);
	for (uint32_t i = 0; i < s->nr_global; i++)
		apply(ts, s->global[i], b);
	k = ts->last_k;
	if (!(k + 1 < (long)s->nr_bounds && s->bounds[k] <= addr && addr < s->bounds[k + 1])) {
		k = find_interval(s, addr);
		if (k >= 0)
			ts->last_k = (uint32_t)k;
	}
	if (k >= 0 && mon_unlikely(s->has_ex) && obj) {
		for (uint32_t j = s->iv_off[k]; j < s->iv_off[k + 1]; j++)
			if (!excepted(s, s->iv_ctr[j], obj))
				apply(ts, s->iv_ctr[j], b);
	} else if (k >= 0) {
		for (uint32_t j = s->iv_off[k]; j < s->iv_off[k + 1]; j++)
			apply(ts, s->iv_ctr[j], b);
	}
	if (mon_unlikely(s->by_obj) && obj)
		account_site(ts, s, k, obj, b);
	ev_unspread(b, ev);
}

/* Reads set (generation gen) as mon_cond_read does; cond_lock held. */
static int set_read(struct cond_set *set, uint64_t gen, uint64_t *total, uint64_t *before, uint32_t nr,
		    mon_cond_row_fn per_thread, void *arg)
{
	uint32_t nr_threads = mon_thread_nr(), read_no = 0;
	uint64_t *mine = NULL, *now = NULL;
	int err = 0;

	if (nr > set->nr)
		nr = set->nr;
	if (per_thread) {
		read_no = ++set->nr_row_reads;
		if (set->nr_quiet < nr_threads) {
			uint32_t *q = mon_realloc(set->quiet, (nr_threads + 1) * sizeof(*q));

			if (q) {
				memset(q + set->nr_quiet, 0, (nr_threads - set->nr_quiet) * sizeof(*q));
				set->quiet = q;
				set->nr_quiet = nr_threads;
			}
		}
	}
	memset(total, 0, nr * sizeof(*total));
	if (before)
		memset(before, 0, nr * sizeof(*before));
	if (per_thread && !(mine = mon_calloc(nr + 1, sizeof(*mine)))) {
		err = AMEBA_ENOMEM;
		goto out;
	}
	if (set->nr_served && !(now = mon_calloc(set->nr + 1, sizeof(*now)))) {
		err = AMEBA_ENOMEM;
		goto out;
	}
	for (uint32_t id = 0; id < nr_threads; id++) {
		struct mon_thread *t = mon_thread_get(id);
		struct cond_set *s = set;
		struct cond_tstate *ts;
		const uint64_t *b = id < s->nr_base ? s->base[id] : NULL;
		int any = 0, served = 0;

		if (!t)
			continue;
		/* the served counters' objects before the arm (NULL: none) */
		for (uint32_t i = 0; b && i < nr; i++) {
			if (before)
				before[i] += b[i];
			served |= b[i] != 0;
		}
		if (mine)
			memset(mine, 0, nr * sizeof(*mine));
		/* the served counters: now minus the snapshot */
		if (s->nr_served && !(id < s->nr_base && s->gone[id]) && served_sum(s, t, now)) {
			for (uint32_t i = 0; i < nr; i++) {
				uint64_t v = now[i] - (b ? b[i] : 0);

				if (!s->served[i] || !v)
					continue;
				total[i] += v;
				if (mine)
					mine[i] = v;
				served = 1;
			}
		}
		any = served;
		if ((ts = __atomic_load_n(&t->cond, __ATOMIC_ACQUIRE))) {
			pthread_spin_lock(&ts->lock);
			if (ts->gen == gen && ts->vals) {
				for (uint32_t i = 0; i < nr; i++) {
					uint64_t v = __atomic_load_n(&ts->vals[i], __ATOMIC_RELAXED);

					if (s->served[i])
						continue;
					total[i] += v;
					if (mine)
						mine[i] = v;
					any |= v != 0;
				}
			}
			pthread_spin_unlock(&ts->lock);
		}
		/* an exited thread's row is sent by the first read with rows
		 * that finds it exited (the counts were merged: the server
		 * syncs before it reads), then no more: it cannot change */
		if (per_thread && id < set->nr_quiet) {
			if (set->quiet[id] && set->quiet[id] < read_no)
				any = 0;
			else if (!set->quiet[id] && __atomic_load_n(&t->exited, __ATOMIC_ACQUIRE))
				set->quiet[id] = read_no;
		}
		if (any && per_thread)
			per_thread(id, mine, b, nr, arg);
	}
out:
	mon_free(mine);
	mon_free(now);
	return err;
}

int mon_cond_read(uint64_t gen, uint64_t *total, uint64_t *before, uint32_t nr,
		  mon_cond_row_fn per_thread, void *arg)
{
	int err = AMEBA_ENOENT;

	pthread_mutex_lock(&cond_lock);
	if (cond_cur && cond_cur->gen == gen)
		err = set_read(cond_cur, gen, total, before, nr, per_thread, arg);
	pthread_mutex_unlock(&cond_lock);
	return err;
}

int mon_cond_current(uint64_t *gen, uint32_t *nr)
{
	int err = AMEBA_ENOENT;

	pthread_mutex_lock(&cond_lock);
	if (cond_cur) {
		*gen = cond_cur->gen;
		*nr = cond_cur->nr;
		err = 0;
	}
	pthread_mutex_unlock(&cond_lock);
	return err;
}

void mon_cond_locked(void (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&cond_lock);
	fn(arg);
	pthread_mutex_unlock(&cond_lock);
}

int mon_cond_ranges_name(const struct mon_obj *o)
{
	const struct cond_set *s = cond_cur;
	long k;

	if (!s || !s->nr_served || (k = find_interval(s, o->start)) < 0)
		return 0;
	for (uint32_t j = s->iv_off[k]; j < s->iv_off[k + 1]; j++)
		if (s->served[s->iv_ctr[j]])
			return 1;
	return 0;
}

void mon_cond_after_fork(void)
{
	uint32_t nr = mon_thread_nr();

	pthread_mutex_init(&cond_lock, NULL);
	for (uint32_t id = 0; id < nr; id++) {
		struct mon_thread *t = mon_thread_get(id);

		if (t && t->cond)
			pthread_spin_init(&((struct cond_tstate *)t->cond)->lock, PTHREAD_PROCESS_PRIVATE);
	}
}
