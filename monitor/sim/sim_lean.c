/*
 * sim_lean.c - the simulator's lean path (issue 24): mon_sim_access_lean,
 * the general path (sim.c: access_full, access_slow) for a solo core
 * whose geometry needs no more than an L1, an LLC and the TLBs, in one
 * function over locals. docs/simulator.md, "The lean path".
 */
#include "sim_int.h"	/* sim_lean_init; sim_lean.h */

/* Whether mon_sim_access_lean simulates s's geometry - an LRU L1, one
 * node, an LLC of at most 16 LRU ways or none, and no L2 or an LRU one of
 * the L1's line (SIM_LEAN_FIT_L2) - and with which associativities as
 * constants (SIM_LEAN_FIT_*; the 8/16-way kind with 64-byte lines, 4-byte
 * words, no TLB model, no 3C and sets in powers of two: its shifts and set
 * masks as well). */
static int lean_fits(const struct mon_sim *s)
{
	const struct mri_geom *g = &s->g;

	if (s->no_lean || g->l1d.repl != MRI_GEOM_LRU || g->nr_nodes != 1 ||
	    (s->llc && !s->llc[0].lru16))
		return SIM_LEAN_NO;
	/* the 16-way kinds take the LLC's set layout as constants */
	int llc16 = s->llc && s->llc[0].k32 && s->llc[0].stride == SIM_LLC16_STRIDE &&
		    s->llc[0].keys_off == SIM_LLC16_KEYS;
	if (g->l2.sz_bytes) {
		if (g->l2.repl != MRI_GEOM_LRU || g->l2.line_bytes != g->l1d.line_bytes)
			return SIM_LEAN_NO;
		return llc16 && g->l1d.assoc == 8 && g->l2.assoc == 8 ? SIM_LEAN_FIT_8_8_16_L2
								      : SIM_LEAN_FIT_L2;
	}
	uint64_t l1_sets = g->l1d.sz_bytes / ((uint64_t)g->l1d.assoc * g->l1d.line_bytes);

	if (llc16 && g->l1d.assoc == 8)
		return g->l1d.line_bytes == 64 && g->word_bytes == 4 && !g->tlb1.nr_entries &&
				       !g->three_c && !(l1_sets & (l1_sets - 1)) && s->llc[0].pow2
			       ? SIM_LEAN_FIT_8_16_64
			       : SIM_LEAN_FIT_8_16;
	if (llc16 && g->l1d.assoc == 12)
		return SIM_LEAN_FIT_12_16;
	return SIM_LEAN_FIT;
}

void sim_lean_init(struct mon_sim_core *c)
{
	const struct mri_geom_lat *lat = &c->sim->g.lat;

	c->lean = lean_fits(c->sim);
	for (int o = 0; o < SIM_LEAN_NR; o++) {	/* (not by 3C class: o & SIM_LEAN_CYC) */
		uint32_t lvl = o & 3, tlb = o >> 2;
		c->lean_cyc[o] = (lvl == SIM_LEAN_LLC ? lat->llc_hit :
				  lvl == SIM_LEAN_MEM ? lat->mem_local :
				  lvl == SIM_LEAN_L2  ? lat->l2_hit : lat->l1_hit) +
				 (tlb == 2 ? lat->tlb_miss : tlb == 1 ? lat->tlb2_hit : 0);
	}
}

/* One function per variant, each with the registers of its own body (as
 * one function with a switch, the three bodies shared one prologue that
 * saved every register and spilled the arguments for the largest) */
#define LEAN_VARIANT(kind, name, a1, a3, c64, l2)                                         \
	static __attribute__((noinline)) int lean_##name(struct mon_sim_core *c,           \
							 uintptr_t addr, uint32_t size,    \
							 int is_write, uint32_t cookie)    \
	{                                                                                  \
		return sim_lean_body(c, addr, size, is_write, cookie, a1, a3, c64, l2, 0,  \
				     c->cur_tag[0], c->cur_tag[1], 0);                     \
	}
SIM_LEAN_KINDS(LEAN_VARIANT)
#undef LEAN_VARIANT

int mon_sim_access_lean(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write,
			uint32_t cookie)
{
	/* the usual associativities as constants: the searches unrolled, the
	 * LLC's inline (sim_lru16_ref's call took ~90 instructions per miss,
	 * chase) */
	switch (c->lean) {
#define LEAN_CASE(kind, name, ...) \
	case kind:                 \
		return lean_##name(c, addr, size, is_write, cookie);
		SIM_LEAN_KINDS(LEAN_CASE)
#undef LEAN_CASE
	}
	return -1;	/* SIM_LEAN_NO: the general path's, nothing changed */
}

/*
 * The ordered mode's merger (issue 24): the lean path for a core that need
 * not be solo, in the filter's geometry (SIM_LEAN_FIT_8_16_64). The core
 * entered without its lock (as the line entries do), no mail pending, and
 * on an L1 miss the line's page private to the core: by its memo of the
 * owner table, else by the table (sim_page_owned: what the general path's
 * miss asks first, and claims a page nobody had). sim_lean_body then takes
 * what needs no directory, and the merger's filter gets the line's entry;
 * -1, having changed nothing the general path would not change the same,
 * for the rest.
 */
int mon_sim_access_lean_coh(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write,
			    uint32_t cookie)
{
	int coh = SIM_LEAN_COH, o;

	if (c->lean != SIM_LEAN_FIT_8_16_64 || !size || (addr & 63) + size > 64 ||
	    !sim_core_try_enter(c))
		return -1;
	if (!c->solo) {
		/* c64: the coherence line is the L1's */
		uint64_t line = addr >> 6, page = sim_own_page(c->sim, line);
		uint32_t m = sim_own_memo_of(page);

		if (__atomic_load_n(&c->mail, __ATOMIC_RELAXED)) {
			sim_core_exit(c, 0);
			return -1;
		}
		if (c->own_page[m] == page + 1) {
			coh |= c->own_priv[m] ? SIM_LEAN_COH_PRIV : 0;
		} else {
			const uint64_t *keys = c->l1.key + (line & c->l1.set_mask) * 16;
			int w = sim_find_n(keys, 8, SIM_KEY(line));

			/* the general path looks the page up on a miss only */
			if ((w < 0 || SIM_ST(keys[w]) == SIM_I) && sim_page_owned(c, page) == 1)
				coh |= SIM_LEAN_COH_PRIV;
		}
	}
	o = sim_lean_body(c, addr, size, is_write, cookie, 8, 16, 1, 0, 0, 0, 0, coh);
	if (o < 0) {
		sim_core_exit(c, 0);
		return o;
	}
	/* the merger's filter entry (sim_mf_note's), from the key index the
	 * body remembered (sim_memo_insert, the line filter off) */
	uint64_t line = addr >> 6;

	if (c->mf && c->last_line == line)
		sim_mf_put(c, line, c->last_i);
	else
		sim_mf_note(c, addr, size);
	return o;
}

void mon_sim_lean(struct mon_sim *s, int on)
{
	s->no_lean = !on;
}
