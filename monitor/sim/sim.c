/*
 * sim.c - the cache-hierarchy simulator: cores, private caches, TLBs and the
 * per-access path. Coherence and the shared levels are in sim_coh.c, the
 * address-keyed tables in sim_mem.c; the geometry it is built from is
 * mri/geom.c.
 *
 * Notes (modelling assumptions):
 *
 * Hierarchy
 * - Per core: L1D and an optional L2, both write-back and write-allocate (a
 *   write miss fetches the line like a read miss). The L2 is inclusive of
 *   the L1 (an L2 eviction back-invalidates the L1 lines it covers); the
 *   last private level (L2, or L1 without L2) is the "coherence level" and
 *   its line size is the coherence unit. L1 lines may be smaller (r10000:
 *   32 B L1 lines in 128 B L2 lines); an access is simulated per L1 line it
 *   touches.
 * - One LLC per NUMA node, shared by the node's cores, non-inclusive
 *   non-exclusive (NINE): filled when a line comes from memory, never
 *   back-invalidating private caches. Its line size is the coherence unit.
 * - Set index = line number modulo the number of sets (bit selection for a
 *   power of two; no hashing of LLC slices). Replacement: an invalid way
 *   first (empty before invalidated), else true LRU or tree pseudo-LRU.
 * - A dirty victim is written back to the next level: into the L2 from the
 *   L1 (present by inclusion); from the coherence level into the node's LLC
 *   when the LLC holds the line (marked dirty, replacement order unchanged),
 *   else to memory; from the LLC to memory. Writebacks never allocate, so
 *   the miss counts of a level depend only on the demand stream (as
 *   cachegrind, which has no writebacks).
 * - Miss flags count once per access and level even when the access spans
 *   two lines (as cachegrind); the cycles of both lines are summed.
 * - Without an L2, l2_miss equals l1_miss ("missed the private caches");
 *   without an LLC every private miss not served by another core goes to
 *   memory. llc_miss counts memory accesses: llc_miss = mem_local +
 *   mem_remote.
 * - No prefetching, no instruction fetches, no write-combining buffers,
 *   no timing (no queueing, bandwidth or MSHR limits).
 *
 * TLB
 * - Per core an L1 dTLB and an optional L2 TLB (set-associative, LRU),
 *   NINE; a miss fills both. Data accesses only (no page-walk accesses
 *   enter the caches). One entry maps
 *   tlb_page_bytes (r10000: 32 KiB = the pair of 16 KiB pages of one MIPS
 *   entry). tlb_miss counts misses in the last TLB level (page walks).
 *
 * Coherence (MESI, invalidation based, directory)
 * - A directory entry per coherence line held by some core records the
 *   sharers (valid copies), the E/M owner and the "lost" set (cores whose
 *   copy was invalidated and which still hold the invalidated tag). A read
 *   miss gets E when nobody else holds the line, else S (an E/M owner is
 *   downgraded to S); a write miss or a write to an S copy invalidates all
 *   other copies (one inval_sent per copy) and gets M. E -> M is silent.
 * - intervention: the line came dirty from another core's cache (HITM; the
 *   three-hop miss when remote). It is then not an LLC access. A clean
 *   E/S copy elsewhere does not supply data: the LLC or memory does.
 * - A coherence miss is a miss at the coherence level on a line whose
 *   invalidated tag the core still holds. It is classified at word
 *   granularity (word_bytes, 4 in the presets): TRUE when some word this
 *   access touches was
 *   written by another core since this core lost the line (the directory
 *   keeps, per lost core, the words written by later owners), else FALSE
 *   (false sharing). Once the invalidated tag is evicted the next miss is
 *   an ordinary (3C) miss. Coherence misses are not 3C-classified.
 * - Clean evictions notify the directory (no silent drops), so sharer sets
 *   are exact; an invalidation finds no copy only when it races with the
 *   victim's own eviction.
 * - Other nodes' LLC copies are dropped when a core gains ownership.
 * - Invalidations and downgrades are delivered to the victim core through
 *   its mailbox and applied at the start of its next access (and before it
 *   changes that line). The simulator itself lets cores run in parallel;
 *   by default (seq.c, AMEBA_SIM_ORDER=time) one merger thread drives every
 *   core in simulated-time order once a second thread exists, so the
 *   interleaving is the simulated one and does not depend on the host; with
 *   AMEBA_SIM_ORDER=host each thread drives its own core and the
 *   interleaving is the host's. A write hit that races
 *   with another core's request for the same line counts as having happened
 *   before it; its written words are then credited to the next owner change
 *   and the request may miss one intervention. inval_recv is counted when
 *   the victim applies the message. A full mailbox (4096 messages) makes
 *   the victim reconcile all its lines with the directory instead: the
 *   same result, later.
 *
 * NUMA
 * - nr_nodes nodes; core -> node round robin (core % nodes) or in blocks
 *   of cores_per_node. Pages (page_bytes) are placed on the node of the first
 *   core whose access reaches memory for them - the first touch, since the
 *   first access to a page always misses every cache - or interleaved
 *   (page % nodes). Each memory access is local or remote with respect to the
 *   accessing core's node. The first-touching core and thread are kept.
 *
 * 3C (optional, L1 only, per core)
 * - compulsory: the first reference of this core to the L1 line (a
 *   per-core set of referenced lines covering 16 GiB of footprint; beyond
 *   that a miss is classified by the shadow alone and seen_overflows
 *   counts it);
 * - capacity: not compulsory, and a fully associative LRU cache with the
 *   L1's number of lines, fed the same accesses (and invalidations), misses
 *   too;
 * - conflict: not compulsory and the fully associative cache hits.
 *
 * Latency model
 * - est_cycles = latency of the level that served the access (l1_hit,
 *   l2_hit, llc_hit, mem_local, mem_remote, or intervention) + inval when
 *   the access invalidated other copies + tlb2_hit / tlb_miss when the L1
 *   dTLB missed. est_stall_cycles = est_cycles - l1_hit. No overlap between
 *   misses is modelled.
 *
 * Implementation
 * - Each core's private caches are touched only by the thread driving it;
 *   exclusive use costs no atomic read-modify-write (an asymmetric barrier,
 *   membarrier(), is paid once when a second thread attaches to a core,
 *   which then locks for good). The directory (1024 striped spinlocks), the
 *   LLC sets (a spinlock each) and the page table (lock-free) are shared.
 *   No global lock, no allocation, no system call on the access path but
 *   once per page that becomes shared (below: create_lock, membarrier);
 *   all tables are mapped (MAP_NORESERVE) when the simulator or a core is
 *   created, and a table that fills up stops tracking and counts an
 *   overflow (mon_sim_get_stats) instead of growing (the page owner table:
 *   its pages count as shared, which costs time, not accuracy).
 * - While only one core exists nothing can be shared, so the simulator runs
 *   SOLO: no directory and no LLC locks. Creating the second core switches
 *   to MULTI for good (the first core held still meanwhile).
 * - Pages private to one core need no directory either (owner table,
 *   sim_coh.c): a page (page_bytes) belongs to the first core that misses
 *   on one of its lines in MULTI mode (at the switch, the first core's
 *   held lines claim theirs); its lines take E/M with no directory entry
 *   (meta.priv) and leave with a writeback at most. The first miss of
 *   another core on such a page holds the owner still (as the switch
 *   does), enters the owner's lines of the page in the directory and
 *   makes the page shared for good. The counts are those the directory
 *   would have given: a line of a private page has exactly one holder,
 *   which the directory would have recorded as the E/M owner with no lost
 *   cores. dense_2t: the directory's work on every private miss and
 *   eviction, 0.40 G of 7.11 G instructions, and its host cache misses
 *   are gone.
 * - Fast paths give the same counts as the full path. Where the last 8 L1
 *   lines accessed sat in the L1 (their key index, and the L1 TLB key index
 *   of their page) is remembered (c->l0, replaced round robin); the
 *   guesses are checked against the keys, so nothing has to forget them
 *   when lines move or lose rights. A hit on one of them skips the
 *   searches but still updates the LRU state of the L1, the TLB and the 3C
 *   shadow - except for the line of the last access, which is most
 *   recently used everywhere already. That path (sim_hit, sim_l0_hit in
 *   sim_core.h) makes no calls and is inline in mon_sim_access and in the
 *   sim backend's fast entry (backend_sim.c); the rest (TLB and L1
 *   searches, misses) is in access_full / access_slow, reached through
 *   mon_sim_access_rest when the caller already tried it. A write to an E
 *   line with no directory entry (solo, or a private page) and no L2 is
 *   nothing but E -> M, and stays on the fast path. The hit path checks
 *   one word of the core for everything other cores may ask of it (shared
 *   by threads, held still) and one for pending messages (mail). Every set keeps its keys and its LRU stamps
 *   side by side; a 16-way LLC of 4,096 sets or more (k32) keeps a
 *   set's 16 keys in 32 bits in order of recency in one host line
 *   (sim_llc32_ref); other LLCs and the L2 TLB (LRU, up to 16 ways) a byte
 *   of fingerprint per way, and the recency as a 16-bit stamp per way from
 *   the set's own clock (the LLC: sim_llc16_ref, a hit one store) or as 16
 *   nibbles of one word (the L2 TLB: sim_lru16_ref) - exact LRU, as
 *   cachegrind; beyond 16 ways the keys in recency order.
 * - The lean path (sim_lean.c): a solo core whose geometry has no L2 and
 *   no 3C takes what the remembered lines do not settle through one
 *   function over locals instead of access_full / access_slow, with the
 *   same state changes (test sim_lean_path).
 * - Single-threaded traces give deterministic counts. bench/sim_validate:
 *   D1 and LL misses equal cachegrind's within 0.02% on five kernels.
 *   Cost in a program: docs/simulator.md, "Figures" (instructions per
 *   access by part, and the speed against cachegrind).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/membarrier.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sim_int.h"

/* ---- construction ---- */

