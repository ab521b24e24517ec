/*
 * sim_coh.c - coherence across the simulated cores: the directory, the
 * per-core mailboxes, the MESI transactions of the coherence level
 * (fetch, upgrade, eviction), the shared per-node LLCs and memory.
 *
 * Locking: one spinlock per directory stripe (SIM_DIR_STRIPES stripes of the
 * bucket array) and one per LLC set. A thread holds at most one stripe lock
 * and, inside it, one LLC set lock at a time: stripe -> LLC set is the only
 * nesting, so there is no lock-order cycle. Mailbox pushes are lock-free and
 * never wait for the receiving core.
 */
#include <sched.h>

#include "sim_int.h"

/* ---- storage ---- */

static uint32_t dir_bucket(const struct sim_dir *d, uint64_t line)
{
	return (uint32_t)(sim_hash64(line) >> (64 - d->bucket_bits));
}

static struct sim_stripe *dir_stripe(struct sim_dir *d, uint32_t bucket)
{
	return &d->stripe[bucket & (SIM_DIR_STRIPES - 1)];
}

static size_t align64(size_t x)
{
	return (x + 63) & ~(size_t)63;
}

int sim_dir_init(struct mon_sim *s)
{
	struct sim_dir *d = &s->dir;
	const struct mri_geom_cache *cg = s->g.l2.sz_bytes ? &s->g.l2 : &s->g.l1d;
	uint64_t coh_lines = cg->sz_bytes / cg->line_bytes;
	/* Every live node is referenced by a valid or invalidated tag of some
	 * core's coherence level, so nr_cores * coh_lines bounds the live
	 * nodes; the slack covers what the stripes' free lists hold. */
	uint64_t bound = (uint64_t)s->g.nr_cores * coh_lines;
	uint64_t node_cap = bound + bound / 2 + SIM_DIR_STRIPES * 64 + 1;
	uint64_t fs_rec = (uint64_t)s->g.nr_cores * sizeof(uint64_t);
	uint64_t fs_cap = node_cap;
	uint32_t bits = 10;

	if (node_cap > (1u << 30))
		node_cap = 1u << 30;
	if (fs_cap * fs_rec > (256ull << 20))
		fs_cap = (256ull << 20) / fs_rec;	/* then a miss without record counts true */
	while ((1ull << bits) < 2 * bound && bits < 30)
		bits++;
	size_t o_stripe = align64(((size_t)1 << bits) * sizeof(uint32_t));
	size_t o_node = align64(o_stripe + SIM_DIR_STRIPES * sizeof(struct sim_stripe));
	size_t o_fs = align64(o_node + node_cap * sizeof(struct sim_dnode));
	size_t total = align64(o_fs + fs_cap * fs_rec);
	char *base = sim_map(total);

	if (!base)
		return AMEBA_ENOMEM;
	d->map = base;
	d->map_sz = total;
	d->head = (uint32_t *)base;
	d->stripe = (struct sim_stripe *)(base + o_stripe);
	d->node = (struct sim_dnode *)(base + o_node);
	d->fs = (uint64_t *)(base + o_fs);
	d->bucket_bits = bits;
	d->node_cap = (uint32_t)node_cap;
	d->fs_cap = (uint32_t)fs_cap;
	d->node_bump = 1;	/* index 0 means "none" */
	d->fs_bump = 1;
	d->overflows = 0;
	return 0;
}

void sim_dir_fini(struct mon_sim *s)
{
	sim_unmap(s->dir.map, s->dir.map_sz);
	s->dir.map = NULL;
}

#define SIM_DIR_CHUNK 32

/* Under the stripe lock. Returns a node index or 0 when the arena is full. */
static uint32_t node_alloc(struct sim_dir *d, struct sim_stripe *st)
{
	uint32_t n = st->free_node;

	if (n) {
		st->free_node = d->node[n].next;
		return n;
	}
	n = __atomic_fetch_add(&d->node_bump, SIM_DIR_CHUNK, __ATOMIC_RELAXED);
	if (n >= d->node_cap || d->node_cap - n < SIM_DIR_CHUNK)
		return 0;
	for (uint32_t i = 1; i < SIM_DIR_CHUNK - 1; i++)
		d->node[n + i].next = n + i + 1;
	d->node[n + SIM_DIR_CHUNK - 1].next = 0;
	st->free_node = n + 1;
	return n;
}

static void node_free(struct sim_dir *d, struct sim_stripe *st, uint32_t n)
{
	d->node[n].next = st->free_node;
	st->free_node = n;
}

static uint64_t *fs_rec(struct mon_sim *s, uint32_t r)
{
	return &s->dir.fs[(size_t)r * s->g.nr_cores];
}

static uint32_t fs_alloc(struct mon_sim *s, struct sim_stripe *st)
{
	struct sim_dir *d = &s->dir;
	uint32_t r = st->free_fs;

	if (!r) {
		r = __atomic_fetch_add(&d->fs_bump, SIM_DIR_CHUNK, __ATOMIC_RELAXED);
		if (r >= d->fs_cap || d->fs_cap - r < SIM_DIR_CHUNK)
			return 0;
		for (uint32_t i = 1; i < SIM_DIR_CHUNK - 1; i++)
			fs_rec(s, r + i)[0] = r + i + 1;
		fs_rec(s, r + SIM_DIR_CHUNK - 1)[0] = 0;
		st->free_fs = r + 1;
	} else {
		st->free_fs = (uint32_t)fs_rec(s, r)[0];
	}
	uint64_t *m = fs_rec(s, r);
	for (uint32_t i = 0; i < s->g.nr_cores; i++)
		m[i] = 0;
	return r;
}

