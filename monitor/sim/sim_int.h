/*
 * sim_int.h - internals of the cache simulator private to sim*.c: what a
 * miss calls (directory, LLC, page placement, page owners, the 3C shadow
 * and seen sets). The state and the L1 hit path are in sim_core.h, the
 * lean miss path and what it calls in sim_lean.h. The
 * modelling assumptions are in the Notes block of sim.c.
 */
#ifndef AMEBA_MON_SIM_INT_H
#define AMEBA_MON_SIM_INT_H

#include "sim_core.h"
#include "sim_lean.h"	/* the lean path and what it calls */

/* Serving level of a sub-access, for the latency model. */
enum { SIM_SRV_L1, SIM_SRV_L2, SIM_SRV_LLC, SIM_SRV_LOCAL, SIM_SRV_REMOTE, SIM_SRV_CACHE };

/* Result of a directory transaction for the coherence level. */
struct sim_fetch {
	int state;		/* SIM_S / SIM_E / SIM_M */
	int srv;		/* SIM_SRV_* */
	int coh;		/* enum mon_sim_coh */
	uint32_t dent;
	uint8_t track;
	uint8_t priv;		/* no directory entry: solo, or a private page */
	uint16_t inval_sent;
	uint16_t nr_wb;
};

/* sim_coh.c */
int sim_dir_init(struct mon_sim *s) SIM_HIDDEN;
void sim_dir_fini(struct mon_sim *s) SIM_HIDDEN;
int sim_llc_init(struct mon_sim *s) SIM_HIDDEN;
void sim_llc_fini(struct mon_sim *s) SIM_HIDDEN;
/* A miss of c at its coherence level on a line with a directory entry (not
 * solo, a shared page): the directory transaction, then the LLC or memory.
 * Private lines take sim_coh_fetch_priv. */
void sim_coh_fetch(struct mon_sim_core *c, uint64_t line, int is_write, uint64_t wmask,
		   struct sim_fetch *f, struct mon_sim_events *ev) SIM_HIDDEN;
int sim_llc_fetch(struct mon_sim_core *c, uint64_t line, struct sim_fetch *f,
		  struct mon_sim_events *ev) SIM_HIDDEN;
/* sim_coh_fetch for a line nobody else can hold (c runs solo, or the line's
 * page is private to c): no directory, E or M; inline, one call less per
 * miss (random kernel: ~30 instructions). */
static inline void sim_coh_fetch_priv(struct mon_sim_core *c, uint64_t line, int is_write,
				      struct sim_fetch *f, struct mon_sim_events *ev)
{
	f->coh = MON_SIM_COH_NONE;
	f->inval_sent = 0;
	f->nr_wb = 0;
	f->track = 0;
	f->priv = 1;
	f->state = is_write ? SIM_M : SIM_E;
	f->dent = 0;
	f->srv = sim_llc_fetch(c, line, f, ev);
}
int sim_coh_upgrade(struct mon_sim_core *c, uint64_t line, uint64_t wmask,
		    struct sim_fetch *f, struct mon_sim_events *ev) SIM_HIDDEN;
/* c's coherence level dropped a line with a directory entry (the caller
 * writes back a private line itself: sim_llc_writeback). */
void sim_coh_evict(struct mon_sim_core *c, uint64_t line, int valid, int dirty, uint32_t cookie,
		   struct mon_sim_events *ev) SIM_HIDDEN;
void sim_coh_publish(struct mon_sim_core *c, uint32_t dent, uint64_t bits, int first_write) SIM_HIDDEN;
void sim_drain(struct mon_sim_core *c, struct mon_sim_events *ev) SIM_HIDDEN;
int sim_drain_locked(struct mon_sim_core *c, uint64_t line, struct mon_sim_events *ev) SIM_HIDDEN;
void sim_resync(struct mon_sim_core *c, struct mon_sim_events *ev) SIM_HIDDEN;
int sim_dir_verify(struct mon_sim *s, char *err, size_t errlen) SIM_HIDDEN;
void sim_dir_register(struct mon_sim_core *c) SIM_HIDDEN;
int sim_owners_init(struct mon_sim *s) SIM_HIDDEN;
void sim_owners_fini(struct mon_sim *s) SIM_HIDDEN;
uint64_t *sim_own_slot(struct mon_sim *s, uint64_t page, uint32_t id) SIM_HIDDEN;
/* sim.c: MULTI mode, the owner table's word on page for c, without making
 * another core's page shared: 1 private to c (claimed when nobody had it),
 * 0 shared, -1 another core's (sim_page_private shares it); c's memo of
 * the table updated (c held) */