static uint32_t core_node(const struct mri_geom *g, uint32_t id)
{
	if (g->core_map == MRI_GEOM_MAP_BLOCK)
		return (id / g->cores_per_node) % g->nr_nodes;
	return id % g->nr_nodes;
}

struct mon_sim *mon_sim_new(const struct mri_geom *g)
{
	struct mon_sim *s = sim_map(sizeof(*s));

	if (!s)
		return NULL;
	s->g = *g;
	s->l1_shift = sim_log2(g->l1d.line_bytes);
	s->coh_shift = sim_log2(g->l2.sz_bytes ? g->l2.line_bytes : g->l1d.line_bytes);
	s->word_shift = sim_log2(g->word_bytes);
	/* no TLB model (tlb1_entries = 0): every user address is in "page" 0,
	 * which each core's memo says is in its L1 TLB (core_new), so no path
	 * ever looks a TLB up */
	s->tlb_shift = g->tlb1.nr_entries ? sim_log2(g->tlb_page_bytes) : 63;
	s->page_shift = sim_log2(g->page_bytes);
	s->l1_per_coh = 1u << (s->coh_shift - s->l1_shift);
	/* Cheap exclusive use of cores needs an asymmetric barrier (see
	 * struct mon_sim_core); without membarrier every core always locks. */
	long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	if (q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
		s->barrier_cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED;
	else if (q > 0 && (q & MEMBARRIER_CMD_GLOBAL))
		s->barrier_cmd = MEMBARRIER_CMD_GLOBAL;
	if (sim_pages_init(&s->pages) || sim_dir_init(s) || sim_llc_init(s) || sim_owners_init(s)) {
		mon_sim_destroy(s);
		return NULL;
	}
	return s;
}

static void core_free(struct mon_sim_core *c)
{
	sim_cache_fini(&c->l1);
	sim_cache_fini(&c->l2);
	sim_cache_fini(&c->tlb1);
	sim_cache_fini(&c->tlb2);
	if (c->mf)
		sim_unmap(c->mf, sizeof(*c->mf) << SIM_MF_BITS);
	sim_unmap(c->ring, sizeof(*c->ring));
	sim_unmap(c->recv, SIM_RING_CAP * sizeof(struct mon_sim_recv));
	if (c->shadow.map)
		sim_shadow_fini(&c->shadow);
	if (c->seen.map)
		sim_seen_fini(&c->seen);
	sim_unmap(c, sizeof(*c));
}

void mon_sim_destroy(struct mon_sim *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < MON_SIM_MAX_CORES; i++)
		if (s->core[i])
			core_free(s->core[i]);
	sim_llc_fini(s);
	if (s->dir.map)
		sim_dir_fini(s);
	if (s->pages.map)
		sim_pages_fini(&s->pages);
	if (s->own.e)
		sim_owners_fini(s);
	sim_unmap(s, sizeof(*s));
}

const struct mri_geom *mon_sim_geom_of(const struct mon_sim *s)
{
	return &s->g;
}

static int cache_init_geom(struct sim_cache *k, const struct mri_geom_cache *g, unsigned flags)
{
	return sim_cache_init(k, g->sz_bytes / ((uint64_t)g->assoc * g->line_bytes), g->assoc,
			      sim_log2(g->line_bytes), g->repl, flags);
}

/* what the hooks prefetch where the LLC's sets are not the lean kind's */
static const uint64_t lf_pf_none;

/*
 * The line filter (sim.h) of a new core c, where its geometry allows one:
 * the lean path's (an LRU L1, no L2, no 3C, one node), no TLB model (a hit
 * through the filter touches no TLB entry) and 64-byte L1 lines (the
 * hooks' lines). On while the core runs solo (without membarrier every
 * core is shared from the start). A failed mapping leaves the core without
 * one.
 */
static void lf_init(struct mon_sim *s, struct mon_sim_core *c)
{
	const struct mri_geom *g = &s->g;
	struct sim_cache *l1 = &c->l1;
	const uint64_t n = 1ull << MON_SIM_LF_BITS;

	c->lf.key = l1->key;
	c->lf.dirty = &l1->meta[0].dirty;
	_Static_assert(sizeof(struct sim_meta) == MON_SIM_META_BYTES && (SIM_E | 1) == SIM_M,
		       "the line filter's E -> M (backend_sim.h mon_sim_lf_access)");
	c->lf.assoc = l1->assoc;
	_Static_assert(MON_SIM_LF_LLC_SET == SIM_LLC16_STRIDE * sizeof(uint64_t), "llc_pf");
	c->lf.llc_pf = (const char *)&lf_pf_none;
	c->lf.llc_pf_mask = 0;
	if (c->lean == SIM_LEAN_FIT_8_16_64) {
		c->lf.llc_pf = (const char *)s->llc[0].blk;
		c->lf.llc_pf_mask = s->llc[0].set_mask;
	}
	if (s->no_lf || c->lean == SIM_LEAN_NO || g->tlb1.nr_entries || g->three_c ||
	    l1->line_shift != 6)
		return;
	c->lf.ent = c->lf_tab;
	for (uint64_t i = 0; i < n; i++)
		c->lf.ent[i].line = UINT64_MAX;
	c->lf.on_as = MON_SIM_LF_ON;
	c->lf.on = c->solo && s->barrier_cmd ? MON_SIM_LF_ON : 0;
}

/* (sim_core.h) c's L1 holds the line at key index i, not invalidated:
 * its entry in the merger's filter (mapped at the first) */
void sim_mf_note(struct mon_sim_core *c, uintptr_t addr, uint32_t size)
{
	const struct sim_cache *k = &c->l1;
	const uint64_t line = addr >> k->line_shift;
	uint64_t set, i;
	int w;

	if (!c->mf_ok || line != (addr + size - 1) >> k->line_shift)
		return;
	if (!c->mf) {
		if (!(c->mf = sim_map(sizeof(*c->mf) << SIM_MF_BITS))) {
			c->mf_ok = 0;
			return;
		}
		for (uint64_t j = 0; j < 1u << SIM_MF_BITS; j++)
			c->mf[j].line = UINT64_MAX;
	}
	set = sim_likely(k->pow2) ? (line & k->set_mask) : (line % k->nr_sets);
	w = sim_find(k, set, line);
	if (w < 0 || SIM_ST(k->key[set * k->stride + (uint64_t)w]) == SIM_I)
		return;
	i = set * k->stride + (uint64_t)w;
	sim_mf_put(c, line, i);
}

/* (sim.h) The core's owner is not in the simulator, or the caller is
 * that owner. */
void mon_sim_core_lf_forget(struct mon_sim_core *c)
{
	if (!c->lf.ent)
		return;
	/* 256 stores, where a generation to compare cost every hit three
	 * instructions: forgetting is rare (a mode switch, a fold, a new
	 * owner, a fork, the filter off for good) */
	for (uint64_t i = 0; i < 1ull << MON_SIM_LF_BITS; i++)
		c->lf.ent[i].line = UINT64_MAX;
	c->lf.memo[0].hi = c->lf.memo[1].hi = 0;
}

void mon_sim_lf_enable(struct mon_sim *s, int on)
{
	s->no_lf = !on;
}