static void fs_free(struct mon_sim *s, struct sim_stripe *st, struct sim_dnode *n)
{
	if (!n->fs)
		return;
	fs_rec(s, n->fs)[0] = st->free_fs;
	st->free_fs = n->fs;
	n->fs = 0;
}

static uint32_t dir_find(struct sim_dir *d, uint32_t bucket, uint64_t line)
{
	for (uint32_t n = d->head[bucket]; n; n = d->node[n].next)
		if (d->node[n].line == line)
			return n;
	return 0;
}

static uint32_t dir_insert(struct sim_dir *d, struct sim_stripe *st, uint32_t bucket, uint64_t line)
{
	uint32_t n = node_alloc(d, st);

	if (!n) {
		__atomic_fetch_add(&d->overflows, 1, __ATOMIC_RELAXED);
		return 0;
	}
	struct sim_dnode *N = &d->node[n];
	N->line = line;
	N->sharers = 0;
	N->lost = 0;
	__atomic_store_n(&N->wmask, 0, __ATOMIC_RELAXED);
	N->fs = 0;
	N->owner = -1;
	__atomic_store_n(&N->dirty_owner, 0, __ATOMIC_RELAXED);
	N->next = d->head[bucket];
	d->head[bucket] = n;
	return n;
}

/* Unlinks and frees node n when nobody holds or remembers the line. */
static void dir_maybe_delete(struct mon_sim *s, struct sim_stripe *st, uint32_t bucket, uint32_t n)
{
	struct sim_dir *d = &s->dir;
	struct sim_dnode *N = &d->node[n];

	if (N->sharers || N->lost)
		return;
	fs_free(s, st, N);
	uint32_t *pp = &d->head[bucket];
	while (*pp != n)
		pp = &d->node[*pp].next;
	*pp = N->next;
	node_free(d, st, n);
}

/* The owner's words of this ownership go to every core that lost the line. */
static void fold(struct mon_sim *s, struct sim_dnode *N)
{
	uint64_t w = __atomic_exchange_n(&N->wmask, 0, __ATOMIC_RELAXED);

	if (!w || !N->lost || !N->fs)
		return;
	uint64_t *m = fs_rec(s, N->fs);
	for (uint64_t l = N->lost; l; l &= l - 1)
		m[__builtin_ctzll(l)] |= w;
}

/* Cores in `newly` lose the line now: no word written since, yet. */
static void make_lost(struct mon_sim *s, struct sim_stripe *st, struct sim_dnode *N, uint64_t newly)
{
	if (!N->fs)
		N->fs = fs_alloc(s, st);	/* 0 when full: classified true */
	if (N->fs) {
		uint64_t *m = fs_rec(s, N->fs);
		for (uint64_t l = newly; l; l &= l - 1)
			m[__builtin_ctzll(l)] = 0;
	}
	N->lost |= newly;
}

/* ---- mailboxes ---- */

static void ring_push(struct mon_sim *s, uint32_t core, uint64_t msg)
{
	struct mon_sim_core *v = sim_core_at(s, core);
	struct sim_ring *r = v->ring;
	uint64_t pos = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);

	for (;;) {
		struct sim_ring_slot *sl = &r->slot[pos & (SIM_RING_CAP - 1)];
		uint64_t seq = __atomic_load_n(&sl->seq, __ATOMIC_ACQUIRE);
		int64_t dif = (int64_t)(seq - pos);
		if (dif == 0) {
			if (__atomic_compare_exchange_n(&r->tail, &pos, pos + 1, 1, __ATOMIC_RELAXED,
							__ATOMIC_RELAXED)) {
				__atomic_store_n(&sl->msg, msg, __ATOMIC_RELAXED);
				__atomic_store_n(&sl->seq, pos + 1, __ATOMIC_RELEASE);
				__atomic_store_n(&v->mail, 1, __ATOMIC_RELEASE);
				return;
			}
		} else if (dif < 0) {
			/* full: the core will reconcile with the directory instead */
			__atomic_fetch_add(&v->ring_overflows, 1, __ATOMIC_RELAXED);
			__atomic_store_n(&v->resync, 1, __ATOMIC_RELEASE);
			__atomic_store_n(&v->mail, 1, __ATOMIC_RELEASE);
			return;
		} else {
			pos = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
		}
	}
}

/*
 * Pops and applies messages. Unlocked (at the start of an access) it stops
 * at the first slot not yet published. Under a stripe lock (`complete`) it
 * pops everything reserved before the call, waiting for producers still
 * writing their slot (they hold no lock we could hold and never wait, so
 * this cannot deadlock): every message for a line of that stripe is then
 * applied, since those are pushed under the same lock. Returns the OR of the
 * SIM_MSG_* types of the messages that concerned `line`.
 */
