/*
 * counts.c - per-thread, per-object metric counters.
 *
 * Notes:
 *  - Each thread owns an open-addressing hash table from object index to a
 *    counter vector of mon_nr_slots uint64_t (then the outcome slots, when a
 *    backend set them: mon_counts_outcomes; readers see them expanded into
 *    the metrics, mon_counts_for_each). Only the owner inserts and
 *    increments; so no two threads ever write one cache line of counters and
 *    the access path takes no shared lock.
 *  - Vectors live in per-thread arenas and never move, so a pointer returned
 *    by mon_counts_get() stays valid for the life of the process (the
 *    backend and the thread's last-object shortcut keep such pointers).
 *    Each vector is preceded by one word: its object index + 1 and its
 *    length, so that mon_counts_for_each() walks the arenas in address
 *    order (a read of every object's counts streams through memory; in
 *    hash order, 200,000 objects' vectors cost a cache miss each, ~95 ms).
 *  - Readers on other threads (the oracle at exit, an MRI client) take the
 *    table's lock, which the owner also takes while inserting; counter values
 *    are read and written with relaxed atomics.
 */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "mon.h"

int mon_nr_slots;
int mon_metric_of_slot[AMEBA_M_NR];
int mon_slot_of_metric[AMEBA_M_NR];
/* the outcome kinds' rows (mon_counts_outcomes) and how many: each vector
 * made from then on has as many slots after its metrics' */
static struct mon_outcome_row outcome_row[MON_OUTCOMES];
static int nr_outcomes;

/* Arenas start small (most threads touch few objects) and double up to a cap. */
#define ARENA_MIN_BYTES 512u
#define ARENA_MAX_BYTES (64u << 10)
#define FOLD_BYTES 8192u		/* a thread's struct mon_fold */

struct counts_arena {
	struct counts_arena *next;
	size_t used, size;
	uint64_t data[];
};

/* 56 bytes, a 64-byte chunk of the program's heap (the runtime allocates
 * from it: a bigger record would move the program's own blocks). */
struct mon_counts {
	uint32_t *keys;		/* object index + 1; 0 = empty */
	uint64_t **vals;
	uint32_t cap;		/* power of two */
	uint32_t nr;
	uint32_t last_key;	/* shortcut: the last object looked up */
	pthread_spinlock_t lock;	/* owner's inserts and removals vs. other threads' reads */
	uint64_t *last_v;
	struct counts_arena *arena;
	struct mon_fold *fold;	/* fold.c's state and the vectors to reuse, or NULL */
};
_Static_assert(sizeof(struct mon_counts) <= 56, "one 64-byte heap chunk");

int mon_counts_configure(const int *metrics, int nr)
{
	if (nr <= 0 || nr > AMEBA_M_NR)
		return AMEBA_EINVAL;
	for (int m = 0; m < AMEBA_M_NR; m++)
		mon_slot_of_metric[m] = -1;
	for (int s = 0; s < nr; s++) {
		if (metrics[s] < 0 || metrics[s] >= AMEBA_M_NR)
			return AMEBA_EINVAL;
		mon_metric_of_slot[s] = metrics[s];
		mon_slot_of_metric[metrics[s]] = s;
	}
	mon_nr_slots = nr;
	return 0;
}

void mon_counts_outcomes(const struct mon_outcome_row *rows, int nr)
{
	if (nr < 0 || nr > MON_OUTCOMES)
		return;
	memcpy(outcome_row, rows, (size_t)nr * sizeof(*rows));
	nr_outcomes = nr;
}

/* A new vector's length: the metrics' slots, then the outcome kinds' */
static inline uint32_t vec_len(void)
{
	return (uint32_t)(mon_nr_slots + nr_outcomes);
}

/*
 * v (len slots) as its metrics: NULL when none of its outcome slots has
 * counted (v is then what it says), else out (mon_nr_slots values): the
 * metric slots plus each kind's count times its row. Relaxed loads, as
 * every reader's: a reader on another thread sees each access's one add
 * whole, where it could see part of the metrics an access adds to.
 */