/* Under create_lock, as the switches that turn the filter off */
struct mon_sim_lf *mon_sim_lf_install(struct mon_sim_core *c, uint32_t tid, const void *user,
				      int asm_ok)
{
	struct mon_sim *s = c->sim;
	struct mon_sim_lf *f = NULL;

	sim_lock(&s->create_lock);
	if (c->lf.ent && __atomic_load_n(&c->lf.on, __ATOMIC_RELAXED) && c->solo &&
	    c->owner_tid == tid &&
	    !__atomic_load_n(&c->shared, __ATOMIC_RELAXED)) {
		__atomic_store_n(&c->lf.user, user, __ATOMIC_RELEASE);
		f = &c->lf;
		f->on_as = asm_ok && c->lean == SIM_LEAN_FIT_8_16_64 ? MON_SIM_LF_ON_ASM
								    : MON_SIM_LF_ON;
		__atomic_store_n(&f->on, f->on_as, __ATOMIC_RELAXED);
	}
	sim_unlock(&s->create_lock);
	return f;
}

static struct mon_sim_core *core_new(struct mon_sim *s, uint32_t id)
{
	const struct mri_geom *g = &s->g;
	struct mon_sim_core *c = sim_map(sizeof(*c));

	if (!c)
		return NULL;
	c->sim = s;
	c->id = id;
	c->node = core_node(g, id);
	c->memo_page = c->memo_shadow = c->home_page = c->last_line = UINT64_MAX;
	for (int j = 0; j < SIM_L0; j++) {
		c->l0.line[j] = UINT64_MAX;
		c->l0.lo[j] = UINT32_MAX;
	}
	c->three_c = g->three_c;
	c->solo = 1;	/* until a second core exists (mon_sim_core_get) */
	c->l1_hit_cycles = g->lat.l1_hit;
	c->has_l2 = g->l2.sz_bytes != 0;
	c->has_tlb2 = g->tlb2.nr_entries != 0;
	sim_lean_init(c);
	if (cache_init_geom(&c->l1, &g->l1d, SIM_CA_META))
		goto err;
	if (c->has_l2 && cache_init_geom(&c->l2, &g->l2, SIM_CA_META))
		goto err;
	c->coh = c->has_l2 ? &c->l2 : &c->l1;
	if (!g->tlb1.nr_entries)
		c->memo_page = 0;	/* no TLB: see mon_sim_new */
	if (sim_cache_init(&c->tlb1, g->tlb1.nr_entries ? g->tlb1.nr_entries / g->tlb1.assoc : 1,
			   g->tlb1.nr_entries ? g->tlb1.assoc : 1, s->tlb_shift, MRI_GEOM_LRU, 0))
		goto err;
	if (c->has_tlb2 && sim_cache_init(&c->tlb2, g->tlb2.nr_entries / g->tlb2.assoc,
					  g->tlb2.assoc, s->tlb_shift, MRI_GEOM_LRU, 0))
		goto err;
	lf_init(s, c);
	/* the merger's filter: no TLB touch, no 3C shadow (sim_mf_hit) */
	c->mf_ok = !s->no_lf && !g->tlb1.nr_entries && !g->three_c;
	c->ring = sim_map(sizeof(*c->ring));
	c->recv = sim_map(SIM_RING_CAP * sizeof(struct mon_sim_recv));
	if (!c->ring || !c->recv)
		goto err;
	for (uint32_t i = 0; i < SIM_RING_CAP; i++)
		c->ring->slot[i].seq = i;
	if (g->three_c) {
		if (sim_shadow_init(&c->shadow, (uint32_t)(g->l1d.sz_bytes / g->l1d.line_bytes)) ||
		    sim_seen_init(&c->seen, s->l1_shift))
			goto err;
	}
	return c;
err:
	core_free(c);
	return NULL;
}

#define SIM_NO_OWNER UINT32_MAX

/*
 * Sets flag in c->shared and waits until an access c's owner started
 * before it could see the flag has ended: the membarrier orders the flag
 * against the owner's plain busy store (see struct mon_sim_core).
 */
static void core_flag_wait(struct mon_sim *s, struct mon_sim_core *c, uint32_t flag)
{
	__atomic_fetch_or(&c->shared, flag, __ATOMIC_SEQ_CST);
	if (s->barrier_cmd)
		syscall(SYS_membarrier, s->barrier_cmd, 0, 0);
	for (unsigned spins = 0; __atomic_load_n(&c->busy, __ATOMIC_ACQUIRE); spins++)
		if (spins < 256)
			sim_cpu_relax();
		else
			sched_yield();
}

/*
 * Holds core c still for another thread, which may then read and change
 * c's caches: c's owner cannot enter (SIM_HOLD, seen after the membarrier
 * by an owner that marked itself busy, see struct mon_sim_core), an access
 * it started before ends, and users of a shared core wait for its lock.
 * Under create_lock, so that two holders never wait for each other.
 */
static void core_hold(struct mon_sim *s, struct mon_sim_core *c)
{
	core_flag_wait(s, c, SIM_HOLD);
	sim_lock(&c->lock);	/* users of a shared core */
}

static void core_release(struct mon_sim_core *c)
{
	sim_unlock(&c->lock);
	__atomic_fetch_and(&c->shared, ~(uint32_t)SIM_HOLD, __ATOMIC_RELEASE);
}

/* Makes every user of c take its lock from now on (see struct mon_sim_core). */
static void core_make_shared(struct mon_sim *s, struct mon_sim_core *c)
{
	if (__atomic_load_n(&c->shared, __ATOMIC_RELAXED) & SIM_SHARED)
		return;
	/* the filter's entries name the owner's vectors (sim.h): off for
	 * good, ordered by the membarrier before the owner's next access */
	__atomic_store_n(&c->lf.on, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&c->lf.user, NULL, __ATOMIC_SEQ_CST);
	core_flag_wait(s, c, SIM_SHARED);
	/* the hooks' hits test neither the user nor on: every
	 * entry invalid, once no entry can be written (the owner out of the
	 * simulator, the filter seen off), before the owner's next access */
	if (c->lf.ent) {
		mon_sim_core_lf_forget(c);
		if (s->barrier_cmd)
			syscall(SYS_membarrier, s->barrier_cmd, 0, 0);
	}
}

struct mon_sim_core *mon_sim_core_get(struct mon_sim *s, uint32_t core_id, uint32_t tid)
{
	uint32_t id = core_id % s->g.nr_cores;
	struct mon_sim_core *c;

	sim_lock(&s->create_lock);
	c = sim_core_at(s, id);
	if (!c) {
		c = core_new(s, id);
		if (c) {
			c->owner_tid = SIM_NO_OWNER;
			if (!s->barrier_cmd)
				c->shared = SIM_SHARED;
			__atomic_store_n(&s->core[id], c, __ATOMIC_RELEASE);
		}
	}
	if (c && __atomic_load_n(&s->mode, __ATOMIC_RELAXED) == SIM_SOLO) {
		/* a second core: the first one's lines enter the directory */
		struct mon_sim_core *first = NULL;
		for (uint32_t i = 0; i < MON_SIM_MAX_CORES && !first; i++)
			if (i != id && s->core[i])
				first = s->core[i];
		if (first) {
			core_hold(s, first);
			sim_dir_register(first);
			first->solo = 0;
			/* its owner sees the filter off from its next access
			 * on: the membarrier orders the store before that
			 * thread's later loads (one call, once per program) */
			__atomic_store_n(&first->lf.on, 0, __ATOMIC_SEQ_CST);
			__atomic_store_n(&first->lf.user, NULL, __ATOMIC_SEQ_CST);
			mon_sim_core_lf_forget(first);
			if (first->lf.ent && s->barrier_cmd)
				syscall(SYS_membarrier, s->barrier_cmd, 0, 0);
			__atomic_store_n(&s->mode, SIM_MULTI, __ATOMIC_RELEASE);
			core_release(first);
		}
	}
	if (c && c->solo && __atomic_load_n(&s->mode, __ATOMIC_RELAXED) == SIM_MULTI) {
		c->solo = 0;	/* created now, used by no thread yet */
		__atomic_store_n(&c->lf.on, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&c->lf.user, NULL, __ATOMIC_RELAXED);
	}
	if (c) {
		if (c->owner_tid == SIM_NO_OWNER) {
			/* a new owner: the tags of the remembered lines were
			 * the last owner's (its counter vectors) */
			c->owner_tid = tid;
			if (!(__atomic_load_n(&c->shared, __ATOMIC_RELAXED) & SIM_SHARED)) {
				/* (a shared core's users never read them, and
				 * may be writing them under its lock) */
				memset(c->l0.tag, 0, sizeof(c->l0.tag));
				c->cur_tag[0] = c->cur_tag[1] = 0;
				mon_sim_core_lf_forget(c);
			}
		}
		else if (c->owner_tid != tid)
			core_make_shared(s, c);
		__atomic_store_n(&c->tid, tid, __ATOMIC_RELAXED);
	}
	sim_unlock(&s->create_lock);
	return c;
}