static int drain(struct mon_sim_core *c, uint64_t line, int complete, struct mon_sim_events *ev)
{
	struct sim_ring *r = c->ring;
	uint64_t end = complete ? __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) : UINT64_MAX;
	int hit = 0;

	while (r->head < end) {
		struct sim_ring_slot *sl = &r->slot[r->head & (SIM_RING_CAP - 1)];
		unsigned spins = 0;
		while (__atomic_load_n(&sl->seq, __ATOMIC_ACQUIRE) != r->head + 1) {
			if (!complete)
				return hit;
			if (++spins < 256)
				sim_cpu_relax();
			else
				sched_yield();
		}
		uint64_t msg = __atomic_load_n(&sl->msg, __ATOMIC_RELAXED);
		__atomic_store_n(&sl->seq, r->head + SIM_RING_CAP, __ATOMIC_RELEASE);
		r->head++;
		uint64_t l = msg >> 2;
		if (l == line)
			hit |= (int)(msg & 3);
		if ((msg & 3) == SIM_MSG_INV)
			sim_apply_inv(c, l, ev);
		else
			sim_apply_down(c, l);
	}
	return hit;
}

int sim_drain_locked(struct mon_sim_core *c, uint64_t line, struct mon_sim_events *ev)
{
	return drain(c, line, 1, ev);
}

void sim_drain(struct mon_sim_core *c, struct mon_sim_events *ev)
{
	drain(c, UINT64_MAX, 0, ev);
}

/*
 * Under the line's stripe lock: makes c's copy of line agree with the
 * directory (after a mailbox overflow lost messages). Returns 1 when c's
 * copy changed.
 */
static int reconcile_locked(struct mon_sim_core *c, uint64_t line, struct mon_sim_events *ev)
{
	struct mon_sim *s = c->sim;
	struct sim_dir *d = &s->dir;
	uint32_t n = dir_find(d, dir_bucket(d, line), line);
	uint64_t me = 1ull << c->id;
	int in_sh = n && (d->node[n].sharers & me);
	int in_lost = n && (d->node[n].lost & me);
	int own = n && d->node[n].owner == (int32_t)c->id;
	struct sim_cache *k = c->coh;
	uint64_t set = sim_set_of(k, line);
	int w = sim_find(k, set, line);

	if (w < 0)
		return 0;
	unsigned st = SIM_ST(k->key[set * k->stride + w]);
	if (st != SIM_I) {
		if (!in_sh) {
			if (in_lost)
				sim_apply_inv(c, line, ev);
			else
				sim_drop_line(c, line);
			return 1;
		}
		if (st >= SIM_E && !own) {
			sim_apply_down(c, line);
			return 1;
		}
		return 0;
	}
	if (!in_lost) {
		sim_drop_line(c, line);
		return 1;
	}
	return 0;
}

void sim_resync(struct mon_sim_core *c, struct mon_sim_events *ev)
{
	struct mon_sim *s = c->sim;
	struct sim_cache *k = c->coh;

	__atomic_store_n(&c->resync, 0, __ATOMIC_RELAXED);
	sim_drain(c, ev);
	for (uint64_t i = 0; i < k->nr_sets * k->stride; i++) {
		if (i % k->stride >= k->assoc)
			continue;	/* replacement state, not a way */
		uint64_t key = k->key[i];
		if (!key || k->meta[i].priv)
			continue;	/* private lines have no messages, no entry */
		uint64_t line = SIM_KEY_LINE(key);
		struct sim_stripe *st = dir_stripe(&s->dir, dir_bucket(&s->dir, line));
		sim_lock(&st->lock);
		sim_drain_locked(c, line, ev);	/* what is in the ring is not lost */
		reconcile_locked(c, line, ev);
		sim_unlock(&st->lock);
	}
}

/* ---- LLC and memory ---- */

int sim_llc_init(struct mon_sim *s)
{
	const struct mri_geom_cache *g = &s->g.llc;

	if (!g->sz_bytes)
		return 0;
	s->llc = sim_map(s->g.nr_nodes * sizeof(struct sim_llc));
	if (!s->llc)
		return AMEBA_ENOMEM;
	uint64_t nr_sets = g->sz_bytes / ((uint64_t)g->assoc * g->line_bytes);
	/* 16 LRU ways in 4,096 sets or more, lines of 64 bytes or more and
	 * addresses below 2^47: the keys in 32 bits in order of recency, the
	 * set in one host line, its lock apart (SIM_KEY32, sim_llc32_ref;
	 * docs/simulator.md, "The LLC's set in one host line") */
	int k32 = g->repl == MRI_GEOM_LRU && g->assoc == 16 && nr_sets >= 4096 &&
		  !(nr_sets & (nr_sets - 1)) && g->line_bytes >= 64 && sim_low_addresses();
	for (uint32_t i = 0; i < s->g.nr_nodes; i++) {
		struct sim_llc *L = &s->llc[i];
		L->assoc = g->assoc;
		/* PLRU: the tree word after the keys. LRU up to 16 ways: the
		 * fingerprints and the stamps (sim_llc16_ref) before the keys,
		 * in the host cache line of the lock and the set's clock, and
		 * sets of whole host cache lines */
		L->stride = 2 + g->assoc;
		L->lru16 = g->repl == MRI_GEOM_LRU && g->assoc <= 16;
		if (g->repl != MRI_GEOM_LRU)
			L->stride += 1;
		else if (L->lru16)	/* + fingerprints, + 16-bit stamps */
			L->stride = (L->stride + (g->assoc + 7) / 8 + (g->assoc + 3) / 4 + 7) &
				    ~(uint64_t)7;
		L->keys_off = L->lru16 ? 2 + (g->assoc + 7) / 8 + (g->assoc + 3) / 4 : 2;
		L->nr_sets = nr_sets;
		L->pow2 = (nr_sets & (nr_sets - 1)) == 0;
		L->k32 = (uint8_t)k32;
		if (k32) {
			L->stride = SIM_LLC16_STRIDE;
			L->keys_off = SIM_LLC16_KEYS;
			L->locks_sz = nr_sets * sizeof(*L->locks);
			L->locks = sim_map(L->locks_sz);
			if (!L->locks)
				return AMEBA_ENOMEM;
		}
		L->set_mask = L->pow2 ? nr_sets - 1 : 0;
		L->repl = (uint8_t)g->repl;
		L->plru_levels = g->repl == MRI_GEOM_PLRU ? (uint8_t)sim_log2(g->assoc) : 0;
		L->blk = sim_map_huge(nr_sets * L->stride * sizeof(uint64_t), &L->map, &L->map_sz);
		if (!L->blk)
			return AMEBA_ENOMEM;
	}
	return 0;
}

