/*
 * sim_lean.h - the lean path's body, inline, and what it calls: sim_lean.c
 * makes mon_sim_access_lean of it, and the sim backend's miss half
 * (backend_sim.c) inlines it with the associativities as constants, so a
 * miss from the line entries makes one call, not two (docs/simulator.md,
 * "The lean path"). Part of monitor/sim's interface to monitor/, as
 * sim_core.h is for the hit (docs/architecture.md).
 */
#ifndef AMEBA_SIM_LEAN_H
#define AMEBA_SIM_LEAN_H

#include "sim_core.h"

/* A dirty line the L1 drops, into the LLC or memory (sim_coh.c) */
void sim_llc_writeback(struct mon_sim_core *c, uint64_t line) SIM_HIDDEN;
/* The 3C class (MON_SIM_3C_*) of an L1 miss of l1line that is no
 * coherence miss, shadow_hit the shadow's answer (sim.c) */
int sim_classify_3c(struct mon_sim_core *c, uint64_t l1line, int shadow_hit) SIM_HIDDEN;

/* ---- the fast path's guesses ---- */

/*
 * Access of this core to L1 line `line` ended in way `way` of its set: the
 * line is now most recently used in the L1, and so is its page (memo_page)
 * in the L1 TLB. Remembers where both sit, in the entry the line had or
 * else the least recently used one. filled: the line was just filled (an
 * L1 miss): the next entry is taken without looking for the line's, since
 * an entry of a line that missed can only be stale (~17 instructions per
 * miss). A stale entry left before the new one fails its check (sim_l0_hit
 * stops at the first entry of a line) and the full path then updates it.
 * While the filter is on, only the line's entry in the filter
 * (sim_memo_lf): its own entries serve the hits.
 */
/* sim_memo_insert's filter side, the line's key word now want and wok a
 * write's rights (sim_lf_wok's): the filter on remembers the line, its
 * misses skip the remembered lines (mon_sim_lf_miss), whose entries stay
 * as they were (checked before use); only the guess that the last one is
 * most recently used no longer holds */
static inline __attribute__((always_inline)) void sim_memo_lf(struct mon_sim_core *c,
							       uint64_t line, uint64_t i,
							       uint64_t want, uint32_t wok,
							       uintptr_t tag0, uintptr_t tag1)
{
	const uintptr_t tag[2] = { tag0, tag1 };

	c->last_line = UINT64_MAX;
	sim_lf_write_key(c, line, i, want, tag, wok);
}
/* sim_memo_insert with the line's tag given (c->cur_tag's words, or the
 * caller's own: the lean path's from the filter's miss, in registers) */
static inline __attribute__((always_inline)) void sim_memo_insert_tag(struct mon_sim_core *c,
								       uint64_t line, uint64_t i,
								       int filled, uintptr_t tag0,
								       uintptr_t tag1)
{
	int j;

	if (__atomic_load_n(&c->lf.on, __ATOMIC_RELAXED)) {
		sim_memo_lf(c, line, i, c->l1.key[i], sim_lf_wok(c, i), tag0, tag1);
		return;
	}
	j = filled ? -1 : sim_l0_search(c, line);
	if (j < 0) {
		j = (int)c->l0.next;
		c->l0.next = (c->l0.next + 1) % SIM_L0;
	}
	c->l0.line[j] = line;
	c->l0.lo[j] = (uint32_t)line;
	c->l0.idx[j] = (uint32_t)i;
	c->l0.page[j] = c->memo_page;
	c->l0.tidx[j] = (uint32_t)c->memo_tidx;
	c->l0.tag[j][0] = tag0;
	c->l0.tag[j][1] = tag1;
	c->last_line = line;
	c->last_i = i;
	c->last_j = (uint32_t)j;	/* (the filter is off: only its owner, here, turns it on) */
}
static inline void sim_memo_insert(struct mon_sim_core *c, uint64_t line, uint64_t i, int filled)
{
	sim_memo_insert_tag(c, line, i, filled, c->cur_tag[0], c->cur_tag[1]);
}

/* The LLC set of line `line`: sim_llc_set, or with c64 (sim_lean_body) a
 * 16-way LLC's set of a power-of-two count, its stride a constant */