void mon_sim_core_put(struct mon_sim_core *c, uint32_t tid)
{
	struct mon_sim *s = c->sim;

	sim_lock(&s->create_lock);
	if (c->owner_tid == tid)
		c->owner_tid = SIM_NO_OWNER;
	sim_unlock(&s->create_lock);
}

static __attribute__((noinline)) int core_enter_slow(struct mon_sim_core *c)
{
	int locked;

	for (;;) {
		__atomic_store_n(&c->busy, 1, __ATOMIC_RELAXED);
		__asm__ __volatile__("" ::: "memory");
		locked = 0;
		uint32_t sh = __atomic_load_n(&c->shared, __ATOMIC_ACQUIRE);
		if (sim_unlikely(sh & SIM_SHARED)) {
			/* a core that holds this one still takes the lock too */
			__atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
			sim_lock(&c->lock);
			locked = 1;
		} else if (sh & SIM_HOLD) {
			/* another core reads our caches (sim_page_private) */
			__atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
			for (unsigned spins = 0; __atomic_load_n(&c->shared, __ATOMIC_ACQUIRE) & SIM_HOLD;
			     spins++)
				if (spins < 256)
					sim_cpu_relax();
				else
					sched_yield();
			continue;
		}
		return locked;
	}
}

/* Brackets every use of c's private state; returns what core_exit needs
 * (waiting while another core holds c still, e.g. for the SOLO -> MULTI
 * switch). */
static inline int core_enter(struct mon_sim_core *c)
{
	return sim_core_try_enter(c) ? 0 : core_enter_slow(c);
}

/* sim_int.h: page_private_slow's lookup, for the merger's lean path too */
int sim_page_owned(struct mon_sim_core *c, uint64_t page)
{
	uint32_t m = sim_own_memo_of(page);
	uint64_t *e = sim_own_slot(c->sim, page, c->id);
	uint32_t st = e ? (uint32_t)(__atomic_load_n(e, __ATOMIC_ACQUIRE) & 0xff) : SIM_OWN_SHARED;

	if (st == c->id + 1 || st == SIM_OWN_SHARED) {
		c->own_page[m] = page + 1;
		c->own_priv[m] = st != SIM_OWN_SHARED;
		return c->own_priv[m];
	}
	return -1;
}

/*
 * MULTI mode, before c fetches coherence line cline: 1 when the line's page
 * is private to c (claimed now when nobody had it), 0 when it is shared.
 * A page private to another core becomes shared first: c leaves its core
 * (it holds no other lock here), takes create_lock (one such switch at a
 * time, so two cores never wait for each other), holds the owner still as
 * the SOLO -> MULTI switch does (SIM_HOLD, membarrier, its lock), enters
 * the owner's lines of the page in the directory, marks the page shared
 * and enters its own core again; returns -1 then: the caller looks at its
 * caches again. Called inside c's access (c->locked says how it entered).
 * The memo (c->own_page) answered before, inline, for the pages c looked
 * up last.
 */
static int page_private_slow(struct mon_sim_core *c, uint64_t page)
{
	struct mon_sim *s = c->sim;
	int r = sim_page_owned(c, page);

	if (r >= 0)
		return r;
	/* another core's: its slot again (found, not claimed: it has an owner) */
	uint64_t *e = sim_own_slot(s, page, c->id);

	sim_core_exit(c, c->locked);
	sim_lock(&s->create_lock);
	uint64_t v = __atomic_load_n(e, __ATOMIC_ACQUIRE);
	uint32_t st = (uint32_t)(v & 0xff);
	if (st != SIM_OWN_SHARED) {
		struct mon_sim_core *o = sim_core_at(s, st - 1);
		core_hold(s, o);
		sim_dir_register_page(o, page);
		o->own_page[sim_own_memo_of(page)] = 0;	/* o's memo: not private now */
		__atomic_store_n(e, (v & ~(uint64_t)0xff) | SIM_OWN_SHARED, __ATOMIC_RELEASE);
		core_release(o);
	}
	sim_unlock(&s->create_lock);
	c->locked = core_enter(c);
	return -1;
}

/* A call from the miss path, the page computed here: inline (or the page
 * computed by the caller) it cost every single-threaded miss, which never
 * calls it, ~10 instructions of register shuffling (random kernel). */
static __attribute__((noinline)) int sim_page_private(struct mon_sim_core *c, uint64_t cline)
{
	uint64_t page = sim_own_page(c->sim, cline);
	uint32_t m = sim_own_memo_of(page);

	if (sim_likely(c->own_page[m] == page + 1))
		return c->own_priv[m];
	return page_private_slow(c, page);
}

uint32_t mon_sim_core_id(const struct mon_sim_core *c)
{
	return c->id;
}

uint32_t mon_sim_core_node(const struct mon_sim_core *c)
{
	return c->node;
}

/* ---- applying other cores' messages to this core's caches ---- */

/* Calls fn on every L1 way holding a piece of coherence line `line`. */
#define FOR_L1_PIECES(c, line, idx, body)                                              \
	do {                                                                           \
		struct mon_sim *s_ = (c)->sim;                                          \
		for (uint32_t p_ = 0; p_ < s_->l1_per_coh; p_++) {                      \
			uint64_t l1l_ = ((line) << (s_->coh_shift - s_->l1_shift)) + p_; \
			uint64_t set_ = sim_set_of(&(c)->l1, l1l_);                      \
			int w_ = sim_find(&(c)->l1, set_, l1l_);                         \
			if (w_ < 0)                                                      \
				continue;                                                \
			uint64_t idx = set_ * (c)->l1.stride + (uint32_t)w_;              \
			body;                                                            \
		}                                                                        \
	} while (0)

void sim_record_recv(struct mon_sim_core *c, uint64_t line, uint32_t cookie)
{
	if (cookie != MON_SIM_NO_COOKIE && c->nr_recv < SIM_RING_CAP) {
		c->recv[c->nr_recv].line_addr = (uintptr_t)(line << c->sim->coh_shift);
		c->recv[c->nr_recv++].cookie = cookie;
	} else {
		__atomic_store_n(&c->recv_lost, c->recv_lost + 1, __ATOMIC_RELAXED);
	}
}

void sim_apply_inv(struct mon_sim_core *c, uint64_t line, struct mon_sim_events *ev)
{
	struct mon_sim *s = c->sim;
	struct sim_cache *k = c->coh;
	uint64_t set = sim_set_of(k, line);
	int w = sim_find(k, set, line);
	uint32_t cookie = MON_SIM_NO_COOKIE;

	ev->inval_recv++;
	if (w < 0 || SIM_ST(k->key[set * k->stride + (uint32_t)w]) == SIM_I) {
		sim_record_recv(c, line, cookie);	/* the copy was already gone */
		return;
	}
	uint64_t i = set * k->stride + (uint32_t)w;
	if (c->has_l2) {
		FOR_L1_PIECES(c, line, idx, {
			if (cookie == MON_SIM_NO_COOKIE)
				cookie = c->l1.meta[idx].cookie;
			sim_key_drop(&c->l1, idx, 0);
			c->l1.meta[idx].dirty = 0;
		});
	}
	if (cookie == MON_SIM_NO_COOKIE)
		cookie = k->meta[i].cookie;
	sim_key_drop(k, i, SIM_KEY(line) | SIM_I);	/* keep the tag: coherence-miss detection */
	k->meta[i].dirty = 0;
	k->meta[i].track = 0;
	k->meta[i].wpub = 0;
	if (s->g.three_c) {
		uint64_t l1l = line << (s->coh_shift - s->l1_shift);
		for (uint32_t p = 0; p < s->l1_per_coh; p++)
			sim_shadow_remove(&c->shadow, l1l + p);
		c->memo_shadow = UINT64_MAX;
	}
	sim_record_recv(c, line, cookie);
}

void sim_apply_down(struct mon_sim_core *c, uint64_t line)
{
	struct sim_cache *k = c->coh;
	uint64_t set = sim_set_of(k, line);
	int w = sim_find(k, set, line);

	if (w < 0)
		return;
	uint64_t i = set * k->stride + (uint32_t)w;
	if (SIM_ST(k->key[i]) < SIM_E)
		return;
	k->key[i] = SIM_KEY(line) | SIM_S;	/* the dirty data went with the intervention */
	k->meta[i].dirty = 0;
	k->meta[i].track = 0;
	k->meta[i].wpub = 0;
	if (c->has_l2) {
		FOR_L1_PIECES(c, line, idx, {
			c->l1.key[idx] = (c->l1.key[idx] & ~(uint64_t)3) | SIM_S;
			c->l1.meta[idx].dirty = 0;
			c->l1.meta[idx].track = 0;
		});
	}
}