void sim_llc_fini(struct mon_sim *s)
{
	if (!s->llc)
		return;
	for (uint32_t i = 0; i < s->g.nr_nodes; i++) {
		sim_unmap(s->llc[i].map, s->llc[i].map_sz);
		if (s->llc[i].locks)
			sim_unmap(s->llc[i].locks, s->llc[i].locks_sz);
	}
	sim_unmap(s->llc, s->g.nr_nodes * sizeof(struct sim_llc));
	s->llc = NULL;
}

/* The set block of line in L, locked unless c runs solo. */
static uint64_t *llc_lock_set(struct mon_sim_core *c, struct sim_llc *L, uint64_t line)
{
	uint64_t *b = sim_llc_set(L, line);

	if (!c->solo)
		sim_lock(sim_llc_lock_of(L, b));
	return b;
}

static void llc_unlock_set(struct mon_sim_core *c, const struct sim_llc *L, uint64_t *b)
{
	if (!c->solo)
		sim_unlock(sim_llc_lock_of(L, b));
}

static inline __attribute__((always_inline)) int mem_access(struct mon_sim_core *c, uint64_t line,
							     struct mon_sim_events *ev)
{
	struct mon_sim *s = c->sim;
	uint64_t page = (line << s->coh_shift) >> s->page_shift;
	uint32_t home;

	if (s->g.nr_nodes == 1) {
		/* every page is home (sim_page_home places nothing): no call */
		home = 0;
	} else if (page == c->home_page) {
		home = c->home_node;
	} else {
		home = sim_page_home(s, c, page);
		c->home_page = page;
		c->home_node = home;
	}

	ev->llc_miss = 1;
	if (home == c->node) {
		ev->mem_local = 1;
		return SIM_SRV_LOCAL;
	}
	ev->mem_remote = 1;
	return SIM_SRV_REMOTE;
}

uint32_t sim_llc16_renumber(uint64_t *clock, uint16_t *st, uint32_t n)
{
	uint16_t old[16];
	uint32_t k = 0;

	__builtin_memcpy(old, st, n * sizeof(*st));
	for (uint32_t w = 0; w < n; w++) {
		uint32_t r = 1;

		if (!old[w])
			continue;	/* an empty way stays 0 */
		for (uint32_t v = 0; v < n; v++)
			r += old[v] && old[v] < old[w];
		st[w] = (uint16_t)r;
		k++;
	}
	*clock = k;
	return k + 1;
}

/* The way of set block b of L holding line, or -1. */
static inline int llc_find(const struct sim_llc *L, const uint64_t *b, uint64_t line)
{
	if (L->k32)
		return sim_llc32_find((const uint32_t *)(const void *)b, line);
	if (L->lru16)
		return sim_lru16_find(b + L->keys_off, (const uint8_t *)(b + 2), L->assoc, line);
	return sim_find_in(b + L->keys_off, L->assoc, line);
}

/*
 * Sampled mode (mon_sim_settle_cold): a miss in a set of the LLC that was
 * not full (full: 0 when the line filled an empty way) has an outcome the
 * simulator cannot know - the program ran natively between bursts, and the
 * line may be in the real LLC since - so it is settled by the core's miss
 * ratio over the references to full sets, dithered so that the settled
 * misses add up (0 misses while fewer than SIM_COLD_MIN were known: a
 * program whose data never fills the LLC misses only on first touches).
 * The line is filled either way. 1: a known hit or miss, or a settled
 * miss; 0: settled as a hit.
 */
#define SIM_COLD_MIN 1024
static inline int llc_settle(struct mon_sim_core *c, int miss, int full)
{
	if (full) {
		c->llc_known++;
		c->llc_known_miss += (uint64_t)miss;
		return 1;
	}
	if (c->llc_known < SIM_COLD_MIN)
		return 0;
	c->llc_cold_credit += c->llc_known_miss;
	if (c->llc_cold_credit < c->llc_known)
		return 0;
	c->llc_cold_credit -= c->llc_known;
	return 1;
}

/* A miss settled as an LLC hit: the page is still placed (first touch) */
static __attribute__((noinline)) int llc_cold_hit(struct mon_sim_core *c, uint64_t line)
{
	struct mon_sim_events scratch;

	(void)mem_access(c, line, &scratch);
	return SIM_SRV_LLC;
}

/* Reads line through c's node LLC (filling it on a miss) or memory. */
int sim_llc_fetch(struct mon_sim_core *c, uint64_t line, struct sim_fetch *f,
		     struct mon_sim_events *ev)
{
	struct mon_sim *s = c->sim;