static inline __attribute__((always_inline)) uint64_t *lean_llc_set(const struct sim_llc *L,
								     uint64_t line, const int c64)
{
	return c64 ? L->blk + (line & L->set_mask) * SIM_LLC16_STRIDE : sim_llc_set(L, line);
}

/* The words of its coherence line that an access within one line touches
 * (c64: 64-byte lines of 4-byte words) */
static inline __attribute__((always_inline)) uint64_t sim_lean_wmask(const struct mon_sim *s,
								      uintptr_t addr, uint32_t size,
								      const int c64)
{
	return sim_words(addr, size, c64 ? 6 : s->coh_shift, c64 ? 2 : s->word_shift);
}

/* The L1 TLB and the L2 TLB for page (sim.c): the cycles beyond an L1 TLB
 * hit; sets ev->tlb1_miss, ev->tlb_miss. known_miss: the caller just
 * found page missing in the L1 TLB. */
uint32_t sim_tlb_access(struct mon_sim_core *c, uint64_t page, struct mon_sim_events *ev,
			int known_miss) SIM_HIDDEN;

/* The victim's way of an LRU set of cache k whose stamps are `stamps`:
 * with n ways as a constant (0: the geometry's, assoc), 8 by SSE2 over the
 * stamps' low halves, which k's clock keeps below 2^31 (sim_lru_renumber
 * when it reaches sim_stamp_renumber_at: the order stays, and so every
 * victim) */
static inline __attribute__((always_inline)) uint32_t lean_lru_victim(struct sim_cache *k,
								       const uint64_t *stamps,
								       const uint32_t n,
								       uint32_t assoc)
{
	if (n == 8 && sim_unlikely(k->clock >= sim_stamp_renumber_at))
		sim_lru_renumber(k);
	return n == 8 ? sim_lru_min8(stamps)
	       : n    ? sim_lru_min_n(stamps, n)
		      : sim_lru_min(stamps, assoc);
}

/*
 * sim_lean_body's L1 miss with an L2 (its l2): piece_access's for a solo
 * core whose L2 is the coherence level, inclusive, of the L1's lines, and
 * in the same order. w2: the line's L2 way (E or M, untracked, no
 * directory entry: the caller checked), or -1; base2 its set's first key
 * index; b the LLC set (prefetched) when the L2 missed; node the line's 3C
 * shadow node (0 without 3C), the L1 fill's hint. An L2 hit: a
 * write on E makes the L2's copy M. An L2 miss: the L2's victim leaves
 * first with its L1 copy (a dirty copy adds only a writeback into the L2,
 * which no metric counts) and, when M, is written back into the LLC; then
 * the LLC's reference, the L2's fill (E, or M for a write). Then the L1's
 * victim, chosen only now: the L2's may have emptied a way of this very
 * set, and an empty way comes first; a dirty one goes into the L2, which
 * holds it M already. Returns the outcome, the core left. a1, l2, a3:
 * sim_lean_body's (l2 > 1 the L2's ways as a constant).
 */