void sim_drop_line(struct mon_sim_core *c, uint64_t line)
{
	struct sim_cache *k = c->coh;
	uint64_t set = sim_set_of(k, line);
	int w = sim_find(k, set, line);

	if (w >= 0)
		sim_key_drop(k, set * k->stride + (uint32_t)w, 0);
	if (c->has_l2)
		FOR_L1_PIECES(c, line, idx, { sim_key_drop(&c->l1, idx, 0); });
}

/* ---- the access path ---- */

static __attribute__((noinline)) void sync_slow(struct mon_sim_core *c, struct mon_sim_events *ev)
{
	if (__atomic_load_n(&c->resync, __ATOMIC_ACQUIRE))
		sim_resync(c, ev);
	else
		sim_drain(c, ev);
}

/* An L1 TLB hit is recorded (page becomes MRU); a miss changes nothing. */
static inline int tlb1_hit(struct mon_sim_core *c, uint64_t page)
{
	struct sim_cache *t = &c->tlb1;
	uint64_t set = sim_set_of(t, page);
	int w = sim_find(t, set, page);

	if (w < 0)
		return 0;
	sim_touch(t, set, (uint32_t)w, &t->clock);
	c->memo_page = page;
	c->memo_tidx = set * t->stride + (uint32_t)w;
	return 1;
}

/* known_miss: the caller just found page missing in the L1 TLB. A call:
 * inline in the miss path it cost random ~23 instructions per miss more
 * (registers saved around the rest of the path) than the call. */
__attribute__((noinline)) uint32_t sim_tlb_access(struct mon_sim_core *c, uint64_t page,
						  struct mon_sim_events *ev, int known_miss)
{
	const struct mri_geom_lat *lat = &c->sim->g.lat;
	struct sim_cache *t = &c->tlb1;
	uint64_t set = sim_set_of(t, page);
	int w;

	c->memo_page = page;
	w = known_miss ? -1 : sim_find(t, set, page);
	if (w >= 0) {
		sim_touch(t, set, (uint32_t)w, &t->clock);
		c->memo_tidx = set * t->stride + (uint32_t)w;
		return 0;
	}
	/* The L1 TLB is LRU (core_new): the victim straight from the stamps,
	 * without sim_victim's dispatch on the policy, and the set's address
	 * in locals (the stores below may alias the fields: reloads). Random
	 * kernel: ~15 instructions per L1 TLB miss. */
	uint64_t i = set * t->stride, *tk = t->key + i;
	uint32_t assoc = t->assoc, v, cost = lat->tlb_miss;
	/* the 4- and 8-way cases alone: sim_lru_min's 16-way copy here cost
	 * ~7 instructions per L1 TLB miss (gcc's allocation around it) */
	switch (assoc) {
	case 4:
		v = sim_lru_min_n(tk + 4, 4);
		break;
	case 8:
		v = sim_lru_min_n(tk + 8, 8);
		break;
	default:
		v = sim_lru_min(tk + assoc, assoc);
	}
	tk[v] = SIM_KEY(page) | SIM_S;
	tk[assoc + v] = ++t->clock;
	c->memo_tidx = i + v;
	ev->tlb1_miss = 1;
	if (c->has_tlb2) {
		/* L2 TLB: LRU without stamps to scan for a victim, the recency
		 * order in the first stamp word (up to 16 ways), else the keys
		 * kept in MRU-to-LRU order (nothing refers to its ways) */
		struct sim_cache *t2 = &c->tlb2;
		uint64_t *keys = t2->key + sim_set_of(t2, page) * t2->stride, victim = 0;
		int hit = t2->assoc <= 16 && t2->assoc >= 2 && t2->repl == MRI_GEOM_LRU
				  ? sim_lru16_ref(keys, (uint8_t *)(keys + t2->assoc + 1),
						  keys + t2->assoc, t2->assoc, page,
						  SIM_KEY(page) | SIM_S, &victim, 0)
				  : sim_mru_ref(keys, t2->assoc, page, SIM_KEY(page) | SIM_S,
						&victim, 0);
		if (hit >= 0)
			return lat->tlb2_hit;
	}
	ev->tlb_miss = 1;
	return cost;
}

/* A write to a line this core owns (E or M, possibly tracked): E -> M and
 * publish the written words when other cores lost the line. */
static void write_owned(struct mon_sim_core *c, uint64_t cline, uint64_t i1, uint64_t wmask)
{
	struct sim_cache *k = c->coh;
	uint64_t i;

	if (c->has_l2) {
		uint64_t set = sim_set_of(k, cline);
		int w = sim_find(k, set, cline);
		i = set * k->stride + (uint32_t)w;	/* present by inclusion */
		c->l1.key[i1] = (c->l1.key[i1] & ~(uint64_t)3) | SIM_M;
		c->l1.meta[i1].dirty = 1;
	} else {
		i = i1;
	}
	int first = SIM_ST(k->key[i]) == SIM_E;
	uint64_t bits = k->meta[i].track ? (wmask & ~k->meta[i].wpub) : 0;
	if (first)
		k->key[i] = (k->key[i] & ~(uint64_t)3) | SIM_M;
	if (first || bits) {
		k->meta[i].wpub |= bits;
		sim_coh_publish(c, k->meta[i].dent, bits, first);
	}
	if (c->has_l2)
		c->l1.meta[i1].track = k->meta[i].track;
}

/* 3C class of an L1 miss that is not a coherence miss (sim_lean.h) */
int sim_classify_3c(struct mon_sim_core *c, uint64_t l1line, int shadow_hit)
{
	int r = sim_seen_insert(&c->seen, l1line, c->sim->l1_shift);

	if (r < 0)	/* owner-written, read by mon_sim_get_stats */
		__atomic_store_n(&c->seen_overflows, c->seen_overflows + 1, __ATOMIC_RELAXED);
	if (r > 0)
		return MON_SIM_3C_COMPULSORY;
	return shadow_hit ? MON_SIM_3C_CONFLICT : MON_SIM_3C_CAPACITY;
}

/* Evicts way i of c's coherence level (set `set`) to make room. Inline: a
 * line without directory entry (solo, private page) leaves with at most a
 * writeback, and no call but that one (random kernel: ~50 instructions per
 * eviction less than through sim_coh_evict). */
static inline __attribute__((always_inline)) void evict_coh(struct mon_sim_core *c, uint64_t i,
							    struct mon_sim_events *ev)
{
	struct sim_cache *k = c->coh;
	uint64_t key = k->key[i];
	uint64_t line = SIM_KEY_LINE(key);
	unsigned st = SIM_ST(key);
	int dirty = st == SIM_M;

	if (c->has_l2 && st != SIM_I) {
		FOR_L1_PIECES(c, line, idx, {
			if (c->l1.meta[idx].dirty)
				ev->nr_wb++;	/* L1 -> L2 as the line leaves */
			sim_key_drop(&c->l1, idx, 0);
			c->l1.meta[idx].dirty = 0;
		});
	}
	sim_key_drop(k, i, 0);
	if (c->solo || k->meta[i].priv) {	/* no directory entry */
		if (dirty) {
			ev->nr_wb++;
			sim_llc_writeback(c, line);
		}
		return;
	}
	sim_coh_evict(c, line, st != SIM_I, dirty, k->meta[i].cookie, ev);
}

/* piece_access's w1_known when the caller has not searched the L1 */
#define SIM_WAY_UNKNOWN (-2)

/*
 * One L1 line of an access. Returns the cycles beyond an L1 hit. wmask: the
 * words of the coherence line this piece touches. w1_known: the L1 way
 * holding l1line's tag (or -1: none) when the caller just searched, else
 * SIM_WAY_UNKNOWN.
 */