	if (!s->llc)
		return mem_access(c, line, ev);
	struct sim_llc *L = &s->llc[c->node];
	uint64_t *b = llc_lock_set(c, L, line), *keys = b + L->keys_off;
	if (L->repl == MRI_GEOM_LRU) {
		/* k32: 32-bit keys in recency order; else up to 16 ways:
		 * 16-bit stamps; else the keys kept in recency order */
		uint64_t victim = 0;
		int w = L->k32	   ? sim_llc32_ref((uint32_t *)(void *)b, line, SIM_KEY(line) | SIM_S,
						   &victim)
			: L->lru16 ? sim_llc16_ref(b, L->keys_off, L->assoc, line,
						 SIM_KEY(line) | SIM_S, &victim)
				 : sim_mru_ref(keys, L->assoc, line, SIM_KEY(line) | SIM_S,
					       &victim, s->g.nr_nodes > 1);
		if (w < 0 && SIM_ST(victim) == SIM_M)
			f->nr_wb++;	/* dirty LLC victim to memory */
		llc_unlock_set(c, L, b);
		if (sim_unlikely(s->settle_cold) && !llc_settle(c, w < 0, w >= 0 || victim != 0))
			return llc_cold_hit(c, line);
		return w >= 0 ? SIM_SRV_LLC : mem_access(c, line, ev);
	}
	int w = sim_find_in(keys, L->assoc, line);
	uint64_t *rs = keys + L->assoc;
	if (w >= 0) {
		sim_touch_in(rs, L->repl, L->plru_levels, (uint32_t)w, &b[1]);
		llc_unlock_set(c, L, b);
		if (sim_unlikely(s->settle_cold))
			llc_settle(c, 0, 1);
		return SIM_SRV_LLC;
	}
	uint32_t v = sim_victim_in(keys, rs, L->repl, L->assoc, L->plru_levels);
	int full = keys[v] != 0;
	if (SIM_ST(keys[v]) == SIM_M)
		f->nr_wb++;	/* dirty LLC victim to memory */
	keys[v] = SIM_KEY(line) | SIM_S;
	sim_touch_in(rs, L->repl, L->plru_levels, v, &b[1]);
	llc_unlock_set(c, L, b);
	if (sim_unlikely(s->settle_cold) && !llc_settle(c, 1, full))
		return llc_cold_hit(c, line);
	return mem_access(c, line, ev);
}

/*
 * Whether the line of addr is in the LLC of a node other than c's (looked
 * up, nothing changed). For the what-if of a parallel first touch
 * (backend_sim.c, local): a line that the program's set-up left in its
 * own node's LLC would be in the LLC of its user's node instead.
 */
int mon_sim_llc_elsewhere(struct mon_sim_core *c, uintptr_t addr)
{
	struct mon_sim *s = c->sim;
	uint64_t line = (uint64_t)addr >> s->coh_shift;

	if (!s->llc || s->g.nr_nodes < 2)
		return 0;
	for (uint32_t n = 0; n < s->g.nr_nodes; n++) {
		struct sim_llc *L = &s->llc[n];
		uint64_t *b;
		int w;

		if (n == c->node)
			continue;
		b = llc_lock_set(c, L, line);
		w = llc_find(L, b, line);
		llc_unlock_set(c, L, b);
		if (w >= 0)
			return 1;
	}
	return 0;
}

/* Way w's key in the keys of an LLC set of L: its state, and its
 * replacement by key (a line's 64-bit key with its state, or 0: an empty
 * way), in 32 bits where L is k32 (SIM_KEY32) */
static inline unsigned llc_key_state(const struct sim_llc *L, const uint64_t *keys, int w)
{
	return L->k32 ? SIM_ST(((const uint32_t *)(const void *)keys)[w]) : SIM_ST(keys[w]);
}
static inline void llc_key_put(const struct sim_llc *L, uint64_t *keys, int w, uint64_t key)
{
	if (L->k32)
		((uint32_t *)(void *)keys)[w] = key ? SIM_KEY32(SIM_KEY_LINE(key)) | SIM_ST(key) : 0;
	else
		keys[w] = key;
}

/* A dirty line leaves c's private caches: into c's node LLC when it holds
 * the line (no change to its replacement order), else to memory. */
void sim_llc_writeback(struct mon_sim_core *c, uint64_t line)
{
	struct mon_sim *s = c->sim;

	c->nr_llc_wb++;
	if (!s->llc)
		return;
	struct sim_llc *L = &s->llc[c->node];
	uint64_t *b = llc_lock_set(c, L, line), *keys = b + L->keys_off;
	int w = llc_find(L, b, line);
	if (w >= 0)
		llc_key_put(L, keys, w, SIM_KEY(line) | SIM_M);
	llc_unlock_set(c, L, b);
}

/* A core gained ownership: the copies in other nodes' LLCs are stale. */
static void llc_invalidate_others(struct mon_sim_core *c, uint64_t line, struct sim_fetch *f)
{
	struct mon_sim *s = c->sim;

	if (!s->llc || s->g.nr_nodes == 1)
		return;
	for (uint32_t n = 0; n < s->g.nr_nodes; n++) {
		if (n == c->node)
			continue;
		struct sim_llc *L = &s->llc[n];
		uint64_t *b = llc_lock_set(c, L, line), *keys = b + L->keys_off;
		int w = llc_find(L, b, line);
		if (w >= 0) {
			if (llc_key_state(L, keys, w) == SIM_M)
				f->nr_wb++;
			llc_key_put(L, keys, w, 0);
			if (L->lru16 && !L->k32) {	/* an empty way (a k32 set's
							 * stays a hole in place) */
				((uint8_t *)(b + 2))[w] = 0;
				sim_llc16_stamps(b, L->assoc)[w] = 0;
			}
		}
		llc_unlock_set(c, L, b);
	}
}