static const uint64_t *expand(const uint64_t *v, uint32_t len, uint64_t *out)
{
	uint64_t n[MON_OUTCOMES], any = 0;
	uint32_t k, nk = len - (uint32_t)mon_nr_slots;

	if (len <= (uint32_t)mon_nr_slots)
		return NULL;
	if (nk > (uint32_t)nr_outcomes)
		nk = (uint32_t)nr_outcomes;
	for (k = 0; k < nk; k++)
		any |= n[k] = __atomic_load_n(&v[mon_nr_slots + (int)k], __ATOMIC_RELAXED);
	if (!any)
		return NULL;
	for (int s = 0; s < mon_nr_slots; s++)
		out[s] = __atomic_load_n(&v[s], __ATOMIC_RELAXED);
	for (k = 0; k < nk; k++)
		for (uint32_t j = 0; n[k] && j < outcome_row[k].nr; j++)
			out[outcome_row[k].slot[j]] += n[k] * outcome_row[k].add[j];
	return out;
}

static inline uint32_t hash_idx(uint32_t key)
{
	return key * 0x9e3779b1u;
}

static struct mon_counts *counts_new(void)
{
	struct mon_counts *c = mon_calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cap = 16;
	c->keys = mon_calloc(c->cap, sizeof(*c->keys));
	c->vals = mon_calloc(c->cap, sizeof(*c->vals));
	if (!c->keys || !c->vals) {
		mon_free(c->keys);
		mon_free(c->vals);
		mon_free(c);
		return NULL;
	}
	pthread_spin_init(&c->lock, PTHREAD_PROCESS_PRIVATE);
	return c;
}

/* A vector's header word: object index + 1, and the vector's length. */
#define HDR(key, n) ((uint64_t)(key) | (uint64_t)(n) << 32)
#define HDR_KEY(h) ((uint32_t)(h))
#define HDR_LEN(h) ((uint32_t)((h) >> 32))

static uint64_t *arena_alloc(struct mon_counts *c, uint32_t key)
{
	const uint32_t len = vec_len();
	size_t need = (size_t)(len + 1) * sizeof(uint64_t);
	struct counts_arena *a = c->arena;

	if (c->fold && c->fold->free_v) {
		/* a folded vector (mon_counts_retire): same length, in place */
		uint64_t *v = c->fold->free_v;

		c->fold->free_v = (uint64_t *)(uintptr_t)v[0];
		memset(v, 0, (size_t)len * sizeof(uint64_t));
		v[-1] = HDR(key, len);
		return v;
	}

	if (!a || a->used + need > a->size) {
		size_t size = a ? a->size * 2 : ARENA_MIN_BYTES;

		if (size > ARENA_MAX_BYTES)
			size = ARENA_MAX_BYTES;
		if (size < need)
			size = need;
		a = mon_calloc(1, sizeof(*a) + size);
		if (!a)
			return NULL;
		a->size = size;
		a->next = c->arena;
		c->arena = a;
	}
	uint64_t *v = (uint64_t *)((char *)a->data + a->used);
	a->used += need;
	v[0] = HDR(key, len);
	return v + 1;
}

/* Doubles the table; caller holds the lock. */
static int counts_grow(struct mon_counts *c)
{
	uint32_t cap = c->cap * 2;
	uint32_t *keys = mon_calloc(cap, sizeof(*keys));
	uint64_t **vals = mon_calloc(cap, sizeof(*vals));

	if (!keys || !vals) {
		mon_free(keys);
		mon_free(vals);
		return AMEBA_ENOMEM;
	}
	for (uint32_t i = 0; i < c->cap; i++) {
		uint32_t k = c->keys[i], h;

		if (!k)
			continue;
		for (h = hash_idx(k) & (cap - 1); keys[h]; h = (h + 1) & (cap - 1))
			;
		keys[h] = k;
		vals[h] = c->vals[i];
	}
	mon_free(c->keys);
	mon_free(c->vals);
	c->keys = keys;
	c->vals = vals;
	c->cap = cap;
	return 0;
}

/* The slot of key in c's table, or the empty slot where it would go. */
static uint32_t table_slot(const struct mon_counts *c, uint32_t key)
{
	uint32_t mask = c->cap - 1, i;

	for (i = hash_idx(key) & mask; c->keys[i] && c->keys[i] != key; i = (i + 1) & mask)
		;
	return i;
}