static inline __attribute__((always_inline)) uint32_t piece_access(struct mon_sim_core *c,
								     uint64_t l1line, uint64_t wmask,
								     int is_write, uint32_t cookie,
								     struct mon_sim_events *ev,
								     int w1_known)
{
	struct mon_sim *s = c->sim;
	const struct mri_geom_lat *lat = &s->g.lat;
	struct sim_cache *l1 = &c->l1;
	uint64_t cline = l1line >> (s->coh_shift - s->l1_shift);
	uint64_t set1 = sim_set_of(l1, l1line);
	uint32_t extra = 0;
	int shadow_hit = 1, w1;
	uint32_t shadow_node = 0;
	struct sim_fetch f;

	w1 = w1_known != SIM_WAY_UNKNOWN ? w1_known : sim_find(l1, set1, l1line);
	if (s->g.three_c && c->memo_shadow != l1line) {
		if (w1 >= 0)
			shadow_node = l1->meta[set1 * l1->stride + (uint32_t)w1].shadow;
		shadow_hit = sim_shadow_access(&c->shadow, l1line, &shadow_node);
		c->memo_shadow = l1line;
	}
	if (0) {
retry:
		w1 = sim_find(l1, set1, l1line);
	}
	if (w1 >= 0 && SIM_ST(l1->key[set1 * l1->stride + (uint32_t)w1]) != SIM_I) {
		uint64_t i1 = set1 * l1->stride + (uint32_t)w1;
		unsigned st = SIM_ST(l1->key[i1]);
		if (is_write && st == SIM_S && c->has_l2) {
			/* another piece of the line may have upgraded it already */
			struct sim_cache *k = c->coh;
			uint64_t set2 = sim_set_of(k, cline);
			unsigned st2 = SIM_ST(k->key[set2 * k->stride + (uint32_t)sim_find(k, set2, cline)]);
			if (st2 >= SIM_E) {
				l1->key[i1] = (l1->key[i1] & ~(uint64_t)3) | st2;
				st = st2;
				l1->meta[i1].track = 1;	/* re-read the L2's rights below */
			}
		}
		if (is_write) {
			if (st == SIM_S) {
				if (sim_coh_upgrade(c, cline, wmask, &f, ev) < 0)
					goto retry;
				ev->inval_sent += f.inval_sent;
				ev->nr_wb += f.nr_wb;
				if (f.inval_sent)
					extra += lat->inval;
				l1->key[i1] = (l1->key[i1] & ~(uint64_t)3) | SIM_M;
				if (c->has_l2) {
					struct sim_cache *k = c->coh;
					uint64_t set2 = sim_set_of(k, cline);
					uint64_t i2 = set2 * k->stride + (uint32_t)sim_find(k, set2, cline);
					k->key[i2] = (k->key[i2] & ~(uint64_t)3) | SIM_M;
					k->meta[i2].dent = f.dent;
					k->meta[i2].track = f.track;
					k->meta[i2].wpub = wmask;
				} else {
					l1->meta[i1].dent = f.dent;
					l1->meta[i1].wpub = wmask;
				}
				l1->meta[i1].track = f.track;
				l1->meta[i1].dirty = 1;
			} else if (st == SIM_E || l1->meta[i1].track) {
				write_owned(c, cline, i1, wmask);
			}
			l1->meta[i1].dirty = 1;
		}
		sim_touch(l1, set1, (uint32_t)w1, &l1->clock);
		l1->meta[i1].cookie = cookie;
		if (shadow_node)
			l1->meta[i1].shadow = shadow_node;
		sim_memo_insert(c, l1line, i1, 0);
		return extra;
	}

	/* L1 miss. In MULTI mode, a miss on a line of a page private to this
	 * core needs no directory (may first make another core's page shared:
	 * then look again) */
	int priv = 1;
	if (!c->solo && (priv = sim_page_private(c, cline)) < 0)
		goto retry;
	ev->l1_miss = 1;
	int cls = MON_SIM_3C_NONE;
	uint32_t lvl_cycles;
	if (c->has_l2) {
		struct sim_cache *k = &c->l2;
		uint64_t set2 = sim_set_of(k, cline);
		int w2 = sim_find(k, set2, cline);
		uint64_t i2 = w2 >= 0 ? set2 * k->stride + (uint32_t)w2 : 0;
		if (w2 >= 0 && SIM_ST(k->key[i2]) != SIM_I) {
			unsigned st = SIM_ST(k->key[i2]);
			if (is_write && st == SIM_S) {
				if (sim_coh_upgrade(c, cline, wmask, &f, ev) < 0)
					goto retry;
				ev->inval_sent += f.inval_sent;
				ev->nr_wb += f.nr_wb;
				if (f.inval_sent)
					extra += lat->inval;
				k->key[i2] = (k->key[i2] & ~(uint64_t)3) | SIM_M;
				k->meta[i2].dent = f.dent;
				k->meta[i2].track = f.track;
				k->meta[i2].wpub = wmask;
			} else if (is_write) {
				int first = st == SIM_E;
				uint64_t bits = k->meta[i2].track ? (wmask & ~k->meta[i2].wpub) : 0;
				if (first)
					k->key[i2] = (k->key[i2] & ~(uint64_t)3) | SIM_M;
				if (first || bits) {
					k->meta[i2].wpub |= bits;
					sim_coh_publish(c, k->meta[i2].dent, bits, first);
				}
			}
			sim_touch(k, set2, (uint32_t)w2, &k->clock);
			k->meta[i2].cookie = cookie;
			lvl_cycles = lat->l2_hit;
			if (s->g.three_c)
				cls = sim_classify_3c(c, l1line, shadow_hit);
		} else {
			/* private miss: reuse our invalidated tag's way or evict */
			ev->l2_miss = 1;
			uint32_t w = w2 >= 0 ? (uint32_t)w2 : sim_victim(k, set2);
			i2 = set2 * k->stride + w;
			if (k->key[i2] && (w2 < 0))
				evict_coh(c, i2, ev);
			if (c->solo || priv)
				sim_coh_fetch_priv(c, cline, is_write, &f, ev);
			else
				sim_coh_fetch(c, cline, is_write, wmask, &f, ev);
			k->key[i2] = SIM_KEY(cline) | (uint64_t)f.state;
			k->meta[i2] = (struct sim_meta){ .wpub = is_write ? wmask : 0, .cookie = cookie,
							 .dent = f.dent, .track = f.track,
							 .priv = f.priv };
			sim_touch(k, set2, w, &k->clock);
			ev->inval_sent += f.inval_sent;
			ev->nr_wb += f.nr_wb;
			if (f.coh)
				ev->coh = (uint8_t)f.coh;
			else if (s->g.three_c)
				cls = sim_classify_3c(c, l1line, shadow_hit);
			lvl_cycles = f.srv == SIM_SRV_LLC ? lat->llc_hit :
				     f.srv == SIM_SRV_LOCAL ? lat->mem_local :
				     f.srv == SIM_SRV_REMOTE ? lat->mem_remote : lat->intervention;
			if (f.inval_sent)
				extra += lat->inval;
			if (f.coh && s->g.three_c)
				sim_seen_insert(&c->seen, l1line, s->l1_shift);
		}
		/* fill the L1 from the L2 */
		unsigned st2 = SIM_ST(k->key[i2]);
		uint32_t v = sim_victim(l1, set1);
		uint64_t i1 = set1 * l1->stride + v;
		if (l1->key[i1]) {
			if (l1->meta[i1].dirty)
				ev->nr_wb++;	/* into the L2 (present by inclusion, already M) */
		}
		l1->key[i1] = SIM_KEY(l1line) | st2;
		l1->meta[i1] = (struct sim_meta){ .cookie = cookie, .dirty = (uint8_t)is_write,
						  .track = k->meta[i2].track, .shadow = shadow_node };
		sim_touch(l1, set1, v, &l1->clock);
		sim_memo_insert(c, l1line, i1, 1);
	} else {
		/* the L1 is the coherence level */
		ev->l2_miss = 1;
		uint32_t w = w1 >= 0 ? (uint32_t)w1 : sim_victim(l1, set1);
		uint64_t i1 = set1 * l1->stride + w;
		if (l1->key[i1] && w1 < 0)
			evict_coh(c, i1, ev);
		if (c->solo || priv)
			sim_coh_fetch_priv(c, cline, is_write, &f, ev);
		else
			sim_coh_fetch(c, cline, is_write, wmask, &f, ev);
		l1->key[i1] = SIM_KEY(cline) | (uint64_t)f.state;
		l1->meta[i1] = (struct sim_meta){ .wpub = is_write ? wmask : 0, .cookie = cookie,
						  .dent = f.dent, .dirty = (uint8_t)is_write,
						  .track = f.track, .priv = f.priv,
						  .shadow = shadow_node };
		/* by the index: sim_touch's set * stride again cost random
		 * ~10 instructions per miss with memo_insert's two */
		sim_touch_at(l1, i1);
		ev->inval_sent += f.inval_sent;
		ev->nr_wb += f.nr_wb;
		if (f.coh) {
			ev->coh = (uint8_t)f.coh;
			if (s->g.three_c)
				sim_seen_insert(&c->seen, l1line, s->l1_shift);
		} else if (s->g.three_c) {
			cls = sim_classify_3c(c, l1line, shadow_hit);
		}
		lvl_cycles = f.srv == SIM_SRV_LLC ? lat->llc_hit :
			     f.srv == SIM_SRV_LOCAL ? lat->mem_local :
			     f.srv == SIM_SRV_REMOTE ? lat->mem_remote : lat->intervention;
		if (f.inval_sent)
			extra += lat->inval;
		sim_memo_insert(c, l1line, i1, 1);
	}
	if (cls && !ev->cls3c)
		ev->cls3c = (uint8_t)cls;
	return lvl_cycles - lat->l1_hit + extra;
}