/* ---- transactions ---- */

static void send_invals(struct mon_sim *s, struct sim_stripe *st, struct sim_dnode *N,
			uint64_t others, uint64_t line, struct sim_fetch *f)
{
	for (uint64_t l = others; l; l &= l - 1) {
		ring_push(s, (uint32_t)__builtin_ctzll(l), line << 2 | SIM_MSG_INV);
		f->inval_sent++;
	}
	make_lost(s, st, N, others);
}

/*
 * c misses line at its coherence level (the line is absent or an
 * invalidated tag). Read: S (E when nobody else holds it); write: M after
 * invalidating every other copy. Classifies a coherence miss true / false.
 * Only for lines with a directory entry: solo, or on a page private to c,
 * the caller takes sim_coh_fetch_priv (sim_int.h) instead.
 */
void sim_coh_fetch(struct mon_sim_core *c, uint64_t line, int is_write, uint64_t wmask,
		   struct sim_fetch *f, struct mon_sim_events *ev)
{
	struct mon_sim *s = c->sim;
	struct sim_dir *d = &s->dir;
	uint32_t b = dir_bucket(d, line);
	struct sim_stripe *st = dir_stripe(d, b);
	uint64_t me = 1ull << c->id;
	int intervention = 0;

	f->coh = MON_SIM_COH_NONE;
	f->inval_sent = 0;
	f->nr_wb = 0;
	f->track = 0;
	f->priv = 0;
	sim_lock(&st->lock);
	sim_drain_locked(c, line, ev);
	if (__atomic_load_n(&c->resync, __ATOMIC_ACQUIRE))
		reconcile_locked(c, line, ev);
	uint32_t n = dir_find(d, b, line);
	if (!n)
		n = dir_insert(d, st, b, line);
	f->dent = n;
	if (sim_unlikely(!n)) {	/* directory full: the line goes untracked */
		f->state = is_write ? SIM_M : SIM_E;
		f->srv = sim_llc_fetch(c, line, f, ev);
		sim_unlock(&st->lock);
		return;
	}
	struct sim_dnode *N = &d->node[n];
	if (N->lost & me) {
		uint64_t words = N->fs ? fs_rec(s, N->fs)[c->id] : ~0ull;
		if (N->owner >= 0)
			words |= __atomic_load_n(&N->wmask, __ATOMIC_RELAXED);
		f->coh = (words & wmask) ? MON_SIM_COH_TRUE : MON_SIM_COH_FALSE;
		N->lost &= ~me;
		if (!N->lost)
			fs_free(s, st, N);
	}
	int32_t owner = N->owner;
	int other_owner = owner >= 0 && owner != (int32_t)c->id;
	int dirty = other_owner &&
		    __atomic_load_n(&N->dirty_owner, __ATOMIC_RELAXED) == (uint32_t)owner + 1;
	if (is_write) {
		uint64_t others = N->sharers & ~me;
		if (other_owner)
			fold(s, N);
		if (others)
			send_invals(s, st, N, others, line, f);
		intervention = dirty;
		N->sharers = me;
		N->owner = (int32_t)c->id;
		__atomic_store_n(&N->dirty_owner, c->id + 1, __ATOMIC_RELAXED);
		__atomic_store_n(&N->wmask, N->lost ? wmask : 0, __ATOMIC_RELAXED);
		f->state = SIM_M;
		llc_invalidate_others(c, line, f);
	} else {
		if (other_owner) {
			fold(s, N);
			ring_push(s, (uint32_t)owner, line << 2 | SIM_MSG_DOWN);
			intervention = dirty;
			N->owner = -1;
			__atomic_store_n(&N->dirty_owner, 0, __ATOMIC_RELAXED);
			f->state = SIM_S;
		} else if (N->sharers & ~me) {
			f->state = SIM_S;
		} else {
			f->state = SIM_E;
			N->owner = (int32_t)c->id;
			__atomic_store_n(&N->dirty_owner, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&N->wmask, 0, __ATOMIC_RELAXED);
		}
		N->sharers |= me;
	}
	f->track = f->state >= SIM_E && N->lost != 0;
	if (intervention) {
		ev->intervention = 1;
		f->srv = SIM_SRV_CACHE;
	} else {
		f->srv = sim_llc_fetch(c, line, f, ev);
	}
	sim_unlock(&st->lock);
}

/*
 * c writes line it holds Shared: invalidate the other copies, become M.
 * Returns -1 (nothing done) when a message drained under the lock changed
 * c's copy: the caller looks at its caches again.
 */
int sim_coh_upgrade(struct mon_sim_core *c, uint64_t line, uint64_t wmask, struct sim_fetch *f,
		    struct mon_sim_events *ev)
{
	struct mon_sim *s = c->sim;
	struct sim_dir *d = &s->dir;
	uint32_t b = dir_bucket(d, line);
	struct sim_stripe *st = dir_stripe(d, b);
	uint64_t me = 1ull << c->id;