/* Inserts a new zeroed vector for key (absent; lock held), growing the
 * table first when it is 3/4 full. NULL when out of memory. */
static uint64_t *table_insert_locked(struct mon_counts *c, uint32_t key)
{
	uint64_t *v;
	uint32_t h;

	if ((c->nr + 1) * 4 > c->cap * 3 && counts_grow(c))
		return NULL;
	if (!(v = arena_alloc(c, key)))
		return NULL;
	h = table_slot(c, key);
	c->keys[h] = key;
	c->vals[h] = v;
	c->nr++;
	return v;
}

uint64_t *mon_counts_find(struct mon_thread *t, uint32_t obj_idx)
{
	struct mon_counts *c = __atomic_load_n(&t->counts, __ATOMIC_ACQUIRE);
	uint32_t h;
	uint64_t *v;

	if (!c)
		return NULL;
	pthread_spin_lock(&c->lock);
	h = table_slot(c, obj_idx + 1);
	v = c->keys[h] ? c->vals[h] : NULL;
	pthread_spin_unlock(&c->lock);
	return v;
}

uint64_t *mon_counts_get(struct mon_thread *t, uint32_t obj_idx)
{
	struct mon_counts *c = t->counts;
	uint32_t key = obj_idx + 1, h;
	uint64_t *v;

	if (mon_likely(c != NULL)) {
		if (c->last_key == key)
			return c->last_v;
	} else {
		c = counts_new();
		if (!c)
			return NULL;
		__atomic_store_n(&t->counts, c, __ATOMIC_RELEASE);
	}
	h = table_slot(c, key);
	if (c->keys[h]) {
		c->last_key = key;
		c->last_v = c->vals[h];
		return c->last_v;
	}
	/* A new object for this thread. */
	{
		struct mon_obj *o = mon_objmap_get(obj_idx);

		if (o)
			mon_objmap_hold(o, t->id);	/* fold.c: who must fold it */
	}
	pthread_spin_lock(&c->lock);
	v = table_insert_locked(c, key);
	if (v) {
		c->last_key = key;
		c->last_v = v;
	}
	pthread_spin_unlock(&c->lock);
	return v;
}

/* Adds slot i's vector to into, drops it from the table (lock held) and
 * keeps its memory for the next vector. */
static void table_fold_locked(struct mon_counts *c, uint32_t i, uint64_t *into)
{
	uint32_t mask = c->cap - 1, j;
	uint64_t *v = c->vals[i];
	uint32_t len = HDR_LEN(v[-1]) < HDR_LEN(into[-1]) ? HDR_LEN(v[-1]) : HDR_LEN(into[-1]);

	/* the outcome slots as they are (the sum of the expansions is the
	 * expansion of the sum) */
	for (uint32_t s = 0; s < len; s++)
		mon_count_add(into, (int)s, __atomic_load_n(&v[s], __ATOMIC_RELAXED));
	/* linear probing: shift back the entries whose probe passed slot i */
	for (j = i;;) {
		uint32_t home;

		j = (j + 1) & mask;
		if (!c->keys[j])
			break;
		home = hash_idx(c->keys[j]) & mask;
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			c->keys[i] = c->keys[j];
			c->vals[i] = c->vals[j];
			i = j;
		}
	}
	c->keys[i] = 0;
	c->vals[i] = NULL;
	c->nr--;
	v[-1] = HDR(0, HDR_LEN(v[-1]));	/* the arena walk skips it */
	if (c->fold) {	/* an ended thread's is not reused */
		v[0] = (uint64_t)(uintptr_t)c->fold->free_v;
		c->fold->free_v = v;
	}
}

int mon_counts_retire(struct mon_thread *t, uint32_t obj_idx, uint32_t ret_idx)
{
	struct mon_counts *c = __atomic_load_n(&t->counts, __ATOMIC_ACQUIRE);
	uint32_t i, r;
	uint64_t *into;
	int done = 0;

	if (!c)
		return 0;
	pthread_spin_lock(&c->lock);
	c->last_key = 0;
	c->last_v = NULL;
	i = table_slot(c, obj_idx + 1);
	if (!c->keys[i])
		goto out;
	r = table_slot(c, ret_idx + 1);
	if (c->keys[r]) {
		into = c->vals[r];
	} else {
		/* the retired record's vector, made here (an insert may grow
		 * the table: the block's slot is looked up again) */
		if (!(into = table_insert_locked(c, ret_idx + 1))) {
			done = -1;
			goto out;
		}
		i = table_slot(c, obj_idx + 1);
	}
	table_fold_locked(c, i, into);
	done = 1;
out:
	pthread_spin_unlock(&c->lock);
	return done;
}

