/*
 * sim_lean.c - the simulator's lean path (issue 24): mon_sim_access_lean,
 * the general path (sim.c: access_full, access_slow) for a solo core
 * whose geometry needs no more than an L1, an LLC and the TLBs, in one
 * function over locals. docs/simulator.md, "The lean path".
 */
#include "sim_int.h"	/* sim_lean_init; sim_lean.h */

/* Whether mon_sim_access_lean simulates s's geometry - no L2, no 3C, an
 * LRU L1, one node, an LLC of at most 16 LRU ways or none - and with
 * which associativities as constants (SIM_LEAN_FIT_*; the 8/16-way kind
 * with 64-byte lines, 4-byte words, no TLB model and sets in powers of two:
 * its shifts and set masks as well). */
static int lean_fits(const struct mon_sim *s)
{
	const struct mri_geom *g = &s->g;

	if (s->no_lean || g->l2.sz_bytes || g->three_c || g->l1d.repl != MRI_GEOM_LRU ||
	    g->nr_nodes != 1 || (s->llc && !s->llc[0].lru16))
		return SIM_LEAN_NO;
	/* the 16-way kinds take the LLC's set layout as constants */
	int llc16 = s->llc && s->llc[0].assoc == 16 && s->llc[0].stride == SIM_LLC16_STRIDE &&
		    s->llc[0].keys_off == SIM_LLC16_KEYS;
	uint64_t l1_sets = g->l1d.sz_bytes / ((uint64_t)g->l1d.assoc * g->l1d.line_bytes);

	if (llc16 && g->l1d.assoc == 8)
		return g->l1d.line_bytes == 64 && g->word_bytes == 4 && !g->tlb1.nr_entries &&
				       !(l1_sets & (l1_sets - 1)) && s->llc[0].pow2
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
	for (int o = 0; o < SIM_LEAN_NR; o++) {
		uint32_t lvl = o & 3, tlb = o >> 2;
		c->lean_cyc[o] = (lvl == SIM_LEAN_LLC ? lat->llc_hit :
				  lvl == SIM_LEAN_MEM ? lat->mem_local : lat->l1_hit) +
				 (tlb == 2 ? lat->tlb_miss : tlb == 1 ? lat->tlb2_hit : 0);
	}
}

/* One function per variant, each with the registers of its own body (as
 * one function with a switch, the three bodies shared one prologue that
 * saved every register and spilled the arguments for the largest) */
#define LEAN_VARIANT(name, a1, a3, c64)                                                        \
	static __attribute__((noinline)) int name(struct mon_sim_core *c, uintptr_t addr,  \
						  uint32_t size, int is_write, uint32_t cookie) \
	{                                                                                  \
		return sim_lean_body(c, addr, size, is_write, cookie, a1, a3, c64, 0,      \
				     c->cur_tag[0], c->cur_tag[1]);                        \
	}
LEAN_VARIANT(lean_8_16_64, 8, 16, 1)
LEAN_VARIANT(lean_8_16, 8, 16, 0)
LEAN_VARIANT(lean_12_16, 12, 16, 0)
LEAN_VARIANT(lean_any, 0, 0, 0)

int mon_sim_access_lean(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write,
			uint32_t cookie)
{
	/* the usual associativities as constants: the searches unrolled, the
	 * LLC's inline (sim_lru16_ref's call took ~90 instructions per miss,
	 * chase) */
	switch (c->lean) {
	case SIM_LEAN_FIT_8_16_64:
		return lean_8_16_64(c, addr, size, is_write, cookie);
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
