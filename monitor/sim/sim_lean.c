/*
 * sim_lean.c - the simulator's lean path (issue 24): mon_sim_access_lean,
 * the general path (sim.c: access_full, access_slow) for a solo core
 * whose geometry needs no more than an L1, an LLC and the TLBs, in one
 * function over locals. docs/simulator.md, "The lean path".
 */
#include "sim_int.h"

/* Whether mon_sim_access_lean simulates s's geometry - no L2, no 3C, an
 * LRU L1, one node, an LLC of at most 16 LRU ways or none - and with
 * which associativities as constants (SIM_LEAN_FIT_*). */
static int lean_fits(const struct mon_sim *s)
{
	const struct mri_geom *g = &s->g;

	if (s->no_lean || g->l2.sz_bytes || g->three_c || g->l1d.repl != MRI_GEOM_LRU ||
	    g->nr_nodes != 1 || (s->llc && !s->llc[0].lru16))
		return SIM_LEAN_NO;
	if (s->llc && s->llc[0].assoc == 16 && (g->l1d.assoc == 8 || g->l1d.assoc == 12))
		return g->l1d.assoc == 8 ? SIM_LEAN_FIT_8_16 : SIM_LEAN_FIT_12_16;
	return SIM_LEAN_FIT;
}

void sim_lean_init(struct mon_sim_core *c)
{
	const struct mri_geom_lat *lat = &c->sim->g.lat;

	c->lean = lean_fits(c->sim);
	for (int o = 0; o < SIM_LEAN_NR; o++) {
		uint32_t lvl = o & 3, tlb = o >> 2;
		c->lean_cyc[o] = (lvl == SIM_LEAN_LLC ? lat->llc_hit :
				  lvl == SIM_LEAN_MEM ? lat->mem_local : lat->l1_hit) +
				 (tlb == 2 ? lat->tlb_miss : tlb == 1 ? lat->tlb2_hit : 0);
	}
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
 * with the core held (sim_core_try_enter); leaves it, but on -1.
 */
static inline __attribute__((always_inline)) int lean_body(struct mon_sim_core *c, uintptr_t addr,
							   uint32_t size, int is_write,
							   uint32_t cookie, const uint32_t a1,
							   const uint32_t a3)
{
	struct mon_sim *s = c->sim;
	struct sim_cache *l1 = &c->l1;
	const uint32_t assoc = a1 ? a1 : l1->assoc;
	uint64_t line = addr >> s->l1_shift, page = addr >> s->tlb_shift;
	uint64_t base = sim_set_of(l1, line) * l1->stride;
	uint64_t *keys = l1->key + base;
	int w = a1 ? sim_find_n(keys, a1, SIM_KEY(line)) : sim_find_in(keys, assoc, line), out = 0;

	if (sim_unlikely(!c->solo || s->settle_cold) ||
	    (w >= 0 && sim_unlikely(SIM_ST(keys[w]) < SIM_E || l1->meta[base + (uint32_t)w].track)))
		return -1;
	if (page != c->memo_page) {
		struct mon_sim_events e;

		e.tlb1_miss = e.tlb_miss = 0;
		(void)sim_tlb_access(c, page, &e, 0);
		out = e.tlb_miss ? SIM_LEAN_WALK : e.tlb1_miss ? SIM_LEAN_TLB2 : 0;
	}
	if (w >= 0) {
		uint64_t i = base + (uint32_t)w;
		if (is_write)
			keys[w] |= SIM_M;	/* E -> M, silent */
		keys[assoc + (uint32_t)w] = ++l1->clock;
		l1->meta[i].cookie = cookie;
		l1->meta[i].dirty |= (uint8_t)is_write;
		sim_memo_insert(c, line, i, 0);
		sim_core_exit(c, 0);
		return out;
	}
	/* a miss: the LLC set's host lines load while the victim is chosen */
	struct sim_llc *L = s->llc;
	uint64_t *b = NULL;
	if (a3 || L) {
		b = sim_llc_set(L, line);
		sim_prefetch(b);
		sim_prefetch(b + 8);
		if (L->stride > 16)
			sim_prefetch(b + 16);
	}
	uint32_t v = a1 ? sim_lru_min_n(keys + a1, a1) : sim_lru_min(keys + assoc, assoc);
	uint64_t i = base + v, old = keys[v], wmask = 0;
	if (old && SIM_ST(old) == SIM_M)
		sim_llc_writeback(c, SIM_KEY_LINE(old));
	if (!a3 && !L) {
		out |= SIM_LEAN_MEM;
	} else {
		uint64_t victim = 0, *lk = b + L->keys_off;
		int hw = a3 ? sim_lru16_ref_n(lk, (uint8_t *)(b + 2), &b[1], a3, line,
					      SIM_KEY(line) | SIM_S, &victim, 0)
				 : sim_lru16_ref(lk, (uint8_t *)(b + 2), &b[1], L->assoc, line,
						 SIM_KEY(line) | SIM_S, &victim, 0);
		out |= hw >= 0 ? SIM_LEAN_LLC : SIM_LEAN_MEM;
	}
	if (is_write) {
		uint64_t coh_mask = (1ull << s->coh_shift) - 1;
		uint32_t w0 = (uint32_t)((addr & coh_mask) >> s->word_shift);
		uint32_t w1 = (uint32_t)(((addr + size - 1) & coh_mask) >> s->word_shift);
		wmask = (~0ull >> (63 - w1)) & (~0ull << w0);
	}
	keys[v] = SIM_KEY(line) | (is_write ? SIM_M : SIM_E);
	l1->meta[i] = (struct sim_meta){ .wpub = wmask, .cookie = cookie,
					 .dirty = (uint8_t)is_write, .priv = 1 };
	keys[assoc + v] = ++l1->clock;
	sim_memo_insert(c, line, i, 1);
	sim_core_exit(c, 0);
	return out;
}

/* One function per variant, each with the registers of its own body (as
 * one function with a switch, the three bodies shared one prologue that
 * saved every register and spilled the arguments for the largest) */
#define LEAN_VARIANT(name, a1, a3)                                                        \
	static __attribute__((noinline)) int name(struct mon_sim_core *c, uintptr_t addr,  \
						  uint32_t size, int is_write, uint32_t cookie) \
	{                                                                                  \
		return lean_body(c, addr, size, is_write, cookie, a1, a3);                 \
	}
LEAN_VARIANT(lean_8_16, 8, 16)
LEAN_VARIANT(lean_12_16, 12, 16)
LEAN_VARIANT(lean_any, 0, 0)

int mon_sim_access_lean(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write,
			uint32_t cookie)
{
	/* the usual associativities as constants: the searches unrolled, the
	 * LLC's inline (sim_lru16_ref's call took ~90 instructions per miss,
	 * chase) */
	switch (c->lean) {
	case SIM_LEAN_FIT_8_16:
		return lean_8_16(c, addr, size, is_write, cookie);
	case SIM_LEAN_FIT_12_16:
		return lean_12_16(c, addr, size, is_write, cookie);
	}
	return lean_any(c, addr, size, is_write, cookie);
}

void mon_sim_lean(struct mon_sim *s, int on)
{
	s->no_lean = !on;
}