/* piece_access for the pieces of an access that spans lines or pages */
static __attribute__((noinline)) uint32_t piece_access_call(struct mon_sim_core *c, uint64_t l1line,
							     uint64_t wmask, int is_write,
							     uint32_t cookie,
							     struct mon_sim_events *ev, int w1_known)
{
	return piece_access(c, l1line, wmask, is_write, cookie, ev, w1_known);
}

/* w1_known: as piece_access's, for the first L1 line of the access;
 * tlb1_known_miss: the caller found the first page missing in the L1 TLB.
 * Inline in access_full, its one caller (a call level less per miss). */
static inline __attribute__((always_inline)) void access_slow(struct mon_sim_core *c,
							      uintptr_t addr, uint32_t size,
							      int is_write, uint32_t cookie,
							      struct mon_sim_events *ev,
							      int w1_known, int tlb1_known_miss,
							      int one_line)
{
	struct mon_sim *s = c->sim;
	const uint32_t l1_shift = s->l1_shift, word_shift = s->word_shift;
	uint64_t end = (uint64_t)addr + size;
	uint64_t coh_mask = (1ull << s->coh_shift) - 1;
	uint64_t p = addr >> s->tlb_shift, l = addr >> l1_shift;
	uint32_t cycles = s->g.lat.l1_hit;

	/* One page and one L1 line, nearly every access: no loop (random
	 * kernel: ~40 instructions per miss spent on the loops' bounds).
	 * one_line: the caller knows (a page holds whole lines: mri_geom_check) */
	if (one_line ||
	    sim_likely(p == (end - 1) >> s->tlb_shift && l == (end - 1) >> l1_shift)) {
		uint64_t wmask = 0;

		/* the words written, or read with other cores about: a read
		 * of a core running solo uses none (random kernel: ~12
		 * instructions per miss) */
		if (is_write || !c->solo) {
			uint32_t w0 = (uint32_t)((addr & coh_mask) >> word_shift);
			uint32_t w1 = (uint32_t)(((end - 1) & coh_mask) >> word_shift);

			wmask = (~0ull >> (63 - w1)) & (~0ull << w0);
		}
		/* the L1 missed, or is searched after the TLB: the LLC set's
		 * host lines load during the TLB and the L1 victim's work
		 * (random kernel: 10% of its time stalled on them). A dirty
		 * victim's writeback set as well: no gain measured for the
		 * ~25 instructions of choosing the victim first */
		sim_llc_prefetch(s, c->node, l >> (s->coh_shift - l1_shift));
		if (p != c->memo_page)
			cycles += sim_tlb_access(c, p, ev, tlb1_known_miss);
		cycles += piece_access(c, l, wmask, is_write, cookie, ev, w1_known);
		ev->est_cycles = cycles;
		ev->est_stall_cycles = cycles - s->g.lat.l1_hit;
		return;
	}
	/* the bounds in locals: the stores of the calls below could alias
	 * the fields they came from (~20 instructions per miss reloading) */
	uint64_t last = (end - 1) >> l1_shift, plast = (end - 1) >> s->tlb_shift;
	for (; p <= plast; p++) {
		if (p != c->memo_page)
			cycles += sim_tlb_access(c, p, ev, tlb1_known_miss);
		tlb1_known_miss = 0;
	}
	/* piece [lo, hi) of each L1 line: hi the next line's start, or end */
	for (uint64_t lo = addr; l <= last; l++) {
		uint64_t hi = l == last ? end : (l + 1) << l1_shift;
		uint32_t w0 = (uint32_t)((lo & coh_mask) >> word_shift);
		uint32_t w1 = (uint32_t)(((hi - 1) & coh_mask) >> word_shift);
		uint64_t wmask = (~0ull >> (63 - w1)) & (~0ull << w0);
		cycles += piece_access_call(c, l, wmask, is_write, cookie, ev, w1_known);
		w1_known = SIM_WAY_UNKNOWN;
		lo = hi;
	}
	ev->est_cycles = cycles;
	ev->est_stall_cycles = cycles - s->g.lat.l1_hit;
}

/*
 * What mon_sim_access does not settle with the positions it remembers: the
 * L1 TLB and the L1 searched (a hit with the rights needed ends there), then
 * access_slow. Returns mon_sim_access's value. Inline in
 * mon_sim_access_rest, its one caller, as access_slow is here: the miss
 * path is one function from there down to the LLC.
 */
/* access_full's flags */
enum {
	SIM_AF_WRITE = 1,
	SIM_AF_ENTERED = 2,	/* the caller entered the core and tried c->l0 */
	SIM_AF_TRIED = 4,	/* the caller tried c->l0 (sim_hit), or did not
				 * need to: trying again would fail */
	SIM_AF_CUR_TAG = 8,	/* the caller set c->cur_tag (it holds the core) */
	SIM_AF_ONE_LINE = 16,	/* the access lies within one L1 line */
};

static inline __attribute__((always_inline)) int access_full(struct mon_sim_core *c,
							     uintptr_t addr, uint32_t size,
							     unsigned flags, uint32_t cookie,
							     struct mon_sim_events *ev,
							     uintptr_t tag0, uintptr_t tag1)
{
	struct mon_sim *s = c->sim;
	struct sim_cache *l1 = &c->l1;
	uint64_t line = addr >> s->l1_shift;
	int is_write = (flags & SIM_AF_WRITE) != 0, ret = 0;
	int locked = (flags & SIM_AF_ENTERED) ? 0 : core_enter(c);
	int w1_known = SIM_WAY_UNKNOWN;
	int one_line = (flags & SIM_AF_ONE_LINE) || line == (addr + size - 1) >> s->l1_shift;

	/* under the core: memo_insert gives the line's entry these */
	if (!(flags & SIM_AF_CUR_TAG)) {
		c->cur_tag[0] = tag0;
		c->cur_tag[1] = tag1;
	}

	/* mail cleared with a full barrier before the ring is read: a push
	 * after that sets it again */
	if (sim_unlikely(!c->solo && __atomic_load_n(&c->mail, __ATOMIC_RELAXED)) &&
	    (__atomic_exchange_n(&c->mail, 0, __ATOMIC_SEQ_CST), 1) &&
	    (sim_ring_ready(c->ring) || __atomic_load_n(&c->resync, __ATOMIC_ACQUIRE))) {
		sync_slow(c, ev);
		ret = 1;	/* sync_slow may have reported inval_recv */
	}
	/* The caller tried the remembered lines, unless it says not, or they
	 * needed a call (3C), or messages changed things since. (A mode switch
	 * in between, SOLO -> MULTI, only makes them stricter.) */
	if (one_line && (!(flags & (SIM_AF_ENTERED | SIM_AF_TRIED)) || ret || c->three_c) &&
	    sim_l0_hit(c, line, is_write, cookie, 0, c->cur_tag)) {
		ev->est_cycles = s->g.lat.l1_hit;
		sim_core_exit(c, locked);
		return ret;
	}
	/* L1 TLB hit and L1 hit with the rights needed: no miss path, no
	 * coherence action */
	uint64_t page = addr >> s->tlb_shift;
	int tlb1_known_miss = one_line && page != c->memo_page && !tlb1_hit(c, page);
	if (one_line && !tlb1_known_miss) {
		uint64_t set = sim_set_of(l1, line);
		int w = sim_find(l1, set, line);
		w1_known = w;	/* the miss path need not search again */
		if (w >= 0) {
			uint64_t i = set * l1->stride + (uint32_t)w;
			unsigned st = SIM_ST(l1->key[i]);
			if (st != SIM_I && (!is_write || (st == SIM_M && !l1->meta[i].track))) {
				if (s->g.three_c && c->memo_shadow != line) {
					sim_shadow_access(&c->shadow, line, &l1->meta[i].shadow);
					c->memo_shadow = line;
				}
				sim_touch(l1, set, (uint32_t)w, &l1->clock);
				l1->meta[i].cookie = cookie;
				l1->meta[i].dirty |= (uint8_t)is_write;
				sim_memo_insert(c, line, i, 0);
				ev->est_cycles = s->g.lat.l1_hit;
				sim_core_exit(c, locked);
				return ret;
			}
		}
	}
	/* access_slow may leave and enter the core again (sim_page_private) */
	c->locked = locked;
	access_slow(c, addr, size, is_write, cookie, ev, w1_known, tlb1_known_miss,
		    (flags & SIM_AF_ONE_LINE) != 0);
	sim_core_exit(c, c->locked);
	return 1;
}

int mon_sim_access_tagged(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write,
			  uint32_t cookie, struct mon_sim_events *ev, uintptr_t tag0, uintptr_t tag1)
{
	*ev = (struct mon_sim_events){ 0 };
	if (sim_unlikely(!size))
		size = 1;
	return access_full(c, addr, size, (unsigned)is_write | SIM_AF_TRIED, cookie, ev, tag0,
			   tag1);
}