	f->coh = MON_SIM_COH_NONE;
	f->inval_sent = 0;
	f->nr_wb = 0;
	f->priv = 0;
	sim_lock(&st->lock);
	int changed = sim_drain_locked(c, line, ev);
	if (__atomic_load_n(&c->resync, __ATOMIC_ACQUIRE))
		changed |= reconcile_locked(c, line, ev);
	uint32_t n = changed ? 0 : dir_find(d, b, line);
	if (!changed && !n) {	/* untracked line (the directory was full) */
		f->state = SIM_M;
		f->dent = 0;
		f->track = 0;
		f->srv = SIM_SRV_L1;
		sim_unlock(&st->lock);
		return 0;
	}
	if (!changed && !(d->node[n].sharers & me))
		changed = reconcile_locked(c, line, ev);	/* out of step: cannot happen */
	if (changed) {
		sim_unlock(&st->lock);
		return -1;
	}
	struct sim_dnode *N = &d->node[n];
	uint64_t others = N->sharers & ~me;
	if (others)
		send_invals(s, st, N, others, line, f);
	N->sharers = me;
	N->owner = (int32_t)c->id;
	__atomic_store_n(&N->dirty_owner, c->id + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&N->wmask, N->lost ? wmask : 0, __ATOMIC_RELAXED);
	f->state = SIM_M;
	f->dent = n;
	f->track = N->lost != 0;
	f->srv = SIM_SRV_L1;
	llc_invalidate_others(c, line, f);
	sim_unlock(&st->lock);
	return 0;
}

/*
 * c's coherence level dropped its tag of line (a valid copy when `valid`,
 * else an invalidated tag; the caller already removed it). A dirty copy
 * that the directory still credits to c is written back. Only for lines
 * with a directory entry: the caller writes a private line back itself.
 */
void sim_coh_evict(struct mon_sim_core *c, uint64_t line, int valid, int dirty, uint32_t cookie,
		   struct mon_sim_events *ev)
{
	struct mon_sim *s = c->sim;
	struct sim_dir *d = &s->dir;
	uint32_t b = dir_bucket(d, line);
	struct sim_stripe *st = dir_stripe(d, b);
	uint64_t me = 1ull << c->id;
	int wb = 0;

	sim_lock(&st->lock);
	int drained = sim_drain_locked(c, line, ev);
	uint32_t n = dir_find(d, b, line);
	if (n) {
		struct sim_dnode *N = &d->node[n];
		if (N->sharers & me) {
			N->sharers &= ~me;
			if (N->owner == (int32_t)c->id) {
				fold(s, N);
				wb = dirty;
				N->owner = -1;
				__atomic_store_n(&N->dirty_owner, 0, __ATOMIC_RELAXED);
			}
		}
		if (N->lost & me) {
			/* A valid copy the directory counts as lost: its invalidation
			 * was dropped by a full mailbox (one still queued would have
			 * been applied by the drain above). It arrives now. */
			if (valid && !(drained & SIM_MSG_INV)) {
				ev->inval_recv++;
				sim_record_recv(c, line, cookie);
			}
			N->lost &= ~me;
			if (!N->lost)
				fs_free(s, st, N);
		}
		dir_maybe_delete(s, st, b, n);
	} else {
		wb = dirty;
	}
	if (wb) {
		ev->nr_wb++;
		sim_llc_writeback(c, line);
	}
	sim_unlock(&st->lock);
}

/* Enters c's valid copy in way i of its coherence level in the directory, as
 * if c had fetched it there (c held still or quiesced by the caller). */
static void register_line(struct mon_sim_core *c, uint64_t i)
{
	struct mon_sim *s = c->sim;
	struct sim_dir *d = &s->dir;
	struct sim_cache *k = c->coh;
	unsigned st = SIM_ST(k->key[i]);
	uint64_t line = SIM_KEY_LINE(k->key[i]);
	uint32_t b = dir_bucket(d, line);
	struct sim_stripe *stp = dir_stripe(d, b);

	sim_lock(&stp->lock);
	uint32_t n = dir_insert(d, stp, b, line);
	if (n) {
		struct sim_dnode *N = &d->node[n];
		N->sharers = 1ull << c->id;
		N->owner = st >= SIM_E ? (int32_t)c->id : -1;
		__atomic_store_n(&N->dirty_owner, st == SIM_M ? c->id + 1 : 0, __ATOMIC_RELAXED);
	}
	sim_unlock(&stp->lock);
	k->meta[i].dent = n;
	k->meta[i].track = 0;
	k->meta[i].priv = 0;
}

/*
 * SOLO -> MULTI: the pages of c's lines (c the only core so far, quiesced
 * by the caller) become private to c, as if it had claimed them in MULTI
 * mode; a line whose page finds no room in the owner table enters the
 * directory, as if c had fetched it there.
 */
void sim_dir_register(struct mon_sim_core *c)
{
	struct mon_sim *s = c->sim;
	struct sim_cache *k = c->coh;

	for (uint64_t i = 0; i < k->nr_sets * k->stride; i++) {
		if (i % k->stride >= k->assoc)
			continue;	/* replacement state, not a way */
		if (SIM_ST(k->key[i]) == SIM_I)
			continue;
		uint64_t line = SIM_KEY_LINE(k->key[i]);
		uint64_t *e = sim_own_slot(s, sim_own_page(s, line), c->id);
		if (e && (__atomic_load_n(e, __ATOMIC_ACQUIRE) & 0xff) == c->id + 1)
			continue;	/* stays private: meta.priv from the SOLO fetch */
		register_line(c, i);
	}
}

/* Page `page` private to c (held still by the caller) becomes shared: c's
 * lines of it enter the directory. */