int sim_page_owned(struct mon_sim_core *c, uint64_t page) SIM_HIDDEN;
void sim_dir_register_page(struct mon_sim_core *c, uint64_t page) SIM_HIDDEN;
/* The entry of page in a core's memo of the owner table (own_page): the
 * low bits, so that pages near each other never collide (a multiplicative
 * hash put dense_2t's three arrays, 2050 pages apart, in one entry), plus
 * 5 per 2 MiB region, so that arrays some MiB apart do not either: with
 * the low bits alone, stencil_2t's v[i] page (2050 pages after u[i]) and
 * u[i + 1]'s took one entry in turn at any memo size, and half of its
 * misses looked the owner table up (800 K of 1.58 M). */
static inline uint32_t sim_own_memo_of(uint64_t page)
{
	return (uint32_t)(page + (page >> 9) * 5) & (SIM_OWN_MEMO - 1);
}

/* The owner table's page of coherence line `line` */
static inline uint64_t sim_own_page(const struct mon_sim *s, uint64_t line)
{
	return s->page_shift >= s->coh_shift ? line >> (s->page_shift - s->coh_shift) : line;
}

static inline int sim_ring_ready(const struct sim_ring *r)
{
	const struct sim_ring_slot *sl = &r->slot[r->head & (SIM_RING_CAP - 1)];
	return __atomic_load_n(&sl->seq, __ATOMIC_ACQUIRE) == r->head + 1;
}

/* sim.c: applying messages to a core's private caches */
void sim_apply_inv(struct mon_sim_core *c, uint64_t line, struct mon_sim_events *ev) SIM_HIDDEN;
void sim_apply_down(struct mon_sim_core *c, uint64_t line) SIM_HIDDEN;
void sim_drop_line(struct mon_sim_core *c, uint64_t line) SIM_HIDDEN;
void sim_record_recv(struct mon_sim_core *c, uint64_t line, uint32_t cookie) SIM_HIDDEN;

/* sim_mem.c: pages, 3C */
int sim_pages_init(struct sim_pages *p) SIM_HIDDEN;
void sim_pages_fini(struct sim_pages *p) SIM_HIDDEN;
/* Home node of the page (placing it on first touch by core c). */
uint32_t sim_page_home(struct mon_sim *s, struct mon_sim_core *c, uint64_t page) SIM_HIDDEN;
int sim_page_lookup(struct mon_sim *s, uint64_t page, struct mon_sim_page *out) SIM_HIDDEN;

int sim_shadow_init(struct sim_shadow *sh, uint32_t cap) SIM_HIDDEN;
void sim_shadow_fini(struct sim_shadow *sh) SIM_HIDDEN;
void sim_shadow_remove(struct sim_shadow *sh, uint64_t line) SIM_HIDDEN;

int sim_seen_init(struct sim_seen *sn, uint32_t line_shift) SIM_HIDDEN;
void sim_seen_fini(struct sim_seen *sn) SIM_HIDDEN;
/* Marks line seen; returns 1 when it was not seen before, 0 when it was,
 * -1 when the set is full (unknown). */
int sim_seen_insert(struct sim_seen *sn, uint64_t line, uint32_t line_shift) SIM_HIDDEN;

static inline uint64_t sim_hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static inline uint32_t sim_log2(uint64_t x)
{
	return 63 - (uint32_t)__builtin_clzll(x);
}

/* c->lean and c->lean_cyc from the geometry (sim_lean.c) */
void sim_lean_init(struct mon_sim_core *c) SIM_HIDDEN;

#endif