struct mon_fold *mon_counts_fold_peek(struct mon_thread *t)
{
	return t->counts ? t->counts->fold : NULL;
}

struct mon_fold *mon_counts_fold_state(struct mon_thread *t)
{
	struct mon_counts *c = t->counts;

	if (!c) {
		if (!(c = counts_new()))
			return NULL;
		__atomic_store_n(&t->counts, c, __ATOMIC_RELEASE);
	}
	if (!c->fold) {
		/* not the program's heap: mapped, one page pair per thread
		 * (unmapped at its end: mon_counts_fold_end) */
		void *p = mmap(NULL, FOLD_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);

		if (p == MAP_FAILED)
			return NULL;
		c->fold = p;
		c->fold->cap = (uint32_t)((FOLD_BYTES - sizeof(struct mon_fold)) /
					  sizeof(struct mon_obj *));
	}
	return c->fold;
}

void mon_counts_fold_end(struct mon_thread *t)
{
	struct mon_counts *c = t->counts;
	struct mon_fold *f = NULL;

	if (!c || !c->fold || c->fold->nr)
		return;
	/* under the lock: mon_counts_retire reads c->fold for an ended thread */
	pthread_spin_lock(&c->lock);
	f = c->fold;
	c->fold = NULL;	/* the vectors on its free list stay unused */
	pthread_spin_unlock(&c->lock);
	munmap(f, FOLD_BYTES);
}

void mon_counts_for_each(struct mon_thread *t,
			 int (*cb)(uint32_t obj_idx, const uint64_t *v, void *arg), void *arg)
{
	struct mon_counts *c = __atomic_load_n(&t->counts, __ATOMIC_ACQUIRE);
	uint64_t x[AMEBA_M_NR];

	if (!c)
		return;
	pthread_spin_lock(&c->lock);
	/* in address order, arena by arena (a vector of a failed insert has
	 * no table entry and only zeros: it adds nothing) */
	for (struct counts_arena *a = c->arena; a; a = a->next) {
		size_t off = 0;

		while (off < a->used) {
			const uint64_t *h = (const uint64_t *)((const char *)a->data + off), *v;

			if (HDR_KEY(*h)) {
				if (!(v = expand(h + 1, HDR_LEN(*h), x)))
					v = h + 1;
				if (cb(HDR_KEY(*h) - 1, v, arg))
					goto out;
			}
			off += (size_t)(HDR_LEN(*h) + 1) * sizeof(uint64_t);
		}
	}
out:
	pthread_spin_unlock(&c->lock);
}

uint32_t mon_counts_nr(struct mon_thread *t)
{
	struct mon_counts *c = __atomic_load_n(&t->counts, __ATOMIC_ACQUIRE);
	uint32_t nr;

	if (!c)
		return 0;
	pthread_spin_lock(&c->lock);	/* the owner counts its inserts under it */
	nr = c->nr;
	pthread_spin_unlock(&c->lock);
	return nr;
}

void mon_counts_after_fork(struct mon_thread *t)
{
	struct mon_counts *c = t->counts;

	/* The thread that held the lock at fork time does not exist here. */
	if (c)
		pthread_spin_init(&c->lock, PTHREAD_PROCESS_PRIVATE);
}

static int add_cycles(uint32_t obj_idx, const uint64_t *v, void *arg)
{
	int slot = mon_slot_of_metric[AMEBA_M_EST_CYCLES];

	(void)obj_idx;
	if (slot >= 0)
		*(uint64_t *)arg += __atomic_load_n(&v[slot], __ATOMIC_RELAXED);
	return 0;
}

uint64_t mon_counts_cycles(struct mon_thread *t)
{
	uint64_t sum = 0;

	mon_counts_for_each(t, add_cycles, &sum);
	return sum;
}