static inline __attribute__((always_inline)) int
lean_l2_miss(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write, uint32_t cookie,
	     uint64_t line, uint64_t *keys, uint64_t base, int w2, uint64_t base2, uint64_t *b,
	     int out, uint32_t node, uintptr_t tag0, uintptr_t tag1, const uint32_t a1,
	     const uint32_t l2, const uint32_t a3)
{
	struct mon_sim *s = c->sim;
	struct sim_cache *l1 = &c->l1, *k2 = &c->l2;
	const uint32_t assoc = a1 ? a1 : l1->assoc, assoc2 = l2 > 1 ? l2 : k2->assoc;
	uint64_t i2;

	if (w2 >= 0) {
		i2 = base2 + (uint32_t)w2;
		if (is_write)
			k2->key[i2] |= SIM_M;	/* E -> M, or M already */
		k2->meta[i2].cookie = cookie;
		out |= SIM_LEAN_L2;
	} else {
		i2 = base2 + lean_lru_victim(k2, k2->key + base2 + assoc2, l2 > 1 ? l2 : 0, assoc2);
		uint64_t old = k2->key[i2];

		if (old && SIM_ST(old) != SIM_I) {
			uint64_t vl = SIM_KEY_LINE(old), vb = sim_set_of(l1, vl) * l1->stride;
			int vw = a1 ? sim_find_n(l1->key + vb, a1, SIM_KEY(vl))
				    : sim_find_in(l1->key + vb, assoc, vl);

			if (vw >= 0) {
				sim_key_drop(l1, vb + (uint32_t)vw, 0);
				l1->meta[vb + (uint32_t)vw].dirty = 0;
			}
			if (SIM_ST(old) == SIM_M)
				sim_llc_writeback(c, vl);
		}
		if (!b) {
			out |= SIM_LEAN_MEM;
		} else {
			const struct sim_llc *L = s->llc;
			uint64_t victim = 0;
			int hw = a3 || L->k32
					 ? sim_llc32_ref((uint32_t *)(void *)b, line,
							 SIM_KEY(line) | SIM_S, &victim)
					 : sim_llc16_ref(b, L->keys_off, L->assoc, line,
							 SIM_KEY(line) | SIM_S, &victim);

			out |= hw >= 0 ? SIM_LEAN_LLC : SIM_LEAN_MEM;
		}
		k2->key[i2] = SIM_KEY(line) | (is_write ? SIM_M : SIM_E);
		k2->meta[i2] = (struct sim_meta){
			.wpub = is_write ? sim_lean_wmask(s, addr, size, 0) : 0,
			.cookie = cookie,
			.priv = 1,
		};
	}
	k2->key[i2 + assoc2] = ++k2->clock;	/* the L2 is LRU (lean_fits) */

	uint32_t v = lean_lru_victim(l1, keys + assoc, a1, assoc);
	uint64_t i = base + v;

	keys[v] = SIM_KEY(line) | SIM_ST(k2->key[i2]);
	l1->meta[i] = (struct sim_meta){ .cookie = cookie, .shadow = node, .dirty = (uint8_t)is_write };
	keys[assoc + v] = ++l1->clock;
	sim_memo_insert_tag(c, line, i, 1, tag0, tag1);
	sim_core_exit(c, 0);
	return out;
}

/*
 * The lean path (issue 24): what access_full and access_slow do for an
 * access within one L1 line of a solo core whose geometry has no L2, no
 * 3C, an LRU L1 and at most one node whose LLC keeps its order in a word
 * (lean_fits), written as one function over locals. In solo mode a line is
 * never shared: its states are E and M, it has no directory entry and
 * nothing tracks its words, so a hit is the stamps and a write hit on E is
 * E -> M (as the fast path); a miss is the L1 victim (written back into
 * the LLC when dirty), the LLC's reference and the fill. The same state
 * changes as the general path, in the same order: the counts and every
 * later access are the same (test sim_lean_path checks them against the
 * general path). Returns SIM_LEAN_* (level | TLB part), or -1 having changed
 * nothing when the access needs the general path (a core not solo, a
 * state solo mode does not make, sampled mode's cold LLC sets). Called
 * with the core held (sim_core_try_enter); leaves it, but on -1. solo:
 * the caller saw c solo after it took the core (which solo cannot leave
 * meanwhile), so it is not read again. tag0, tag1: the line's two words for
 * its remembered entry (c->cur_tag's, or the caller's own: then c->cur_tag
 * is left as it was). coh: 0 (a constant) as above; else the ordered
 * mode's merger (mon_sim_access_lean_coh), for a core that need not be
 * solo, with no mail pending: SIM_LEAN_COH, | SIM_LEAN_COH_PRIV when the
 * line's page is known private to c. A core not solo then takes only what
 * needs no directory: a hit (a write to E only on a line without a
 * directory entry), a miss on a private page whose L1 victim has no
 * directory entry either, the LLC's sets locked (sim_coh.c llc_lock_set's
 * lock) as the general path locks them.
 */