void sim_dir_register_page(struct mon_sim_core *c, uint64_t page)
{
	struct mon_sim *s = c->sim;
	struct sim_cache *k = c->coh;
	uint32_t per_page = 1u << (s->page_shift - s->coh_shift);
	uint64_t first = page << (s->page_shift - s->coh_shift);

	for (uint64_t line = first; line < first + per_page; line++) {
		uint64_t set = sim_set_of(k, line);
		int w = sim_find(k, set, line);
		if (w < 0)
			continue;
		uint64_t i = set * k->stride + (uint32_t)w;
		if (SIM_ST(k->key[i]) != SIM_I && k->meta[i].priv)
			register_line(c, i);
	}
}

/* ---- page owners ---- */

#define SIM_OWN_BITS 21		/* 2 M pages: 8 GiB of 4 KiB pages */
#define SIM_OWN_PROBES 64

int sim_owners_init(struct mon_sim *s)
{
	struct sim_owners *o = &s->own;

	if (s->page_shift < s->coh_shift)
		return 0;	/* no owner table: every page is shared */
	o->map_sz = (size_t)sizeof(uint64_t) << SIM_OWN_BITS;
	o->e = sim_map(o->map_sz);
	if (!o->e)
		return AMEBA_ENOMEM;
	o->mask = (1ull << SIM_OWN_BITS) - 1;
	return 0;
}

void sim_owners_fini(struct mon_sim *s)
{
	sim_unmap(s->own.e, s->own.map_sz);
	s->own.e = NULL;
}

/* The entry of page, claimed for core `id` when the page has none yet; NULL
 * when the table has no room for it (the page is then shared). */
uint64_t *sim_own_slot(struct mon_sim *s, uint64_t page, uint32_t id)
{
	struct sim_owners *o = &s->own;
	uint64_t want = (page + 1) << 8;

	if (!o->e)
		return NULL;
	uint64_t h = sim_hash64(page);
	for (uint32_t p = 0; p < SIM_OWN_PROBES; p++) {
		uint64_t *e = &o->e[(h + p) & o->mask];
		uint64_t v = __atomic_load_n(e, __ATOMIC_ACQUIRE);
		if (!v && __atomic_compare_exchange_n(e, &v, want | (id + 1), 0, __ATOMIC_ACQ_REL,
						      __ATOMIC_ACQUIRE))
			return e;
		if ((v & ~(uint64_t)0xff) == want)
			return e;
	}
	__atomic_fetch_add(&o->overflows, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* The owner's silent writes: dirtiness and written words (no lock; the node
 * stays allocated while the owner's tag refers to it). */
void sim_coh_publish(struct mon_sim_core *c, uint32_t dent, uint64_t bits, int first_write)
{
	struct sim_dnode *N;

	if (!dent)
		return;
	N = &c->sim->dir.node[dent];
	if (first_write)
		__atomic_store_n(&N->dirty_owner, c->id + 1, __ATOMIC_RELAXED);
	if (bits)
		__atomic_fetch_or(&N->wmask, bits, __ATOMIC_RELAXED);
}

/* ---- verification (quiescent simulator) ---- */

#include <stdio.h>

int sim_dir_verify(struct mon_sim *s, char *err, size_t errlen)
{
	struct sim_dir *d = &s->dir;

	for (uint64_t b = 0; b < (1ull << d->bucket_bits); b++) {
		for (uint32_t n = d->head[b]; n; n = d->node[n].next) {
			struct sim_dnode *N = &d->node[n];
			if (!N->sharers && !N->lost) {
				snprintf(err, errlen, "line %#llx: empty directory node",
					 (unsigned long long)N->line);
				return AMEBA_EPROTO;
			}
			if (N->sharers & N->lost) {
				snprintf(err, errlen, "line %#llx: core both sharer and lost",
					 (unsigned long long)N->line);
				return AMEBA_EPROTO;
			}
			if (N->owner >= 0 && N->sharers != 1ull << N->owner) {
				snprintf(err, errlen, "line %#llx: owner %d but sharers %#llx",
					 (unsigned long long)N->line, N->owner,
					 (unsigned long long)N->sharers);
				return AMEBA_EPROTO;
			}
			for (uint64_t m = N->sharers | N->lost; m; m &= m - 1) {
				uint32_t id = (uint32_t)__builtin_ctzll(m);
				struct mon_sim_core *c = sim_core_at(s, id);
				struct sim_cache *k = c ? c->coh : NULL;
				int w = k ? sim_find(k, sim_set_of(k, N->line), N->line) : -1;
				unsigned stt = w >= 0 ? SIM_ST(k->key[sim_set_of(k, N->line) * k->stride + w]) : 0;
				int want_valid = (N->sharers >> id) & 1;
				if (w < 0 || (stt != SIM_I) != want_valid) {
					snprintf(err, errlen, "line %#llx: core %u %s in directory, cache says %s",
						 (unsigned long long)N->line, id,
						 want_valid ? "sharer" : "lost",
						 w < 0 ? "absent" : stt ? "valid" : "invalidated");
					return AMEBA_EPROTO;
				}
				if (want_valid && (stt >= SIM_E) != (N->owner == (int32_t)id)) {
					snprintf(err, errlen, "line %#llx: core %u state %u, owner %d",
						 (unsigned long long)N->line, id, stt, N->owner);
					return AMEBA_EPROTO;
				}
			}
		}
	}
	return 0;
}