int mon_sim_access_held(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write,
			uint32_t cookie, struct mon_sim_events *ev)
{
	*ev = (struct mon_sim_events){ 0 };
	return access_full(c, addr, size,
			   (unsigned)is_write | SIM_AF_ENTERED | SIM_AF_CUR_TAG | SIM_AF_ONE_LINE,
			   cookie, ev, 0, 0);
}

int mon_sim_access_rest(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write,
			uint32_t cookie, struct mon_sim_events *ev)
{
	return mon_sim_access_tagged(c, addr, size, is_write, cookie, ev, 0, 0);
}

int mon_sim_access(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write,
		   uint32_t cookie, struct mon_sim_events *ev)
{
	/* One L1 line among the last few accessed, nothing pending from other
	 * cores, no call needed: the common case, free of calls. */
	if (sim_likely(sim_hit(c, addr, size, is_write, cookie, NULL))) {
		*ev = (struct mon_sim_events){ .est_cycles = c->l1_hit_cycles };
		return 0;
	}
	return mon_sim_access_rest(c, addr, size, is_write, cookie, ev);
}

uint32_t mon_sim_core_recv(struct mon_sim_core *c, struct mon_sim_recv *out, uint32_t max)
{
	uint32_t n;
	int locked = core_enter(c);

	n = c->nr_recv < max ? c->nr_recv : max;
	for (uint32_t i = 0; i < n; i++)
		out[i] = c->recv[i];
	for (uint32_t i = n; i < c->nr_recv; i++)
		c->recv[i - n] = c->recv[i];
	c->nr_recv -= n;
	sim_core_exit(c, locked);
	return n;
}

void mon_sim_core_sync(struct mon_sim_core *c, struct mon_sim_events *ev)
{
	*ev = (struct mon_sim_events){ 0 };
	int locked = core_enter(c);
	sync_slow(c, ev);
	sim_core_exit(c, locked);
}

void mon_sim_settle_cold(struct mon_sim *s, int on)
{
	__atomic_store_n(&s->settle_cold, on, __ATOMIC_RELAXED);
}

void mon_sim_after_fork(struct mon_sim *s)
{
	s->create_lock = 0;
	/* the sets' locks (a k32 LLC's in their own array: sim_llc_lock_of) */
	for (uint32_t n = 0; s->llc && n < s->g.nr_nodes; n++)
		for (uint64_t set = 0; set < s->llc[n].nr_sets; set++)
			*sim_llc_lock_of(&s->llc[n], s->llc[n].blk + set * s->llc[n].stride) = 0;
	for (uint32_t i = 0; i < SIM_DIR_STRIPES; i++)
		s->dir.stripe[i].lock = 0;
	for (uint32_t i = 0; i < MON_SIM_MAX_CORES; i++) {
		struct mon_sim_core *c = s->core[i];
		if (!c)
			continue;
		c->busy = 0;
		c->lock = 0;
		c->owner_tid = SIM_NO_OWNER;
		/* slots reserved by threads that no longer exist would never be
		 * published: drop the queue, reconcile instead */
		for (uint64_t pos = c->ring->head; pos < c->ring->head + SIM_RING_CAP; pos++)
			c->ring->slot[pos & (SIM_RING_CAP - 1)].seq = pos;
		c->ring->tail = c->ring->head;
		c->resync = 1;
		c->mail = 1;
		mon_sim_core_lf_forget(c);
	}
}

int mon_sim_page_info(struct mon_sim *s, uintptr_t addr, struct mon_sim_page *out)
{
	return sim_page_lookup(s, (uint64_t)addr >> s->page_shift, out);
}

void mon_sim_get_stats(struct mon_sim *s, struct mon_sim_stats *out)
{
	*out = (struct mon_sim_stats){ 0 };
	out->dir_overflows = __atomic_load_n(&s->dir.overflows, __ATOMIC_RELAXED);
	out->page_overflows = __atomic_load_n(&s->pages.overflows, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < MON_SIM_MAX_CORES; i++) {
		struct mon_sim_core *c = sim_core_at(s, i);
		if (!c)
			continue;
		out->ring_overflows += __atomic_load_n(&c->ring_overflows, __ATOMIC_RELAXED);
		out->seen_overflows += __atomic_load_n(&c->seen_overflows, __ATOMIC_RELAXED);
		out->inval_recv_lost += __atomic_load_n(&c->recv_lost, __ATOMIC_RELAXED);
	}
}

int mon_sim_verify(struct mon_sim *s, char *err, size_t errlen)
{
	for (uint32_t id = 0; id < MON_SIM_MAX_CORES; id++) {
		struct mon_sim_core *c = sim_core_at(s, id);
		if (!c)
			continue;
		struct sim_cache *k = c->coh;
		/* every valid L1 piece is covered by a valid L2 line with at least its rights */
		if (c->has_l2) {
			for (uint64_t i = 0; i < c->l1.nr_sets * c->l1.stride; i++) {
				if (i % c->l1.stride >= c->l1.assoc)
					continue;	/* replacement state, not a way */
				uint64_t key = c->l1.key[i];
				if (!key || SIM_ST(key) == SIM_I)
					continue;
				uint64_t cl = SIM_KEY_LINE(key) >> (s->coh_shift - s->l1_shift);
				uint64_t set = sim_set_of(k, cl);
				int w = sim_find(k, set, cl);
				unsigned st2 = w >= 0 ? SIM_ST(k->key[set * k->stride + (uint32_t)w]) : 0;
				/* the L1 may lag behind an upgrade made through another piece */
				if (st2 == SIM_I || (SIM_ST(key) >= SIM_E && st2 < SIM_E)) {
					snprintf(err, errlen, "core %u: L1 line %#llx state %u, L2 state %u",
						 id, (unsigned long long)SIM_KEY_LINE(key), SIM_ST(key), st2);
					return AMEBA_EPROTO;
				}
			}
		}
		/* LRU stamps rank the ways (sim_victim_in): 0 empty, 1 invalidated */
		struct sim_cache *ks[2] = { &c->l1, c->has_l2 ? &c->l2 : NULL };
		for (int n = 0; n < 2; n++) {
			struct sim_cache *kc = ks[n];
			if (!kc || kc->repl != MRI_GEOM_LRU)
				continue;
			for (uint64_t i = 0; i < kc->nr_sets * kc->stride; i++) {
				if (i % kc->stride >= kc->assoc)
					continue;
				uint64_t key = kc->key[i], st = kc->key[i + kc->assoc];
				if (st != (!key ? 0 : SIM_ST(key) == SIM_I ? 1 : st < 2 ? UINT64_MAX : st)) {
					snprintf(err, errlen, "core %u: %s way %llu key %#llx, stamp %llu",
						 id, n ? "L2" : "L1", (unsigned long long)i,
						 (unsigned long long)key, (unsigned long long)st);
					return AMEBA_EPROTO;
				}
			}
		}
		/* a solo core's lines are its own: E or M, untracked, without a
		 * directory entry (the lean path with an L2 reads only the keys) */
		for (uint64_t i = 0; c->solo && i < k->nr_sets * k->stride; i++) {
			uint64_t key = k->key[i];

			if (i % k->stride >= k->assoc || !key)
				continue;
			if (SIM_ST(key) < SIM_E || k->meta[i].track || k->meta[i].dent) {
				snprintf(err, errlen,
					 "core %u (solo): line %#llx state %u, track %u, dent %u", id,
					 (unsigned long long)SIM_KEY_LINE(key), SIM_ST(key),
					 k->meta[i].track, k->meta[i].dent);
				return AMEBA_EPROTO;
			}
		}
	}
	return sim_dir_verify(s, err, errlen);
}

void mon_sim_totals_add(struct mon_sim_totals *t, const struct mon_sim_events *ev)
{
	t->accesses++;
	t->l1_miss += ev->l1_miss;
	t->l2_miss += ev->l2_miss;
	t->llc_miss += ev->llc_miss;
	t->mem_local += ev->mem_local;
	t->mem_remote += ev->mem_remote;
	t->tlb1_miss += ev->tlb1_miss;
	t->tlb_miss += ev->tlb_miss;
	t->coh_true += ev->coh == MON_SIM_COH_TRUE;
	t->coh_false += ev->coh == MON_SIM_COH_FALSE;
	t->compulsory += ev->cls3c == MON_SIM_3C_COMPULSORY;
	t->capacity += ev->cls3c == MON_SIM_3C_CAPACITY;
	t->conflict += ev->cls3c == MON_SIM_3C_CONFLICT;
	t->intervention += ev->intervention;
	t->inval_sent += ev->inval_sent;
	t->inval_recv += ev->inval_recv;
	t->nr_wb += ev->nr_wb;
	t->est_cycles += ev->est_cycles;
	t->est_stall_cycles += ev->est_stall_cycles;
}