static inline __attribute__((always_inline)) int
sim_lean_body(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write, uint32_t cookie,
	      const uint32_t a1, const uint32_t a3, const int c64, const uint32_t l2, const int solo,
	      uintptr_t tag0, uintptr_t tag1, const int coh)
{
	struct mon_sim *s = c->sim;
	struct sim_cache *l1 = &c->l1;
	const uint32_t assoc = a1 ? a1 : l1->assoc;
	/* c64: 64-byte L1 lines, no L2 (the coherence line the L1's), 4-byte
	 * words and no TLB model (every address in page 0, the memo's) */
	uint64_t line = addr >> (c64 ? 6 : s->l1_shift), page = c64 ? 0 : addr >> s->tlb_shift;
	/* c64: both caches' sets a power of two (lean_fits); an LRU L1's set is
	 * its keys and stamps, a 16-way LLC's 24 words, its keys from word 4
	 * (lean_llc_set) */
	uint64_t base = (c64 ? line & l1->set_mask : sim_set_of(l1, line)) *
			(a1 ? 2 * a1 : l1->stride);
	uint64_t *keys = l1->key + base;
	int w = a1 ? sim_find_n(keys, a1, SIM_KEY(line)) : sim_find_in(keys, assoc, line), out = 0;

	/* not solo (coh): a read hit may find the line S or tracked as well
	 * (the general path's hit); a write on S upgrades it, on E with a
	 * directory entry or on a tracked line with words not yet published
	 * publishes them (write_owned), and a miss claims or shares its page:
	 * the general path's, unless the line or its page needs none of it */
	const int multi = coh && !c->solo;
	if (sim_unlikely((!solo && !coh && !c->solo) || s->settle_cold))
		return -1;
	if (w >= 0) {
		uint64_t st = SIM_ST(keys[w]);
		const struct sim_meta *m = &l1->meta[base + (uint32_t)w];

		if (!multi) {
			if (sim_unlikely(st < SIM_E || m->track))
				return -1;
		} else if (st == SIM_I) {
			return -1;
		} else if (is_write && (st == SIM_S || (st == SIM_E && !m->priv) ||
					(m->track && (st != SIM_M || (sim_lean_wmask(s, addr, size, c64) &
								       ~m->wpub))))) {
			return -1;
		}
	} else if (multi && !(coh & SIM_LEAN_COH_PRIV)) {
		return -1;
	}
	/* l2: the L2 is the coherence level (the L1's line its, inclusive);
	 * its way of the line when the L1 hit is a write on E (write_owned:
	 * the L2's copy to M too) or the L1 missed. Only E or M; a solo core's
	 * lines are never tracked and have no directory entry (solo is only
	 * ever left: mon_sim_verify checks it), so their metadata need not be
	 * read (chase: its load was a tenth of the time) */
	struct sim_cache *k2 = &c->l2;
	uint64_t base2 = 0;
	int w2 = -1;
	if (l2 && (w < 0 || (is_write && SIM_ST(keys[w]) == SIM_E))) {
		base2 = sim_set_of(k2, line) * (l2 > 1 ? 2 * l2 : k2->stride);
		w2 = l2 > 1 ? sim_find_n(k2->key + base2, l2, SIM_KEY(line))
			    : sim_find_in(k2->key + base2, k2->assoc, line);
		if (w2 >= 0 && SIM_ST(k2->key[base2 + (uint32_t)w2]) < SIM_E)
			return -1;
		if (w >= 0 && w2 < 0)
			return -1;	/* not inclusive: never so */
	}
	if (!c64 && page != c->memo_page) {
		struct mon_sim_events e;

		e.tlb1_miss = e.tlb_miss = 0;
		(void)sim_tlb_access(c, page, &e, 0);
		out = e.tlb_miss ? SIM_LEAN_WALK : e.tlb1_miss ? SIM_LEAN_TLB2 : 0;
	}
	/* 3C (never with c64): the shadow's use of a line other than the one
	 * shadowed last, as access_full's hit and piece_access have it; an L1
	 * miss's class in the outcome, the shadow's node the fill's hint */
	const int tc = !c64 && c->three_c;
	uint32_t node = 0;
	if (tc) {
		int shadow_hit = 1;

		if (c->memo_shadow != line) {
			shadow_hit = sim_shadow_access(&c->shadow, line,
						       w >= 0 ? &l1->meta[base + (uint32_t)w].shadow
							      : &node);
			c->memo_shadow = line;
		}
		if (w < 0)
			out |= sim_classify_3c(c, line, shadow_hit) << SIM_LEAN_3C_SHIFT;
	}
	if (w >= 0) {
		uint64_t i = base + (uint32_t)w;
		if (is_write)
			keys[w] |= SIM_M;	/* E -> M, silent (no L2) */
		if (w2 >= 0)
			k2->key[base2 + (uint32_t)w2] |= SIM_M;	/* the L2's E -> M */
		keys[assoc + (uint32_t)w] = ++l1->clock;
		l1->meta[i].cookie = cookie;
		l1->meta[i].dirty |= (uint8_t)is_write;
		sim_memo_insert_tag(c, line, i, 0, tag0, tag1);
		sim_core_exit(c, 0);
		return out;
	}
	/* a miss: the LLC set's host lines load while the victim is chosen */
	struct sim_llc *L = s->llc;
	uint64_t *b = NULL;
	if ((a3 || L) && w2 < 0) {
		b = lean_llc_set(L, line, c64);
		sim_prefetch(b);
		if (a3 != 16 && L->stride > 8)
			sim_prefetch(b + 8);
		if (a3 != 16 && L->stride > 16)
			sim_prefetch(b + 16);
	}
	if (l2)
		return lean_l2_miss(c, addr, size, is_write, cookie, line, keys, base, w2, base2, b,
				    out, node, tag0, tag1, a1, l2, a3);
	uint32_t v = lean_lru_victim(l1, keys + assoc, a1, assoc);
	uint64_t i = base + v, old = keys[v], wmask = 0;
	/* (renumbering keeps the stamps' order: no change to undo) */
	if (multi && old && !l1->meta[i].priv)
		return -1;	/* the victim leaves the directory: sim_coh_evict */
	if (old && SIM_ST(old) == SIM_M) {
		if (a3) {
			/* sim_llc_writeback inline: one node, a k32 LLC (the
			 * 16-way lean kinds: lean_fits); the set locked only
			 * when the core is not solo */
			uint64_t vl = SIM_KEY_LINE(old), *vb = lean_llc_set(L, vl, c64);
			uint32_t *vk = (uint32_t *)(void *)vb, *lk = multi ? sim_llc_lock_of(L, vb) : NULL;

			c->nr_llc_wb++;
			if (multi)
				sim_lock(lk);
			int vw = sim_llc32_find(vk, vl);

			if (vw >= 0)
				vk[vw] |= SIM_M;	/* S or M -> M: the line, its place */
			if (multi)
				sim_unlock(lk);
		} else {
			sim_llc_writeback(c, SIM_KEY_LINE(old));
		}
	}
	if (!a3 && !L) {
		out |= SIM_LEAN_MEM;
	} else {
		uint64_t victim = 0;

		if (multi)
			sim_lock(sim_llc_lock_of(L, b));
		int hw = a3 || L->k32 ? sim_llc32_ref((uint32_t *)(void *)b, line,
						      SIM_KEY(line) | SIM_S, &victim)
				      : sim_llc16_ref(b, L->keys_off, L->assoc, line,
						      SIM_KEY(line) | SIM_S, &victim);
		if (multi)
			sim_unlock(sim_llc_lock_of(L, b));
		out |= hw >= 0 ? SIM_LEAN_LLC : SIM_LEAN_MEM;
	}
	if (is_write)
		wmask = sim_lean_wmask(s, addr, size, c64);
	uint64_t key = SIM_KEY(line) | (is_write ? SIM_M : SIM_E);
	keys[v] = key;
	sim_meta_fill_priv(&l1->meta[i], wmask, cookie, is_write);
	if (tc)
		l1->meta[i].shadow = node;
	keys[assoc + v] = ++l1->clock;
	/* with the filter on, its entry from the fill's own words: the key
	 * just written, and a write's rights - M and dirty, or E, private,
	 * untracked, no L2: the silent upgrade (reloaded: ~5 instructions) */
	if (__atomic_load_n(&c->lf.on, __ATOMIC_RELAXED))
		sim_memo_lf(c, line, i, key, is_write ? 1 : MON_SIM_LF_UPGRADE, tag0, tag1);
	else
		sim_memo_insert_tag(c, line, i, 1, tag0, tag1);
	sim_core_exit(c, 0);
	return out;
}

#endif
