/*
 * sim_test.c - unit tests of the cache simulator on synthetic traces with
 * hand-computed counts. Single-threaded (several simulated cores driven in
 * turn), so every count is deterministic.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "sim.h"
#include "sim_int.h"	/* sim_lru16_ref, sim_mru_ref */

#define BASE ((uintptr_t)0x40000000)	/* 1 GiB: page and line aligned */
#define LINE 64

static const struct mri_geom_lat test_lat = {
	.l1_hit = 2, .l2_hit = 10, .llc_hit = 30, .mem_local = 100, .mem_remote = 200,
	.intervention = 150, .inval = 50, .tlb2_hit = 5, .tlb_miss = 20,
};

/* A small machine: L1 only (no L2, no LLC), big fully associative TLB. */
static struct mri_geom small_geom(uint64_t l1_size, uint32_t assoc)
{
	struct mri_geom g;

	memset(&g, 0, sizeof(g));
	snprintf(g.name, sizeof(g.name), "test");
	g.l1d = (struct mri_geom_cache){ l1_size, assoc, LINE, MRI_GEOM_LRU };
	g.l2 = (struct mri_geom_cache){ 0, 1, LINE, MRI_GEOM_LRU };
	g.llc = (struct mri_geom_cache){ 0, 1, LINE, MRI_GEOM_LRU };
	g.tlb1 = (struct mri_geom_tlb){ 64, 64 };
	g.tlb2 = (struct mri_geom_tlb){ 0, 1 };
	g.tlb_page_bytes = 4096;
	g.page_bytes = 4096;
	g.nr_cores = 4;
	g.nr_nodes = 1;
	g.core_map = MRI_GEOM_MAP_RR;
	g.cores_per_node = 1;
	g.placement = MRI_GEOM_FIRST_TOUCH;
	g.word_bytes = 4;
	g.three_c = 1;
	g.lat = test_lat;
	return g;
}

static struct mon_sim *new_sim(const struct mri_geom *g)
{
	char err[256];
	int r = mri_geom_check(g, err, sizeof(err));
	if (r) {
		fprintf(stderr, "geometry rejected: %s\n", err);
		exit(2);
	}
	struct mon_sim *s = mon_sim_new(g);
	if (!s) {
		fprintf(stderr, "mon_sim_new failed\n");
		exit(2);
	}
	return s;
}

static void verify(struct mon_sim *s, int line)
{
	char err[256] = "";
	for (uint32_t i = 0; i < mon_sim_geom_of(s)->nr_cores; i++) {
		struct mon_sim_core *c = mon_sim_core_get(s, i, i);
		struct mon_sim_events ev;
		mon_sim_core_sync(c, &ev);
	}
	int r = mon_sim_verify(s, err, sizeof(err));
	if (r)
		fprintf(stderr, "%s:%d: verify: %s\n", __FILE__, line, err);
	CHECK_AT(line, r == 0);
}

/* ---- LRU eviction order: one set of 4 ways ---- */
static void test_lru_order(void)
{
	struct mri_geom g = small_geom(4 * LINE, 4);
	struct mon_sim *s = new_sim(&g);
	struct mon_sim_core *c = mon_sim_core_get(s, 0, 0);
	/* A..E are lines 0..4, all in set 0. LRU stack after each access in the comment. */
	static const struct { int line, miss, l; } rows[] = {
		{ 0, 1, __LINE__ },	/* A          */
		{ 1, 1, __LINE__ },	/* B A        */
		{ 2, 1, __LINE__ },	/* C B A      */
		{ 3, 1, __LINE__ },	/* D C B A    */
		{ 0, 0, __LINE__ },	/* A D C B    */
		{ 4, 1, __LINE__ },	/* E A D C    (B out) */
		{ 1, 1, __LINE__ },	/* B E A D    (C out) */
		{ 2, 1, __LINE__ },	/* C B E A    (D out) */
		{ 0, 0, __LINE__ },	/* A C B E    */
		{ 3, 1, __LINE__ },	/* D A C B    (E out) */
		{ 4, 1, __LINE__ },	/* E D A C    (B out) */
		{ 2, 0, __LINE__ },	/* C E D A    */
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mon_sim_events ev;
		mon_sim_access(c, BASE + (uintptr_t)rows[i].line * LINE, 8, 0, 1, &ev);
		CHECK_AT(rows[i].l, ev.l1_miss == rows[i].miss);
	}
	mon_sim_destroy(s);
}

/* ---- the way search (sim_find_n): lines whose keys share their low half
 * (2^30 lines apart) in set 0 of two sets of 4, 8 and 16 ways; set 1's
 * lines in between, so that none is found among the remembered lines
 * (sim_l0) ---- */
static void test_find_far_lines(void)
{
	static const uint32_t assocs[] = { 4, 8, 16 };
	const uintptr_t far = (uintptr_t)1 << 36;	/* 2^30 lines of 64 bytes */

	for (size_t a = 0; a < sizeof(assocs) / sizeof(assocs[0]); a++) {
		uint32_t n = assocs[a];
		struct mri_geom g = small_geom(2 * (uint64_t)n * LINE, n);
		struct mon_sim *s = new_sim(&g);
		struct mon_sim_core *c = mon_sim_core_get(s, 0, 0);
		struct mon_sim_events ev;
		uint64_t misses = 0, hits = 0;

		for (uint32_t k = 0; k < n; k++) {	/* every way a candidate */
			mon_sim_access(c, BASE + k * far, 8, 0, 0, &ev);
			misses += ev.l1_miss;
		}
		for (uint32_t k = 0; k < 8; k++)	/* the remembered lines: set 1's */
			mon_sim_access(c, BASE + (2 * k + 1) * LINE, 8, 0, 0, &ev);
		for (uint32_t k = n; k-- > 0;) {	/* each found past the others */
			mon_sim_access(c, BASE + k * far + 8, 8, k & 1, 0, &ev);
			hits += !ev.l1_miss;
		}
		CHECK_EQ_U64(misses, n);
		CHECK_EQ_U64(hits, n);
		mon_sim_access(c, BASE + n * far, 8, 0, 0, &ev);	/* a candidate in every way, none its */
		CHECK_EQ_U64(ev.l1_miss, 1);
		verify(s, __LINE__);
		mon_sim_destroy(s);
	}
}

/* sim_lru_min8 (SSE2, stamps below 2^31) against the scalar search, on
 * random stamps with ties (0 empty, 1 invalidated, repeats): the
 * lowest-numbered minimum. */
static void test_lru_min8(void)
{
	uint64_t r = 0x9E3779B97F4A7C15ull, st[8];
	uint32_t bad = 0;

	for (int i = 0; i < 200000; i++) {
		for (int w = 0; w < 8; w++) {
			r ^= r << 13, r ^= r >> 7, r ^= r << 17;
			/* small ranges make ties; large ones reach 2^31 - 1 */
			st[w] = i & 1 ? r % 4 : r % ((1ull << 31) - (i & 2 ? 0 : 1ull << 30));
		}
		bad += sim_lru_min8(st) != sim_lru_min_n(st, 8);
	}
	CHECK_EQ_U64(bad, 0);
	for (int w = 0; w < 8; w++)
		st[w] = 2 + (uint64_t)w;
	CHECK_EQ_U64(sim_lru_min8(st), 0);
	st[5] = 1;
	CHECK_EQ_U64(sim_lru_min8(st), 5);	/* invalidated before valid */
	st[7] = 0;
	CHECK_EQ_U64(sim_lru_min8(st), 7);	/* empty before invalidated */
}

/* The line filter's entries (sim.h): the hooks' offset from an address is
 * its line's entry, and no two adjacent lines share one - at every carry
 * into bit 16 of the line (where a xor of the line's 4 MiB up made line
 * 0x7f_ffff and 0x80_0000 share theirs), and over random lines */
static void test_lf_slot(void)
{
	uint64_t r = 0x2545F4914F6CDD1Dull, bad_off = 0, bad_adj = 0;

	for (uint64_t k = 0; k < (1u << 16); k++) {
		uint64_t line = (k << 16) | 0xffff;	/* line + 1 carries into bit 16 */

		bad_adj += mon_sim_lf_slot(line) == mon_sim_lf_slot(line + 1);
	}
	for (int i = 0; i < 1000000; i++) {
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		uint64_t addr = r >> 17, line = addr >> 6;	/* user addresses */

		bad_off += mon_sim_lf_slot_off(addr) != mon_sim_lf_slot(line) * 64;
		bad_adj += mon_sim_lf_slot(line) == mon_sim_lf_slot(line + 1);
	}
	CHECK_EQ_U64(bad_off, 0);
	CHECK_EQ_U64(bad_adj, 0);
	/* the 4 MiB-apart arrays still spread: line bit 16 moves the entry */
	CHECK(mon_sim_lf_slot(0x10000) != mon_sim_lf_slot(0));
	CHECK_EQ_U64(mon_sim_lf_slot(0x7fffff), 0x7e);	/* 0xff + 0x7f */
	CHECK_EQ_U64(mon_sim_lf_slot(0x800000), 0x80);	/* 0x00 + 0x80 */
}

/* The lean path with the L1's stamps renumbered every 61 accesses against
 * one that never renumbers: the same outcome for every access of a random
 * mix over 4 times the L1 (reads, writes, a hot part), the same L1
 * contents after; and the renumbering did run. */
static void test_lean_renumber(void)
{
	struct mri_geom g = small_geom(32 * 1024, 8);
	struct mon_sim *s[2];
	struct mon_sim_core *c[2];
	uint64_t r = 12345, diff = 0, lean = 0, renumbered = 0;

	g.llc = (struct mri_geom_cache){ 4096 * 1024, 16, LINE, MRI_GEOM_LRU };	/* k32 */
	g.three_c = 0;
	g.nr_cores = 1;
	for (int k = 0; k < 2; k++) {
		s[k] = new_sim(&g);
		c[k] = mon_sim_core_get(s[k], 0, 0);
		CHECK(c[k]->lean == SIM_LEAN_FIT_8_16 || !sim_low_addresses());
	}
	for (int i = 0; i < 400000; i++) {
		int o[2];

		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		uintptr_t a = BASE + (r % 4 ? r % (16 * 1024) : r % (128 * 1024)) / 8 * 8;
		int wr = (r >> 40) % 3 == 0;

		for (int k = 0; k < 2; k++) {
			uint64_t before = c[k]->l1.clock;

			sim_stamp_renumber_at = k ? SIM_STAMP_RENUMBER : 61;
			CHECK(sim_core_try_enter(c[k]));
			o[k] = mon_sim_access_lean(c[k], a, 8, wr, 7);
			if (o[k] < 0) {
				struct mon_sim_events ev;
				o[k] = 100 + mon_sim_access_held(c[k], a, 8, wr, 7, &ev);
			}
			renumbered += !k && c[k]->l1.clock < before;
		}
		lean += o[0] < 100;
		diff += o[0] != o[1];
	}
	sim_stamp_renumber_at = SIM_STAMP_RENUMBER;
	CHECK_EQ_U64(diff, 0);
	CHECK(lean > 390000);
	CHECK(renumbered > 1000);
	/* the same lines in the same ways, and the same victim order */
	for (uint64_t i = 0; i < c[0]->l1.nr_sets * c[0]->l1.stride; i += c[0]->l1.stride) {
		CHECK_AT(__LINE__, !memcmp(c[0]->l1.key + i, c[1]->l1.key + i, 8 * sizeof(uint64_t)));
		CHECK_AT(__LINE__, sim_lru_min_n(c[0]->l1.key + i + 8, 8) ==
					   sim_lru_min_n(c[1]->l1.key + i + 8, 8));
	}
	for (int k = 0; k < 2; k++) {
		verify(s[k], __LINE__);
		mon_sim_destroy(s[k]);
	}
}

/* The lean path with an L2 (SIM_LEAN_FIT_L2, and FIT_8_8_16_L2 with its
 * associativities as constants) against the general path alone: a random
 * mix of reads and writes over 6 times the L2 (a hot part), the TLB model
 * on; an L2 of 2 or 4 times the L1, so that its victims are often still
 * in the L1 (inclusion drops them). Every access: the same level and TLB
 * part (the general path's events, as count_lean reads them) and cycles;
 * after, the same keys in the L1, the L2 and the LLC, and the same victim
 * of every L1 and L2 set. With the 8-way kind the L1's and L2's stamps are
 * renumbered every 61 accesses on the lean side, which must change none
 * of it. With 3C (two of the geometries, and one without an L2), every
 * miss's class as well (the outcome's bits 4-5, the events' cls3c), and
 * some of each class. */
static void test_lean_l2(void)
{
	/* the 16-way kinds need a k32 LLC: 4,096 sets (4 MiB); 1 MiB of 16
	 * ways keeps 64-bit keys */
	static const struct { uint32_t l1a, l2kib, l2a, llca, llckib, kind, tc; } geo[] = {
		{ 8, 64, 4, 16, 1024, SIM_LEAN_FIT_L2, 0 },
		{ 4, 128, 8, 8, 1024, SIM_LEAN_FIT_L2, 0 },
		{ 8, 64, 8, 16, 4096, SIM_LEAN_FIT_8_8_16_L2, 0 },
		{ 8, 64, 8, 16, 1024, SIM_LEAN_FIT_L2, 0 },
		{ 4, 128, 8, 8, 1024, SIM_LEAN_FIT_L2, 1 },
		{ 8, 64, 8, 16, 4096, SIM_LEAN_FIT_8_8_16_L2, 1 },
		{ 8, 0, 0, 16, 4096, SIM_LEAN_FIT_8_16, 1 },
		{ 8, 0, 0, 16, 1024, SIM_LEAN_FIT, 1 },
	};

	for (unsigned gi = 0; gi < sizeof(geo) / sizeof(geo[0]); gi++) {
		struct mri_geom g = small_geom(32 * 1024, geo[gi].l1a);
		struct mon_sim *s[2];
		struct mon_sim_core *c[2];
		uint64_t r = 777 + gi, diff = 0, lean = 0, l2_hits = 0, renumbered = 0, cls[4] = { 0 };
		const int renumber = geo[gi].kind == SIM_LEAN_FIT_8_8_16_L2;

		if (geo[gi].l2kib)
			g.l2 = (struct mri_geom_cache){ geo[gi].l2kib * 1024, geo[gi].l2a, LINE,
							MRI_GEOM_LRU };
		g.llc = (struct mri_geom_cache){ geo[gi].llckib * 1024, geo[gi].llca, LINE,
						 MRI_GEOM_LRU };
		g.three_c = (int)geo[gi].tc;
		g.nr_cores = 1;
		for (int k = 0; k < 2; k++) {
			s[k] = new_sim(&g);
			if (k)
				mon_sim_lean(s[k], 0);
			c[k] = mon_sim_core_get(s[k], 0, 0);
		}
		/* (where an address may reach 2^47, no LLC is k32) */
		CHECK_AT(__LINE__, c[0]->lean == (int)geo[gi].kind || !sim_low_addresses());
		CHECK_AT(__LINE__, s[0]->llc[0].k32 == (geo[gi].llckib == 4096 && sim_low_addresses()));
		CHECK_AT(__LINE__, c[1]->lean == SIM_LEAN_NO);
		for (int i = 0; i < 300000; i++) {
			const uint64_t span = (geo[gi].l2kib ? geo[gi].l2kib : 64) * 1024 * 6;
			int o[2];
			uint32_t cyc[2];

			r ^= r << 13, r ^= r >> 7, r ^= r << 17;
			uintptr_t a = BASE + (r % 4 ? r % (16 * 1024) : r % span) / 8 * 8;
			int wr = (r >> 40) % 3 == 0;
			struct mon_sim_events ev;
			uint64_t before = c[0]->l1.clock + c[0]->l2.clock;

			sim_stamp_renumber_at = renumber ? 61 : SIM_STAMP_RENUMBER;
			CHECK(sim_core_try_enter(c[0]));
			o[0] = mon_sim_access_lean(c[0], a, 8, wr, 7);
			sim_stamp_renumber_at = SIM_STAMP_RENUMBER;
			if (o[0] >= 0) {
				lean++;
				cyc[0] = c[0]->lean_cyc[o[0] & SIM_LEAN_CYC];
			} else {
				mon_sim_access_held(c[0], a, 8, wr, 7, &ev);
				cyc[0] = ev.est_cycles;
				o[0] = 100;	/* the general path on both sides: */
			}
			renumbered += c[0]->l1.clock + c[0]->l2.clock < before;
			CHECK(sim_core_try_enter(c[1]));
			mon_sim_access_held(c[1], a, 8, wr, 7, &ev);
			cyc[1] = ev.est_cycles;
			o[1] = (!ev.l1_miss ? SIM_LEAN_L1
				: !ev.l2_miss ? SIM_LEAN_L2
				: ev.llc_miss ? SIM_LEAN_MEM
					      : SIM_LEAN_LLC) |
			       (ev.tlb_miss ? SIM_LEAN_WALK : ev.tlb1_miss ? SIM_LEAN_TLB2 : 0) |
			       ev.cls3c << SIM_LEAN_3C_SHIFT;
			cls[ev.cls3c & 3]++;
			if (o[0] == 100)
				o[0] = o[1];	/* its events are the general path's */
			l2_hits += (o[1] & 3) == SIM_LEAN_L2;
			diff += o[0] != o[1] || cyc[0] != cyc[1];
		}
		CHECK_EQ_U64(diff, 0);
		CHECK_AT(__LINE__, lean > 290000);
		CHECK_AT(__LINE__, !geo[gi].l2kib || l2_hits > 1000);
		CHECK_AT(__LINE__, !renumber || renumbered > 1000);
		for (int k = 1; k < 4; k++)
			CHECK_AT(__LINE__, geo[gi].tc ? cls[k] > 100 : !cls[k]);
		for (int lvl = 0; lvl < 1 + !!geo[gi].l2kib; lvl++) {
			const struct sim_cache *k0 = lvl ? &c[0]->l2 : &c[0]->l1;
			const struct sim_cache *k1 = lvl ? &c[1]->l2 : &c[1]->l1;

			for (uint64_t i = 0; i < k0->nr_sets * k0->stride; i += k0->stride) {
				CHECK_AT(__LINE__, !memcmp(k0->key + i, k1->key + i,
							   k0->assoc * sizeof(uint64_t)));
				CHECK_AT(__LINE__, sim_lru_min_n(k0->key + i + k0->assoc, k0->assoc) ==
							   sim_lru_min_n(k1->key + i + k1->assoc, k1->assoc));
			}
		}
		for (uint64_t set = 0; set < s[0]->llc[0].nr_sets; set++) {
			const uint64_t *b0 = sim_llc_set(&s[0]->llc[0], set);
			const uint64_t *b1 = sim_llc_set(&s[1]->llc[0], set);

			CHECK_AT(__LINE__, !memcmp(b0, b1, s[0]->llc[0].stride * sizeof(uint64_t)));
		}
		for (int k = 0; k < 2; k++) {
			verify(s[k], __LINE__);
			mon_sim_destroy(s[k]);
		}
	}
}

/* The merger's lean path (mon_sim_access_lean_coh) against the general
 * path alone: three cores in MULTI mode from the start, each with a
 * private region (a hot part and four times the L1), a region all of them
 * share, and the first pages of each other's regions (which become shared
 * pages). Every access: the same events and cycles; where the lean path
 * took it, none that needs a directory; after, the same lines in the same
 * ways of every L1, the same victims, the same LLC, and both simulators
 * consistent. mf: the merger's filter before them (its writes to tracked
 * lines whose words are published among its hits), as the merger has it. */
static void test_lean_coh(int mf)
{
	struct mri_geom g = small_geom(32 * 1024, 8);
	struct mon_sim *s[2];
	struct mon_sim_core *c[2][3];
	uint64_t r = 99991, diff = 0, lean = 0, lean_miss = 0, dir = 0, tot_miss = 0;
	uint64_t mf_hits = 0, mf_tracked = 0;

	g.llc = (struct mri_geom_cache){ 4096 * 1024, 16, LINE, MRI_GEOM_LRU };	/* k32 */
	g.three_c = 0;
	g.nr_cores = 3;
	g.tlb1.nr_entries = g.tlb2.nr_entries = 0;
	for (int k = 0; k < 2; k++) {
		s[k] = new_sim(&g);
		for (uint32_t i = 0; i < 3; i++)
			c[k][i] = mon_sim_core_get(s[k], i, i);
		CHECK(c[k][0]->lean == SIM_LEAN_FIT_8_16_64 || !sim_low_addresses());
	}
	for (int n = 0; n < 300000; n++) {
		struct mon_sim_events ev[2];
		int o;

		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		uint32_t i = (uint32_t)(r >> 60) % 3, kind = (uint32_t)(r >> 50) % 20;
		uintptr_t a = BASE + (uintptr_t)i * (8u << 20) +
			      (r % 4 ? r % (8 * 1024) : r % (64 * 1024)) / 4 * 4;
		if (kind == 0)	/* the region all share */
			a = BASE + (32u << 20) + r % (16 * 1024) / 4 * 4;
		else if (kind == 1)	/* another core's first pages */
			a = BASE + (uintptr_t)((i + 1) % 3) * (8u << 20) + r % (4 * 4096) / 4 * 4;
		uint32_t sz = (r >> 20) % 4 ? 8 : 4;
		int wr = (r >> 40) % 3 == 0;

		if (a % LINE + sz > LINE)
			a -= 4;
		mon_sim_access(c[0][i], a, sz, wr, 7, &ev[0]);
		/* mf: the merger's order (seq_merge.c, backend_sim.c
		 * mon_sim_seq_access): its filter, then the remembered lines,
		 * the lean path, the general one, each writing the filter's
		 * entry; a write to a tracked line through the filter is one
		 * whose words are all published */
		struct sim_mf_run run;
		struct mon_sim_core *m = c[1][i];
		int tracked = 0;

		if (mf && m->mf) {
			uint64_t line = a >> 6;
			const struct sim_mf_ent *e = &m->mf[sim_mf_slot(line)];

			tracked = wr && e->line == line && m->l1.meta[e->i].track;
		}
		if (mf && m->mf && sim_mf_hold(m, &run)) {
			int h = sim_mf_hit_run(&run, a, sz, wr, 7);

			sim_mf_unhold(m, &run, (uint64_t)h);
			if (h) {
				ev[1] = (struct mon_sim_events){ .est_cycles = m->l1_hit_cycles };
				mf_hits++;
				mf_tracked += (uint64_t)tracked;
				goto compare;
			}
		}
		if (sim_hit(c[1][i], a, sz, wr, 7, NULL)) {
			ev[1] = (struct mon_sim_events){ .est_cycles = c[1][i]->l1_hit_cycles };
			if (mf)
				sim_mf_note(m, a, sz);
		} else if ((o = mon_sim_access_lean_coh(c[1][i], a, sz, wr, 7)) >= 0) {
			ev[1] = (struct mon_sim_events){ .l1_miss = (o & 3) != 0,
							 .llc_miss = (o & 3) == SIM_LEAN_MEM,
							 .est_cycles = c[1][i]->lean_cyc[o] };
			lean++;
			lean_miss += (o & 3) != 0;
			dir += ev[0].inval_sent || ev[0].inval_recv || ev[0].intervention ||
			       ev[0].coh || ev[0].mem_remote;
		} else {
			mon_sim_access_rest(c[1][i], a, sz, wr, 7, &ev[1]);
			if (mf)
				sim_mf_note(m, a, sz);
		}
compare:
		tot_miss += ev[0].l1_miss;
		diff += ev[0].l1_miss != ev[1].l1_miss || ev[0].llc_miss != ev[1].llc_miss ||
			ev[0].est_cycles != ev[1].est_cycles;
	}
	CHECK_EQ_U64(diff, 0);
	CHECK_EQ_U64(dir, 0);
	CHECK(lean > (mf ? 10000 : 100000));
	CHECK(lean_miss > tot_miss / 8);	/* 13,374 of 69,063 */
	if (mf)
		printf("test_lean_coh: the merger's filter took %llu, %llu of them writes to tracked lines\n",
		       (unsigned long long)mf_hits, (unsigned long long)mf_tracked);
	CHECK(!mf || (mf_hits > 100000 && mf_tracked > 100));
	for (uint32_t i = 0; i < 3; i++) {
		const struct sim_cache *l0 = &c[0][i]->l1, *l1 = &c[1][i]->l1;

		for (uint64_t j = 0; j < l0->nr_sets * l0->stride; j += l0->stride) {
			CHECK_AT(__LINE__, !memcmp(l0->key + j, l1->key + j, 8 * sizeof(uint64_t)));
			CHECK_AT(__LINE__, sim_lru_min_n(l0->key + j + 8, 8) ==
						   sim_lru_min_n(l1->key + j + 8, 8));
			for (uint64_t w = j; w < j + 8; w++) {
				const struct sim_meta *m0 = &l0->meta[w], *m1 = &l1->meta[w];

				CHECK_AT(__LINE__, !l0->key[w] ||
					 (m0->wpub == m1->wpub && m0->cookie == m1->cookie &&
					  m0->dent == m1->dent && m0->dirty == m1->dirty &&
					  m0->track == m1->track && m0->priv == m1->priv));
			}
		}
	}
	const struct sim_llc *L0 = &s[0]->llc[0], *L1 = &s[1]->llc[0];
	for (uint64_t j = 0; j < L0->nr_sets; j++) {
		const uint64_t *b0 = L0->blk + j * L0->stride, *b1 = L1->blk + j * L1->stride;

		/* a k32 set's keys in order of recency: the same order */
		CHECK_AT(__LINE__, !memcmp(b0 + L0->keys_off, b1 + L1->keys_off, L0->k32 ? 16 * 4 : 16 * 8));
		CHECK_AT(__LINE__, L0->k32 ||
					   sim_llc16_min_n(sim_llc16_stamps((uint64_t *)b0, 16), 16) ==
						   sim_llc16_min_n(sim_llc16_stamps((uint64_t *)b1, 16), 16));
	}
	for (int k = 0; k < 2; k++) {
		verify(s[k], __LINE__);
		mon_sim_destroy(s[k]);
	}
}

/* ---- the LLC / L2 TLB set: fingerprints and a nibble order word ---- */

/* The hand-computed sequence of test_lru_order on one 4-way set. */
static void test_lru16_order(void)
{
	uint64_t keys[4] = { 0 }, order = 0, fpw = 0;
	static const struct { int line, hit, victim; } rows[] = {
		{ 0, 0, -1 }, { 1, 0, -1 }, { 2, 0, -1 }, { 3, 0, -1 },	/* D C B A */
		{ 0, 1, -1 },	/* A D C B */
		{ 4, 0, 1 },	/* E A D C (B out) */
		{ 1, 0, 2 },	/* B E A D (C out) */
		{ 2, 0, 3 },	/* C B E A (D out) */
		{ 0, 1, -1 },	/* A C B E */
		{ 3, 0, 4 },	/* D A C B (E out) */
		{ 4, 0, 1 },	/* E D A C (B out) */
		{ 2, 1, -1 },	/* C E D A */
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint64_t victim = UINT64_MAX;
		int w = sim_lru16_ref(keys, (uint8_t *)&fpw, &order, 4, (uint64_t)rows[i].line,
				      SIM_KEY(rows[i].line) | SIM_S, &victim, 0);
		CHECK_AT(__LINE__, (w >= 0) == rows[i].hit);
		if (!rows[i].hit)
			CHECK_AT(__LINE__, victim == (rows[i].victim < 0 ? 0
						      : (SIM_KEY(rows[i].victim) | SIM_S)));
	}
}

/* Random references (and, with holes, invalidations) to sets of 1..16
 * ways: the same hits, misses and victims as the recency-ordered keys of
 * sim_mru_ref, which match cachegrind's LL. */
static void test_lru16_random(void)
{
	uint64_t x = 88172645463325252ull;
	int bad = 0;

	for (uint32_t assoc = 1; assoc <= 16 && !bad; assoc++) {
		for (int holes = 0; holes <= 1 && !bad; holes++) {
			uint64_t ref[16] = { 0 }, keys[16] = { 0 }, fpw[2] = { 0, 0 }, order = 0;
			for (int i = 0; i < 20000 && !bad; i++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				uint64_t line = x % (2 * assoc + 1), st = (x >> 20) & 1 ? SIM_M : SIM_S;
				if (holes && (x >> 32) % 8 == 0) {	/* another node takes it */
					int a = sim_find_in(ref, assoc, line);
					int b = sim_find_in(keys, assoc, line);
					if (a >= 0)
						ref[a] = 0;
					if (b >= 0) {
						keys[b] = 0;
						((uint8_t *)fpw)[b] = 0;
					}
					bad |= (a >= 0) != (b >= 0);
					continue;
				}
				uint64_t va = 0, vb = 0;
				int a = sim_mru_ref(ref, assoc, line, SIM_KEY(line) | st, &va, holes);
				int b = sim_lru16_ref(keys, (uint8_t *)fpw, &order, assoc, line,
						      SIM_KEY(line) | st, &vb, holes);
				bad |= (a >= 0) != (b >= 0) || (a < 0 && va != vb);
			}
		}
	}
	CHECK(!bad);
}

/* The LLC's sets (sim_llc16_ref: fingerprints, 16-bit stamps from the
 * set's clock): random references and invalidations to sets of 1..16
 * ways give the hits, misses and victims of sim_mru_ref; long enough
 * (200,000 references a set) that each set's clock passes
 * SIM_LLC16_CLOCK_MAX and its stamps are renumbered three times. The
 * 16-way victim both ways: phminposuw (where the host has SSE4.1) and
 * SSE2's minimum. */
static void test_llc16_random(int sse41)
{
	uint64_t x = 2463534242ull, checked = 0;
	int bad = 0;

	mon_sim_sse41(sse41);
	for (uint32_t assoc = 1; assoc <= 16 && !bad; assoc++) {
		/* the block: lock, clock, fingerprints, stamps, keys */
		uint64_t blk[2 + 2 + 4 + 16] = { 0 }, ref[16] = { 0 }, renumbered = 0;
		uint64_t koff = 2 + (assoc + 7) / 8 + (assoc + 3) / 4, *keys = blk + koff;

		for (int i = 0; i < 200000 && !bad; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			uint64_t line = x % (2 * assoc + 1), st = (x >> 20) & 1 ? SIM_M : SIM_S;
			if ((x >> 32) % 8 == 0) {	/* another node takes it */
				int a = sim_find_in(ref, assoc, line);
				int b = sim_lru16_find_n(keys, (const uint8_t *)(blk + 2), assoc, line);
				if (a >= 0)
					ref[a] = 0;
				if (b >= 0) {	/* as llc_invalidate_others */
					keys[b] = 0;
					((uint8_t *)(blk + 2))[b] = 0;
					sim_llc16_stamps(blk, assoc)[b] = 0;
				}
				bad |= (a >= 0) != (b >= 0);
				continue;
			}
			uint64_t va = 0, vb = 0, before = blk[1];
			int a = sim_mru_ref(ref, assoc, line, SIM_KEY(line) | st, &va, 1);
			int b = sim_llc16_ref(blk, koff, assoc, line, SIM_KEY(line) | st, &vb);
			bad |= (a >= 0) != (b >= 0) || (a < 0 && va != vb);
			renumbered += blk[1] < before;
			checked++;
		}
		CHECK_AT(__LINE__, renumbered >= 2);
	}
	CHECK(!bad);
	CHECK(checked > 16 * 150000);
	mon_sim_sse41(0);	/* as the other cases run */
}

/* The one-line sets of a k32 LLC (sim_llc32_ref: 32-bit keys, SIM_KEY32,
 * in order of recency) against sim_mru_ref on 64-bit keys with holes
 * (another node's invalidations, left in place): lines of one set of 4,096
 * (sets 0, 1,234 and 4,095, whose line + 1 carries into the key) drawn
 * from 33 - neighbours, lines 2^30 apart (whose keys' low 32 bits agree)
 * and the highest lines below 2^41 - give the same hits (at the same
 * positions), misses and victims, the victim's 32-bit key that of the
 * 64-bit one, and after every reference the same key at every position:
 * a miss fills the first hole, not the last way past it. */
static void test_llc32_random(void)
{
	static const uint64_t sets[] = { 0, 1234, 4095 };
	uint64_t x = 1181783497276652981ull, checked = 0, holes = 0, deep = 0, filled = 0;
	int bad = 0;

	for (size_t si = 0; si < sizeof(sets) / sizeof(sets[0]) && !bad; si++) {
		uint64_t blk[SIM_LLC16_STRIDE] = { 0 }, ref[16] = { 0 }, pool[33];
		uint32_t *keys = (uint32_t *)(void *)(blk + SIM_LLC16_KEYS);

		for (uint64_t k = 0; k < 33; k++) {
			uint64_t hi = k < 11 ? k : k < 22 ? (k - 10) << 18 : (1ull << 29) - (k - 21);
			pool[k] = sets[si] + (hi << 12);
		}
		CHECK_AT(__LINE__, pool[32] == (1ull << 41) - (11ull << 12) + sets[si] &&
					   pool[21] >> 41 == 0 && SIM_KEY32(pool[11]) != 0);
		for (int i = 0; i < 200000 && !bad; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			uint64_t line = pool[x % 33], st = (x >> 20) & 1 ? SIM_M : SIM_S;
			int a, b;
			if ((x >> 32) % 8 == 0) {	/* another node takes it: a hole */
				a = sim_find_in(ref, 16, line);
				b = sim_llc32_find(keys, line);
				if (a >= 0)
					ref[a] = 0;
				if (b >= 0)	/* as llc_invalidate_others */
					keys[b] = 0;
				holes += a >= 0;
				bad |= a != b;
			} else {
				uint64_t va = 0, vb = 0;
				int hole = 0;
				for (int p = 0; p < 15; p++)
					hole |= !ref[p] && ref[p + 1];
				a = sim_mru_ref(ref, 16, line, SIM_KEY(line) | st, &va, 1);
				b = sim_llc32_ref(keys, line, SIM_KEY(line) | st, &vb);
				uint64_t want = va ? SIM_KEY32(SIM_KEY_LINE(va)) | SIM_ST(va) : 0;

				bad |= a != b || (a < 0 && vb != want);
				deep += a >= 2;
				filled += a < 0 && hole;
			}
			for (int p = 0; p < 16; p++) {
				uint64_t r = ref[p] ? SIM_KEY32(SIM_KEY_LINE(ref[p])) | SIM_ST(ref[p]) : 0;
				bad |= keys[p] != r;
			}
			if (bad)
				fprintf(stderr, "test_llc32_random: set %llu, reference %d: line %#llx: %d (want %d)\n",
					(unsigned long long)sets[si], i, (unsigned long long)line, b, a);
			checked++;
		}
	}
	CHECK(!bad);
	CHECK(holes > 1000);
	CHECK(deep > 100000);
	CHECK(filled > 1000);
	CHECK(checked == 3 * 200000);
}

/* The same through the simulator: an LLC of 4,096 16-way sets (k32 where
 * sim_low_addresses), an L1 of one 8-way set; 17 lines 2^30 lines apart
 * (their 64-bit keys' low halves equal) in one LLC set. The first 16 miss
 * to memory, then hit in the LLC; the 17th evicts the first. Both paths:
 * the lean one and the general one. */
static void test_llc_far_lines(void)
{
	const uintptr_t far = (uintptr_t)1 << 36, set = 77 * LINE;

	for (int lean = 1; lean >= 0; lean--) {
		struct mri_geom g = small_geom(8 * LINE, 8);

		g.llc = (struct mri_geom_cache){ 4096 * 16 * LINE, 16, LINE, MRI_GEOM_LRU };
		g.three_c = 0;
		g.nr_cores = 1;
		g.tlb1.nr_entries = g.tlb2.nr_entries = 0;
		struct mon_sim *s = new_sim(&g);

		mon_sim_lean(s, lean);
		struct mon_sim_core *c = mon_sim_core_get(s, 0, 0);
		struct mon_sim_events ev;
		uint64_t mem = 0, llc = 0;

		CHECK_AT(__LINE__, s->llc[0].k32 == sim_low_addresses());
		CHECK_AT(__LINE__, c->lean == (lean && s->llc[0].k32 ? SIM_LEAN_FIT_8_16_64
								    : lean ? SIM_LEAN_FIT : SIM_LEAN_NO));
		for (int round = 0; round < 3; round++)
			for (uintptr_t k = 0; k < 16; k++) {
				mon_sim_access(c, BASE + set + k * far, 8, (int)(k & 1), 0, &ev);
				mem += ev.llc_miss;
				llc += ev.l1_miss && !ev.llc_miss;
			}
		CHECK_EQ_U64(mem, 16);
		CHECK_EQ_U64(llc, 32);
		mon_sim_access(c, BASE + set + 16 * far, 8, 0, 0, &ev);	/* the first out */
		CHECK_EQ_U64(ev.llc_miss, 1);
		mon_sim_access(c, BASE + set + 15 * far, 8, 0, 0, &ev);
		CHECK_EQ_U64(ev.llc_miss, 0);
		mon_sim_access(c, BASE + set, 8, 0, 0, &ev);
		CHECK_EQ_U64(ev.llc_miss, 1);
		verify(s, __LINE__);
		mon_sim_destroy(s);
	}
}

/* A forked child's simulator (mon_sim_after_fork): every LLC set's lock
 * free again - a thread of the parent may have held one at the fork - and
 * the sets' keys as they were. A k32 LLC (4,096 sets: its locks in their
 * own array, its set keys alone) and a 192-byte one (1,024 sets: the lock
 * in the set's first word); either way the lock of a set that holds keys
 * is taken, then the child's reset must free it and leave the keys. */
static void test_after_fork(void)
{
	static const uint64_t nr_sets[] = { 4096, 1024 };

	for (size_t gi = 0; gi < 2; gi++) {
		struct mri_geom g = small_geom(8 * LINE, 8);

		g.llc = (struct mri_geom_cache){ nr_sets[gi] * 16 * LINE, 16, LINE, MRI_GEOM_LRU };
		g.three_c = 0;
		g.nr_cores = 1;
		g.tlb1.nr_entries = g.tlb2.nr_entries = 0;
		struct mon_sim *s = new_sim(&g);
		struct mon_sim_core *c = mon_sim_core_get(s, 0, 0);
		struct sim_llc *L = &s->llc[0];
		struct mon_sim_events ev;

		CHECK_AT(__LINE__, L->k32 == (gi == 0 && sim_low_addresses()));
		for (uintptr_t k = 0; k < 64; k++)	/* two lines in each of 32 sets */
			mon_sim_access(c, BASE + (k % 32) * LINE + (k / 32) * nr_sets[gi] * LINE, 8,
				       (int)(k & 1), 0, &ev);
		uint64_t *b = sim_llc_set(L, (BASE >> 6) + 5);
		uint32_t *lock = sim_llc_lock_of(L, b);
		size_t bytes = L->nr_sets * L->stride * sizeof(uint64_t);
		uint64_t *copy = malloc(bytes);

		CHECK_AT(__LINE__, copy != NULL);
		if (!copy)
			return;
		sim_lock(lock);
		CHECK_AT(__LINE__, *lock != 0);
		memcpy(copy, L->blk, bytes);
		mon_sim_after_fork(s);
		CHECK_AT(__LINE__, *lock == 0);
		/* the keys the accesses left, unchanged (the lock word aside) */
		uint64_t differ = 0, keys = 0;
		for (uint64_t set = 0; set < L->nr_sets; set++)
			for (uint64_t w = L->keys_off; w < L->stride; w++) {
				uint64_t i = set * L->stride + w;
				differ += L->blk[i] != copy[i];
				keys += L->blk[i] != 0;
			}
		CHECK_EQ_U64(differ, 0);
		CHECK_AT(__LINE__, keys >= 32);
		free(copy);
		verify(s, __LINE__);
		mon_sim_destroy(s);
	}
}

/* ---- set mapping: direct mapped, power-of-two and modulo set counts ---- */
static void test_set_mapping(void)
{
	static const struct {
		uint32_t sets;
		int lines[8];
		int nr;
		int misses;	/* over two passes */
		int l;
	} rows[] = {
		{ 4, { 0, 1, 2, 3 }, 4, 4, __LINE__ },		/* one per set: 2nd pass hits */
		{ 4, { 0, 4 }, 2, 4, __LINE__ },		/* 0 and 4 share set 0 */
		{ 4, { 1, 5, 9 }, 3, 6, __LINE__ },		/* all in set 1 */
		{ 3, { 0, 1, 2 }, 3, 3, __LINE__ },		/* modulo 3: distinct sets */
		{ 3, { 0, 3 }, 2, 4, __LINE__ },		/* 0 % 3 == 3 % 3 */
		{ 3, { 0, 4 }, 2, 2, __LINE__ },		/* 4 % 3 = 1: no conflict */
		{ 8, { 0, 8, 16, 1 }, 4, 7, __LINE__ },	/* three in set 0 thrash, 1 fits */
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mri_geom g = small_geom((uint64_t)rows[i].sets * LINE, 1);
		struct mon_sim *s = new_sim(&g);
		struct mon_sim_core *c = mon_sim_core_get(s, 0, 0);
		struct mon_sim_totals t = { 0 };
		for (int pass = 0; pass < 2; pass++)
			for (int j = 0; j < rows[i].nr; j++) {
				struct mon_sim_events ev;
				mon_sim_access(c, BASE + (uintptr_t)rows[i].lines[j] * LINE, 4, 0, 0, &ev);
				mon_sim_totals_add(&t, &ev);
			}
		if (t.l1_miss != (uint64_t)rows[i].misses)
			fprintf(stderr, "row %d: %llu misses\n", rows[i].l, (unsigned long long)t.l1_miss);
		CHECK_AT(rows[i].l, t.l1_miss == (uint64_t)rows[i].misses);
		mon_sim_destroy(s);
	}
}

/* ---- write-back: dirty evictions are counted ---- */
static void test_writeback(void)
{
	/* L1: one set of 2 ways, no L2, LLC 64 lines */
	struct mri_geom g = small_geom(2 * LINE, 2);
	g.llc = (struct mri_geom_cache){ 64 * LINE, 4, LINE, MRI_GEOM_LRU };
	struct mon_sim *s = new_sim(&g);
	struct mon_sim_core *c = mon_sim_core_get(s, 0, 0);
	static const struct { int line, wr, wb, l; } rows[] = {
		{ 0, 1, 0, __LINE__ },	/* W A: M          [A]   */
		{ 1, 1, 0, __LINE__ },	/* W B: M          [B A] */
		{ 2, 0, 1, __LINE__ },	/* R C: evicts A, dirty */
		{ 3, 0, 1, __LINE__ },	/* R D: evicts B, dirty */
		{ 0, 0, 0, __LINE__ },	/* R A: evicts C, clean (E) */
		{ 0, 1, 0, __LINE__ },	/* W A: hit, E -> M */
		{ 1, 0, 0, __LINE__ },	/* R B: evicts D, clean */
		{ 2, 0, 1, __LINE__ },	/* R C: evicts A, dirty */
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mon_sim_events ev;
		mon_sim_access(c, BASE + (uintptr_t)rows[i].line * LINE, 8, rows[i].wr, 0, &ev);
		CHECK_AT(rows[i].l, ev.nr_wb == rows[i].wb);
	}
	mon_sim_destroy(s);

	/* L1 one way, LLC one set of 2 ways: a dirty line goes into the LLC, whose
	 * eviction writes it to memory. */
	g = small_geom(LINE, 1);
	g.llc = (struct mri_geom_cache){ 2 * LINE, 2, LINE, MRI_GEOM_LRU };
	s = new_sim(&g);
	c = mon_sim_core_get(s, 0, 0);
	static const struct { int line, wr, wb, llc_miss, l; } rows2[] = {
		{ 0, 1, 0, 1, __LINE__ },	/* W A: LLC [A]                        */
		{ 1, 0, 1, 1, __LINE__ },	/* R B: A -> LLC (dirty); LLC [B A]    */
		{ 2, 0, 1, 1, __LINE__ },	/* R C: LLC evicts A (dirty) -> memory */
		{ 1, 0, 0, 0, __LINE__ },	/* R B: LLC hit; L1 evicts C (clean)   */
		{ 0, 0, 0, 1, __LINE__ },	/* R A: LLC [B C] evicts C (clean)     */
	};
	for (size_t i = 0; i < sizeof(rows2) / sizeof(rows2[0]); i++) {
		struct mon_sim_events ev;
		mon_sim_access(c, BASE + (uintptr_t)rows2[i].line * LINE, 8, rows2[i].wr, 0, &ev);
		CHECK_AT(rows2[i].l, ev.nr_wb == rows2[i].wb);
		CHECK_AT(rows2[i].l, ev.llc_miss == rows2[i].llc_miss);
	}
	mon_sim_destroy(s);
}

/* ---- TLB reach ---- */
static void test_tlb(void)
{
	static const struct {
		uint32_t e1, a1, e2, a2;
		int pages, rounds;
		int tlb1_miss, walks;
		int l;
	} rows[] = {
		{ 4, 4, 0, 1, 4, 10, 4, 4, __LINE__ },		/* fits: cold misses only */
		{ 4, 4, 0, 1, 5, 10, 50, 50, __LINE__ },	/* 5 pages > 4 entries: LRU thrash */
		{ 4, 4, 8, 8, 5, 10, 50, 5, __LINE__ },		/* the L2 TLB holds all 5 */
		{ 4, 4, 8, 8, 9, 10, 90, 90, __LINE__ },	/* beyond both */
		{ 8, 2, 0, 1, 8, 10, 8, 8, __LINE__ },		/* 4 sets x 2: 8 pages fit */
		{ 8, 2, 0, 1, 3, 10, 3, 3, __LINE__ },		/* 3 pages in 3 sets */
		{ 0, 4, 0, 1, 9, 10, 0, 0, __LINE__ },		/* no TLB model: nothing */
	};
	uint64_t cache_cyc = 0;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mri_geom g = small_geom(32 * 1024, 8);
		g.tlb1 = (struct mri_geom_tlb){ rows[i].e1, rows[i].a1 };
		g.tlb2 = (struct mri_geom_tlb){ rows[i].e2, rows[i].a2 };
		struct mon_sim *s = new_sim(&g);
		struct mon_sim_core *c = mon_sim_core_get(s, 0, 0);
		struct mon_sim_totals t = { 0 };
		for (int r = 0; r < rows[i].rounds; r++)
			for (int p = 0; p < rows[i].pages; p++) {
				struct mon_sim_events ev;
				mon_sim_access(c, BASE + (uintptr_t)p * 4096, 8, 0, 0, &ev);
				mon_sim_totals_add(&t, &ev);
			}
		CHECK_AT(rows[i].l, t.tlb1_miss == (uint64_t)rows[i].tlb1_miss);
		CHECK_AT(rows[i].l, t.tlb_miss == (uint64_t)rows[i].walks);
		/* the caches' part of the cycles does not depend on the TLBs:
		 * without a TLB model the cycles are those of the same accesses
		 * with TLBs (the row "beyond both": 9 pages, 10 rounds) less
		 * their L2 TLB hits and walks */
		uint64_t tlb_cyc = (t.tlb1_miss - t.tlb_miss) * test_lat.tlb2_hit +
				   t.tlb_miss * test_lat.tlb_miss;
		if (rows[i].pages == 9 && rows[i].e1)
			cache_cyc = t.est_cycles - tlb_cyc;
		if (!rows[i].e1)
			CHECK_EQ_U64(t.est_cycles, cache_cyc);
		CHECK_EQ_U64(t.est_stall_cycles, t.est_cycles - t.accesses * test_lat.l1_hit);
		mon_sim_destroy(s);
	}
}

/* ---- coherence: ping-pong, false sharing, padding ---- */
struct pp_case {
	uintptr_t off0, off1;	/* byte offsets written by core 0 and core 1 */
	int rounds;
	int l2;			/* give the cores an L2 */
	uint64_t l1_miss, coh_true, coh_false, inval_sent, intervention;
	int l;
};

static void run_pingpong(const struct pp_case *pc)
{
	struct mri_geom g = small_geom(32 * 1024, 8);
	if (pc->l2)
		g.l2 = (struct mri_geom_cache){ 256 * 1024, 8, LINE, MRI_GEOM_LRU };
	struct mon_sim *s = new_sim(&g);
	struct mon_sim_core *c0 = mon_sim_core_get(s, 0, 0), *c1 = mon_sim_core_get(s, 1, 1);
	struct mon_sim_totals t = { 0 };
	struct mon_sim_events ev;

	for (int r = 0; r < pc->rounds; r++) {
		mon_sim_access(c0, BASE + pc->off0, 4, 1, 0, &ev);
		mon_sim_totals_add(&t, &ev);
		mon_sim_access(c1, BASE + pc->off1, 4, 1, 1, &ev);
		mon_sim_totals_add(&t, &ev);
	}
	mon_sim_core_sync(c0, &ev);
	t.inval_recv += ev.inval_recv;
	mon_sim_core_sync(c1, &ev);
	t.inval_recv += ev.inval_recv;
	CHECK_EQ_U64(t.l1_miss, pc->l1_miss);
	CHECK_EQ_U64(t.coh_true, pc->coh_true);
	CHECK_EQ_U64(t.coh_false, pc->coh_false);
	CHECK_EQ_U64(t.inval_sent, pc->inval_sent);
	CHECK_EQ_U64(t.inval_recv, pc->inval_sent);	/* every invalidation arrives */
	CHECK_EQ_U64(t.intervention, pc->intervention);
	if (t.l1_miss != pc->l1_miss || t.coh_true != pc->coh_true || t.coh_false != pc->coh_false)
		fprintf(stderr, "  (case at line %d)\n", pc->l);
	verify(s, pc->l);
	mon_sim_destroy(s);
}

static void test_coherence(void)
{
	/* 10 rounds = 20 writes. The first write of each core is compulsory; every
	 * later write misses on the line the other core just took (18 coherence
	 * misses). From the second write on, the line is dirty in the other core:
	 * 19 interventions and 19 invalidations. */
	static const struct pp_case rows[] = {
		{ 0, 0, 10, 0, 20, 18, 0, 19, 19, __LINE__ },	/* one word: true sharing */
		{ 0, 0, 10, 1, 20, 18, 0, 19, 19, __LINE__ },	/* same with an L2 */
		{ 0, 8, 10, 0, 20, 0, 18, 19, 19, __LINE__ },	/* two words of one line: false */
		{ 0, 8, 10, 1, 20, 0, 18, 19, 19, __LINE__ },
		{ 0, 4, 10, 0, 20, 0, 18, 19, 19, __LINE__ },	/* adjacent 4-byte words */
		{ 0, 64, 10, 0, 2, 0, 0, 0, 0, __LINE__ },	/* padded to separate lines */
		{ 0, 64, 10, 1, 2, 0, 0, 0, 0, __LINE__ },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		run_pingpong(&rows[i]);
}

/* Reader/writer: core 0 writes word 0, core 1 reads word 0 or word 1. */
static void test_read_write_sharing(void)
{
	static const struct { uintptr_t roff; uint64_t l1_miss, coh_true, coh_false, inval, interv; int l; } rows[] = {
		/* core 0: W (compulsory), then W on S = upgrade (a hit, 1 inval) x9.
		 * core 1: R (compulsory, HITM), then R = coherence miss + HITM x9. */
		{ 0, 11, 9, 0, 9, 10, __LINE__ },
		{ 8, 11, 0, 9, 9, 10, __LINE__ },	/* reads a word nobody else writes */
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mri_geom g = small_geom(32 * 1024, 8);
		struct mon_sim *s = new_sim(&g);
		struct mon_sim_core *c0 = mon_sim_core_get(s, 0, 0), *c1 = mon_sim_core_get(s, 1, 1);
		struct mon_sim_totals t = { 0 };
		struct mon_sim_events ev;
		for (int r = 0; r < 10; r++) {
			mon_sim_access(c0, BASE, 8, 1, 0, &ev);
			mon_sim_totals_add(&t, &ev);
			mon_sim_access(c1, BASE + rows[i].roff, 8, 0, 0, &ev);
			mon_sim_totals_add(&t, &ev);
		}
		CHECK_AT(rows[i].l, t.l1_miss == rows[i].l1_miss);
		CHECK_AT(rows[i].l, t.coh_true == rows[i].coh_true);
		CHECK_AT(rows[i].l, t.coh_false == rows[i].coh_false);
		CHECK_AT(rows[i].l, t.inval_sent == rows[i].inval);
		CHECK_AT(rows[i].l, t.intervention == rows[i].interv);
		verify(s, rows[i].l);
		mon_sim_destroy(s);
	}

	/* Three readers, one writer: one invalidation per sharer. */
	struct mri_geom g = small_geom(32 * 1024, 8);
	struct mon_sim *s = new_sim(&g);
	struct mon_sim_events ev;
	for (uint32_t i = 0; i < 3; i++)
		mon_sim_access(mon_sim_core_get(s, i, i), BASE, 8, 0, 40 + i, &ev);
	mon_sim_access(mon_sim_core_get(s, 3, 3), BASE, 8, 1, 0, &ev);
	CHECK_EQ_U64(ev.inval_sent, 3);
	CHECK_EQ_U64(ev.intervention, 0);	/* the readers' copies are clean */
	CHECK_EQ_U64(ev.est_cycles, test_lat.mem_local + test_lat.inval + test_lat.tlb_miss);
	/* core 1 re-reads: a true coherence miss supplied dirty by core 3 */
	mon_sim_access(mon_sim_core_get(s, 1, 1), BASE + 2, 2, 0, 0, &ev);
	CHECK_EQ_U64(ev.inval_recv, 1);
	CHECK_EQ_U64(ev.coh, MON_SIM_COH_TRUE);
	CHECK_EQ_U64(ev.intervention, 1);
	/* the cookie of core 1's copy came back with the invalidation */
	struct mon_sim_recv ck[4];
	mon_sim_access(mon_sim_core_get(s, 2, 2), BASE + 16, 2, 0, 77, &ev);
	CHECK_EQ_U64(mon_sim_core_recv(mon_sim_core_get(s, 2, 2), ck, 4), 1);
	CHECK_EQ_U64(ck[0].cookie, 42);
	CHECK_EQ_U64(ck[0].line_addr, BASE);
	CHECK_EQ_U64(mon_sim_core_recv(mon_sim_core_get(s, 2, 2), ck, 4), 0);
	CHECK_EQ_U64(ev.coh, MON_SIM_COH_FALSE);	/* core 3 wrote bytes 0..7 only */
	verify(s, __LINE__);
	mon_sim_destroy(s);
}

/* ---- pages private to one core: no directory until another core comes ---- */
static void test_private_pages(void)
{
	struct mri_geom g = small_geom(32 * 1024, 8);
	struct mon_sim_events ev;

	/* MULTI from the start: core 0's page is private to it; E -> M on
	 * the hit path, then core 1's read makes the page shared and finds
	 * the line dirty in core 0 (the registration keeps M as dirty). */
	struct mon_sim *s = new_sim(&g);
	struct mon_sim_core *c0 = mon_sim_core_get(s, 0, 0), *c1 = mon_sim_core_get(s, 1, 1);
	mon_sim_access(c0, BASE, 8, 0, 0, &ev);
	CHECK_EQ_U64(ev.l1_miss, 1);
	CHECK_EQ_U64(mon_sim_access(c0, BASE, 8, 1, 0, &ev), 0);	/* a plain L1 hit */
	CHECK_EQ_U64(ev.est_cycles, test_lat.l1_hit);
	mon_sim_access(c1, BASE, 8, 0, 0, &ev);
	CHECK_EQ_U64(ev.l1_miss, 1);
	CHECK_EQ_U64(ev.intervention, 1);
	CHECK_EQ_U64(ev.inval_sent, 0);
	mon_sim_access(c0, BASE + 8, 8, 1, 0, &ev);	/* S now: an upgrade */
	CHECK_EQ_U64(ev.l1_miss, 0);
	CHECK_EQ_U64(ev.inval_sent, 1);
	/* a dirty private line evicted (9 lines into one 8-way set) writes back */
	for (uint32_t k = 1; k <= 8; k++) {
		mon_sim_access(c0, BASE + 64 + k * 4096, 8, 1, 0, &ev);
		CHECK_EQ_U64(ev.nr_wb, 0);
	}
	mon_sim_access(c0, BASE + 64 + 9 * 4096, 8, 1, 0, &ev);
	CHECK_EQ_U64(ev.nr_wb, 1);
	verify(s, __LINE__);
	mon_sim_destroy(s);

	/* SOLO first: the second core's creation makes core 0's pages private
	 * to it; core 1 then finds the written line dirty and the read one
	 * clean (E: an invalidation, no intervention). */
	s = new_sim(&g);
	c0 = mon_sim_core_get(s, 0, 0);
	mon_sim_access(c0, BASE, 8, 1, 0, &ev);
	mon_sim_access(c0, BASE + 4096, 8, 0, 0, &ev);
	c1 = mon_sim_core_get(s, 1, 1);
	mon_sim_access(c1, BASE, 8, 0, 0, &ev);
	CHECK_EQ_U64(ev.intervention, 1);
	mon_sim_access(c1, BASE + 4096, 8, 1, 0, &ev);
	CHECK_EQ_U64(ev.intervention, 0);
	CHECK_EQ_U64(ev.inval_sent, 1);
	mon_sim_access(c0, BASE + 4096, 8, 0, 0, &ev);	/* a coherence miss, true */
	CHECK_EQ_U64(ev.inval_recv, 1);
	CHECK_EQ_U64(ev.coh, MON_SIM_COH_TRUE);
	CHECK_EQ_U64(ev.intervention, 1);
	verify(s, __LINE__);
	mon_sim_destroy(s);
}

/* ---- NUMA: first touch and interleave ---- */
static void test_numa(void)
{
	struct mri_geom g = small_geom(32 * 1024, 8);
	g.nr_nodes = 2;
	g.llc = (struct mri_geom_cache){ 1024 * 1024, 16, LINE, MRI_GEOM_LRU };
	struct mon_sim *s = new_sim(&g);
	struct mon_sim_core *c0 = mon_sim_core_get(s, 0, 100), *c1 = mon_sim_core_get(s, 1, 101);
	struct mon_sim_totals t0 = { 0 }, t1 = { 0 };
	struct mon_sim_events ev;
	const int pages = 8, lines = pages * 4096 / LINE;

	CHECK_EQ_U64(mon_sim_core_node(c0), 0);
	CHECK_EQ_U64(mon_sim_core_node(c1), 1);
	for (int i = 0; i < lines; i++) {	/* core 0 initialises (reads) */
		mon_sim_access(c0, BASE + (uintptr_t)i * LINE, 8, 0, 0, &ev);
		mon_sim_totals_add(&t0, &ev);
	}
	for (int i = 0; i < lines; i++) {	/* core 1 (node 1) reads it all */
		mon_sim_access(c1, BASE + (uintptr_t)i * LINE, 8, 0, 0, &ev);
		mon_sim_totals_add(&t1, &ev);
	}
	CHECK_EQ_U64(t0.mem_local, lines);
	CHECK_EQ_U64(t0.mem_remote, 0);
	CHECK_EQ_U64(t1.llc_miss, lines);	/* node 1's LLC is cold */
	CHECK_EQ_U64(t1.mem_remote, lines);
	CHECK_EQ_U64(t1.mem_local, 0);
	struct mon_sim_page pg;
	CHECK(mon_sim_page_info(s, BASE + 3 * 4096 + 100, &pg) == 0);
	CHECK_EQ_U64(pg.node, 0);
	CHECK_EQ_U64(pg.first_core, 0);
	CHECK_EQ_U64(pg.first_tid, 100);
	CHECK(mon_sim_page_info(s, BASE + 64 * 4096, &pg) == AMEBA_ENOENT);
	/* core 1 touches new pages first: its own */
	mon_sim_access(c1, BASE + 100 * 4096, 8, 1, 0, &ev);
	CHECK_EQ_U64(ev.mem_local, 1);
	CHECK(mon_sim_page_info(s, BASE + 100 * 4096, &pg) == 0 && pg.node == 1 && pg.first_tid == 101);
	mon_sim_destroy(s);

	/* interleave: page p on node p % 2, whoever touches it */
	g.placement = MRI_GEOM_INTERLEAVE;
	s = new_sim(&g);
	c0 = mon_sim_core_get(s, 0, 0);
	struct mon_sim_totals t = { 0 };
	for (int p = 0; p < 8; p++) {
		mon_sim_access(c0, BASE + (uintptr_t)p * 4096, 8, 0, 0, &ev);
		mon_sim_totals_add(&t, &ev);
	}
	CHECK_EQ_U64(t.mem_local, 4);
	CHECK_EQ_U64(t.mem_remote, 4);
	mon_sim_destroy(s);

	/* block mapping: r10000-style two cores per node */
	g.core_map = MRI_GEOM_MAP_BLOCK;
	g.cores_per_node = 2;
	g.nr_nodes = 2;
	g.placement = MRI_GEOM_FIRST_TOUCH;
	s = new_sim(&g);
	CHECK_EQ_U64(mon_sim_core_node(mon_sim_core_get(s, 1, 1)), 0);
	CHECK_EQ_U64(mon_sim_core_node(mon_sim_core_get(s, 2, 2)), 1);
	CHECK_EQ_U64(mon_sim_core_node(mon_sim_core_get(s, 3, 3)), 1);
	mon_sim_destroy(s);
}

/* ---- 3C ---- */
static void test_3c(void)
{
	static const struct {
		int lines[9];
		int nr, rounds;
		uint64_t comp, cap, conf;
		int l;
	} rows[] = {
		/* L1: 4 sets x 2 ways (8 lines). Lines 0, 4, 8 share set 0: LRU thrash
		 * in the set, but a fully associative 8-line cache holds all three. */
		{ { 0, 4, 8 }, 3, 10, 3, 0, 27, __LINE__ },
		/* 9 lines cycled through 8: the fully associative LRU cache misses every
		 * time; the real cache only misses set 0 (3 lines, 2 ways). */
		{ { 0, 1, 2, 3, 4, 5, 6, 7, 8 }, 9, 10, 9, 27, 0, __LINE__ },
		/* two lines per set fit: compulsory only */
		{ { 0, 4, 1, 5 }, 4, 10, 4, 0, 0, __LINE__ },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mri_geom g = small_geom(8 * LINE, 2);
		struct mon_sim *s = new_sim(&g);
		struct mon_sim_core *c = mon_sim_core_get(s, 0, 0);
		struct mon_sim_totals t = { 0 };
		for (int r = 0; r < rows[i].rounds; r++)
			for (int j = 0; j < rows[i].nr; j++) {
				struct mon_sim_events ev;
				mon_sim_access(c, BASE + (uintptr_t)rows[i].lines[j] * LINE, 8, 0, 0, &ev);
				mon_sim_totals_add(&t, &ev);
			}
		CHECK_AT(rows[i].l, t.compulsory == rows[i].comp);
		CHECK_AT(rows[i].l, t.capacity == rows[i].cap);
		CHECK_AT(rows[i].l, t.conflict == rows[i].conf);
		CHECK_AT(rows[i].l, t.l1_miss == rows[i].comp + rows[i].cap + rows[i].conf);
		mon_sim_destroy(s);
	}
}

/* The reference's LRU: line l used in a[0..*n), most recent first, of cap
 * places (the last one dropped when full); whether it was there */
static int mtf_use(uint64_t *a, int *n, int cap, uint64_t l)
{
	int p;

	for (p = 0; p < *n && a[p] != l; p++)
		;
	int hit = p < *n;

	if (!hit && *n < cap)
		(*n)++;
	if (p == *n)
		p--;
	memmove(&a[1], &a[0], (size_t)p * 8);
	a[0] = l;
	return hit;
}

/* 3C against a naive model: a set-associative LRU cache, a fully associative
 * LRU cache of the same size (move-to-front arrays) and a seen[] table.
 * skewed: mostly a hot subset; else lines drawn evenly from a few more
 * than the fully associative cache holds, so that its order (the shadow's
 * segment and list, sim_mem.c) decides which of them it still holds. */
static void test_3c_random_run(int skewed)
{
	enum { SETS = 8, WAYS = 4, LINES = SETS * WAYS, SPAN = 160 };
	struct mri_geom g = small_geom(LINES * LINE, WAYS);
	struct mon_sim *s = new_sim(&g);
	struct mon_sim_core *c = mon_sim_core_get(s, 0, 0);
	uint64_t sa[SETS][WAYS], fa[LINES];
	int nsa[SETS] = { 0 }, nfa = 0;
	unsigned char seen[SPAN] = { 0 };
	uint64_t want[4] = { 0 }, got[4] = { 0 }, x = 977;

	for (int i = 0; i < 200000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* skewed: mostly a hot subset, sometimes the whole span */
		uint64_t l = !skewed ? x % 44 : (x >> 32) % 4 ? (x % 40) : (x % SPAN);
		struct mon_sim_events ev;
		mon_sim_access(c, BASE + l * LINE, 8, (x >> 20) & 1, 0, &ev);
		got[ev.cls3c]++;
		/* reference */
		int set = (int)(l % SETS);
		int hit_sa = mtf_use(sa[set], &nsa[set], WAYS, l);
		int hit_fa = mtf_use(fa, &nfa, LINES, l);
		if (!hit_sa)
			want[!seen[l] ? MON_SIM_3C_COMPULSORY : hit_fa ? MON_SIM_3C_CONFLICT
							       : MON_SIM_3C_CAPACITY]++;
		else
			want[MON_SIM_3C_NONE]++;
		seen[l] = 1;
	}
	for (int k = 0; k < 4; k++)
		CHECK_EQ_U64(got[k], want[k]);
	CHECK(want[MON_SIM_3C_CONFLICT] > 1000 && want[MON_SIM_3C_CAPACITY] > 1000);
	mon_sim_destroy(s);
}

static void test_3c_random(void)
{
	test_3c_random_run(1);
	test_3c_random_run(0);
}

/* The shadow itself (sim_mem.c) against a move-to-front array: uses and
 * removals (a coherence invalidation's) of lines drawn from 48 over 32
 * places, and one in four from 4,096 others, so that lines leave by
 * eviction and by removal from the front segment and from the list, its
 * stamps renumbered on the way, and the tombstones of the lines that left
 * fill the hash until it is built again; with the oldest stamp found by
 * phminposuw and without */
static void test_shadow_remove(void)
{
	enum { CAP = 32, HOT = 48, SPAN = HOT + 4096 };

	for (int sse = 0; sse < 2; sse++) {
		struct sim_shadow sh;
		uint64_t fa[CAP], x = 4242, hits = 0, removed = 0, rebuilt = 0;
		uint32_t hint[SPAN] = { 0 }, tombs = 0;
		int nfa = 0, bad = 0;

		mon_sim_sse41(sse);
		CHECK(sim_shadow_init(&sh, CAP) == 0);
		for (int i = 0; i < 300000 && !bad; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			uint64_t l = (x & 192) ? (x >> 8) % HOT : HOT + (x >> 8) % (SPAN - HOT);

			rebuilt += sh.tombs + 1 < tombs;	/* a use takes one at most */
			tombs = sh.tombs;
			if ((x & 15) == 0) {	/* a removal */
				int p;

				for (p = 0; p < nfa && fa[p] != l; p++)
					;
				sim_shadow_remove(&sh, l);
				if (p < nfa) {
					memmove(&fa[p], &fa[p + 1], (size_t)(nfa - p - 1) * 8);
					nfa--;
					removed++;
				}
				continue;
			}
			/* every other use without its hint: the hash finds it */
			uint32_t none = 0;
			int hit = sim_shadow_access(&sh, l, (x & 32) ? &hint[l] : &none);
			int want = mtf_use(fa, &nfa, CAP, l);

			hits += (uint64_t)want;
			if (hit != want) {
				fprintf(stderr, "shadow: access %d, line %llu: %d, want %d\n", i,
					(unsigned long long)l, hit, want);
				bad = 1;
			}
		}
		CHECK(!bad);
		CHECK(sh.nr == (uint32_t)nfa);
		CHECK(hits > 50000 && removed > 5000 && rebuilt > 100);
		sim_shadow_fini(&sh);
	}
	mon_sim_sse41(0);	/* as the other cases run */
}

/* ---- pseudo-LRU vs LRU ---- */
static void test_plru(void)
{
	/* One 4-way set. After A B C D A the tree points at C's half and C
	 * (way 2) is the PLRU victim, while LRU evicts B. So B hits under PLRU
	 * only. */
	static const struct { int line, lru_miss, plru_miss, l; } rows[] = {
		{ 0, 1, 1, __LINE__ },	/* A */
		{ 1, 1, 1, __LINE__ },	/* B */
		{ 2, 1, 1, __LINE__ },	/* C */
		{ 3, 1, 1, __LINE__ },	/* D */
		{ 0, 0, 0, __LINE__ },	/* A */
		{ 4, 1, 1, __LINE__ },	/* E: LRU evicts B, PLRU evicts C */
		{ 1, 1, 0, __LINE__ },	/* B */
		{ 2, 1, 1, __LINE__ },	/* C */
	};
	for (int repl = MRI_GEOM_LRU; repl <= MRI_GEOM_PLRU; repl++) {
		struct mri_geom g = small_geom(4 * LINE, 4);
		g.l1d.repl = repl;
		struct mon_sim *s = new_sim(&g);
		struct mon_sim_core *c = mon_sim_core_get(s, 0, 0);
		for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
			struct mon_sim_events ev;
			mon_sim_access(c, BASE + (uintptr_t)rows[i].line * LINE, 8, 0, 0, &ev);
			CHECK_AT(rows[i].l, ev.l1_miss ==
					    (repl == MRI_GEOM_LRU ? rows[i].lru_miss : rows[i].plru_miss));
		}
		mon_sim_destroy(s);
	}
}

/* ---- latency model ---- */
static void test_latency(void)
{
	/* L1 one line; L2 2 sets x 2 ways; LLC 4 sets x 4 ways; L1 TLB one entry,
	 * L2 TLB 4 entries. lat: l1 2, l2 10, llc 30, mem 100/200, HITM 150,
	 * inval 50, tlb2 5, walk 20. */
	struct mri_geom g = small_geom(LINE, 1);
	g.l2 = (struct mri_geom_cache){ 4 * LINE, 2, LINE, MRI_GEOM_LRU };
	g.llc = (struct mri_geom_cache){ 16 * LINE, 4, LINE, MRI_GEOM_LRU };
	g.tlb1 = (struct mri_geom_tlb){ 1, 1 };
	g.tlb2 = (struct mri_geom_tlb){ 4, 4 };
	struct mon_sim *s = new_sim(&g);
	struct mon_sim_core *c = mon_sim_core_get(s, 0, 0);
	static const struct { uintptr_t off; int wr; uint32_t cycles; int l; } rows[] = {
		{ 0, 0, 100 + 20, __LINE__ },		/* walk + memory */
		{ 0, 0, 2, __LINE__ },			/* L1 hit */
		{ 64, 0, 100, __LINE__ },		/* line 1: memory */
		{ 0, 0, 10, __LINE__ },			/* line 0: L2 hit */
		{ 4096, 0, 100 + 20, __LINE__ },	/* line 64 (L2 set 0), new page */
		{ 0, 0, 10 + 5, __LINE__ },		/* L2 TLB hit, L2 hit */
		{ 128, 0, 100, __LINE__ },		/* line 2: L2 set 0 evicts line 64 */
		{ 4096, 0, 30 + 5, __LINE__ },		/* line 64 from the LLC */
		{ 4096, 1, 2, __LINE__ },		/* E -> M: silent */
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mon_sim_events ev;
		mon_sim_access(c, BASE + rows[i].off, 8, rows[i].wr, 0, &ev);
		if (ev.est_cycles != rows[i].cycles)
			fprintf(stderr, "%s:%d: est_cycles %u, want %u\n", __FILE__, rows[i].l,
				ev.est_cycles, rows[i].cycles);
		CHECK_AT(rows[i].l, ev.est_cycles == rows[i].cycles);
		CHECK_AT(rows[i].l, ev.est_stall_cycles == rows[i].cycles - 2);
	}
	mon_sim_destroy(s);

	/* invalidation and intervention costs on two cores */
	g = small_geom(32 * 1024, 8);
	g.llc = (struct mri_geom_cache){ 16 * LINE, 4, LINE, MRI_GEOM_LRU };
	s = new_sim(&g);
	struct mon_sim_core *c0 = mon_sim_core_get(s, 0, 0), *c1 = mon_sim_core_get(s, 1, 1);
	struct mon_sim_events ev;
	mon_sim_access(c0, BASE, 8, 0, 0, &ev);		/* E from memory */
	CHECK_EQ_U64(ev.est_cycles, 100 + 20);
	mon_sim_access(c1, BASE, 8, 0, 0, &ev);		/* S from the LLC */
	CHECK_EQ_U64(ev.est_cycles, 30 + 20);
	mon_sim_access(c0, BASE, 8, 1, 0, &ev);		/* upgrade invalidates core 1 */
	CHECK_EQ_U64(ev.est_cycles, 2 + 50);
	CHECK_EQ_U64(ev.l1_miss, 0);
	mon_sim_access(c1, BASE, 8, 1, 0, &ev);		/* HITM + invalidate core 0 */
	CHECK_EQ_U64(ev.est_cycles, 150 + 50);
	CHECK_EQ_U64(ev.est_stall_cycles, 150 + 50 - 2);
	CHECK_EQ_U64(ev.llc_miss, 0);
	mon_sim_destroy(s);
}

/* ---- lines smaller than the access: the r10000's 32-byte L1 lines ---- */
static void test_span(void)
{
	char err[256];
	struct mri_geom g;
	CHECK(mri_geom_load("r10000", &g, err, sizeof(err)) == 0);
	g.nr_cores = 2;
	struct mon_sim *s = new_sim(&g);
	struct mon_sim_core *c = mon_sim_core_get(s, 0, 0);
	struct mon_sim_events ev;
	mon_sim_access(c, BASE + 24, 16, 0, 0, &ev);	/* bytes 24..39: two L1 lines */
	CHECK_EQ_U64(ev.l1_miss, 1);			/* counted once */
	CHECK_EQ_U64(ev.l2_miss, 1);			/* one 128-byte L2 line */
	CHECK_EQ_U64(ev.est_cycles, g.lat.tlb_miss + g.lat.mem_local + (g.lat.l2_hit - g.lat.l1_hit));
	mon_sim_access(c, BASE + 0, 8, 0, 0, &ev);	/* first L1 line: hit */
	CHECK_EQ_U64(ev.l1_miss, 0);
	mon_sim_access(c, BASE + 32, 8, 0, 0, &ev);	/* second L1 line: hit */
	CHECK_EQ_U64(ev.l1_miss, 0);
	mon_sim_access(c, BASE + 64, 8, 0, 0, &ev);	/* third L1 line: L2 hit */
	CHECK_EQ_U64(ev.l1_miss, 1);
	CHECK_EQ_U64(ev.l2_miss, 0);
	/* false sharing at 128-byte granularity: core 1 writes byte 100 */
	mon_sim_access(mon_sim_core_get(s, 1, 1), BASE + 100, 4, 1, 0, &ev);
	CHECK_EQ_U64(ev.inval_sent, 1);
	mon_sim_access(c, BASE + 0, 8, 0, 0, &ev);
	CHECK_EQ_U64(ev.coh, MON_SIM_COH_FALSE);
	verify(s, __LINE__);
	mon_sim_destroy(s);
}

/* ---- mailbox overflow: the victim reconciles with the directory ---- */
static void test_resync(void)
{
	struct mri_geom g = small_geom(32 * 1024, 8);
	g.l2 = (struct mri_geom_cache){ 2 * 1024 * 1024, 16, LINE, MRI_GEOM_LRU };
	struct mon_sim *s = new_sim(&g);
	struct mon_sim_core *c0 = mon_sim_core_get(s, 0, 0), *c1 = mon_sim_core_get(s, 1, 1);
	struct mon_sim_events ev;
	struct mon_sim_totals t = { 0 };
	const int n = 6000;	/* more than a mailbox holds */

	for (int i = 0; i < n; i++)
		mon_sim_access(c0, BASE + (uintptr_t)i * LINE, 8, 0, 0, &ev);
	for (int i = 0; i < n; i++) {
		mon_sim_access(c1, BASE + (uintptr_t)i * LINE, 8, 1, 0, &ev);
		mon_sim_totals_add(&t, &ev);
	}
	CHECK_EQ_U64(t.inval_sent, n);
	mon_sim_core_sync(c0, &ev);	/* drains 4096, reconciles the rest */
	CHECK_EQ_U64(ev.inval_recv, n);
	struct mon_sim_stats st;
	mon_sim_get_stats(s, &st);
	CHECK(st.ring_overflows > 0);
	verify(s, __LINE__);
	/* every line core 0 re-reads is a coherence miss */
	t = (struct mon_sim_totals){ 0 };
	for (int i = 0; i < n; i++) {
		mon_sim_access(c0, BASE + (uintptr_t)i * LINE, 8, 0, 0, &ev);
		mon_sim_totals_add(&t, &ev);
	}
	CHECK_EQ_U64(t.coh_true, n);
	CHECK_EQ_U64(t.intervention, n);
	verify(s, __LINE__);
	mon_sim_destroy(s);
}

/* ---- determinism of a single-threaded pseudo-random trace ---- */
static void run_random(const char *preset, struct mon_sim_totals *t)
{
	char err[256];
	struct mri_geom g;
	CHECK(mri_geom_load(preset, &g, err, sizeof(err)) == 0);
	g.nr_cores = 4;
	struct mon_sim *s = new_sim(&g);
	uint64_t x = 88172645463325252ull;
	struct mon_sim_events ev;
	*t = (struct mon_sim_totals){ 0 };
	for (int i = 0; i < 200000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint32_t core = (uint32_t)(x >> 60) & 3;
		uintptr_t a = BASE + (x % (8u << 20));
		mon_sim_access(mon_sim_core_get(s, core, core), a & ~(uintptr_t)7, 8, (x >> 40) % 4 == 0,
			       0, &ev);
		mon_sim_totals_add(t, &ev);
	}
	verify(s, __LINE__);
	mon_sim_destroy(s);
}

static void test_determinism(void)
{
	static const char *presets[] = { "skylake-sp", "zen4", "r10000" };
	for (size_t i = 0; i < 3; i++) {
		struct mon_sim_totals a, b;
		run_random(presets[i], &a);
		run_random(presets[i], &b);
		CHECK(memcmp(&a, &b, sizeof(a)) == 0);
		CHECK(a.l1_miss > 0 && a.coh_true + a.coh_false > 0);
	}
}

/* ---- presets and config files ---- */
static const char *write_tmp(const char *text)
{
	static char path[64];
	snprintf(path, sizeof(path), "/tmp/ameba-sim-test-%d.conf", (int)getpid());
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

static void test_geometry(void)
{
	char err[512], buf[4096], buf2[4096];
	struct mri_geom g, h;

	for (int i = 0; mri_geom_preset_names[i]; i++) {
		int r = mri_geom_load(mri_geom_preset_names[i], &g, err, sizeof(err));
		if (r)
			fprintf(stderr, "preset %s: %s\n", mri_geom_preset_names[i], err);
		CHECK(r == 0);
		CHECK_STR(g.name, mri_geom_preset_names[i]);
		/* printing and re-reading gives the same geometry */
		mri_geom_format(&g, buf, sizeof(buf));
		CHECK(mri_geom_load("zen4", &h, err, sizeof(err)) == 0);
		CHECK(mri_geom_parse(buf, strlen(buf), "fmt", &h, err, sizeof(err)) == 0);
		mri_geom_format(&h, buf2, sizeof(buf2));
		CHECK_STR(strchr(buf2, '\n'), strchr(buf, '\n'));
	}
	CHECK(mri_geom_load("r10000", &g, err, sizeof(err)) == 0);
	CHECK_EQ_U64(g.l1d.sz_bytes, 32 * 1024);
	CHECK_EQ_U64(g.l1d.assoc, 2);
	CHECK_EQ_U64(g.l1d.line_bytes, 32);
	CHECK_EQ_U64(g.l2.sz_bytes, 4 * 1024 * 1024);
	CHECK_EQ_U64(g.l2.line_bytes, 128);
	CHECK_EQ_U64(g.llc.sz_bytes, 0);
	CHECK_EQ_U64(g.tlb1.nr_entries, 64);
	CHECK_EQ_U64(g.tlb1.assoc, 64);
	CHECK(strstr(buf, "l1d_size = ") != NULL);

	/* a config file on top of a preset */
	const char *p = write_tmp("# test\npreset = skylake-sp\nl1d_size = 64K  # bigger\n"
				  "l1d_repl = plru\nnodes = 4\nlat_mem_remote = 999\n");
	CHECK(mri_geom_load(p, &g, err, sizeof(err)) == 0);
	CHECK_EQ_U64(g.l1d.sz_bytes, 64 * 1024);
	CHECK_EQ_U64(g.l1d.repl, MRI_GEOM_PLRU);
	CHECK_EQ_U64(g.nr_nodes, 4);
	CHECK_EQ_U64(g.lat.mem_remote, 999);
	CHECK_EQ_U64(g.l2.sz_bytes, 1024 * 1024);	/* from the preset */
	CHECK_STR(g.name, p);

	/* no TLB model */
	p = write_tmp("preset = zen4\ntlb1_entries = 0\ntlb2_entries = 0\n");
	CHECK(mri_geom_load(p, &g, err, sizeof(err)) == 0);
	CHECK_EQ_U64(g.tlb1.nr_entries, 0);

	/* errors name the file, the line and the bad value */
	static const struct { const char *text; int code; const char *want; int l; } bad[] = {
		{ "preset = zen4\nl1d_size = 32Q\n", AMEBA_EPROTO, ":2: bad value '32Q' for l1d_size", __LINE__ },
		{ "bogus = 1\n", AMEBA_EPROTO, ":1: unknown key 'bogus'", __LINE__ },
		{ "\n\nl1d_size 32K\n", AMEBA_EPROTO, ":3: expected 'key = value'", __LINE__ },
		{ "preset = pentium\n", AMEBA_ENOENT, ":1: unknown preset 'pentium'", __LINE__ },
		{ "preset = zen4\nl1d_assoc = 3\n", AMEBA_EINVAL, "l1d_size = 32768: not a multiple", __LINE__ },
		{ "preset = zen4\nl1d_assoc = 12\nl1d_size = 48K\nl1d_repl = plru\n", AMEBA_EINVAL,
		  "plru needs a power-of-two", __LINE__ },
		{ "preset = zen4\nl1d_repl = fifo\n", AMEBA_EPROTO, ":2: bad value 'fifo' for l1d_repl (expected lru or plru)", __LINE__ },
		{ "preset = zen4\ncores = 65\n", AMEBA_EINVAL, "cores = 65", __LINE__ },
		{ "preset = zen4\nllc_line = 128\n", AMEBA_EINVAL, "llc_line = 128 must equal", __LINE__ },
		{ "preset = zen4\ntlb1_assoc = 5\n", AMEBA_EINVAL, "tlb1_entries = 72", __LINE__ },
		{ "preset = zen4\ntlb1_entries = 0\n", AMEBA_EINVAL, "tlb2_entries = 3072 without an L1 TLB", __LINE__ },
		{ "preset = zen4\nword_size = 3\n", AMEBA_EINVAL, "word_size = 3", __LINE__ },
		{ "preset = zen4\ncores = 4K\n", AMEBA_EPROTO, "bad value '4K' for cores", __LINE__ },
		{ "preset = zen4\nthree_c = yes\n", AMEBA_EPROTO, "bad value 'yes' for three_c", __LINE__ },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = write_tmp(bad[i].text);
		err[0] = 0;
		int r = mri_geom_load(p, &g, err, sizeof(err));
		CHECK_AT(bad[i].l, r == bad[i].code);
		if (!strstr(err, bad[i].want) || !strstr(err, p))
			fprintf(stderr, "%s:%d: error '%s' lacks '%s'\n", __FILE__, bad[i].l, err, bad[i].want);
		CHECK_AT(bad[i].l, strstr(err, bad[i].want) != NULL);
		CHECK_AT(bad[i].l, strstr(err, p) != NULL);
	}
	unlink(p);
	CHECK(mri_geom_load("/nonexistent/x.conf", &g, err, sizeof(err)) == AMEBA_ENOENT);
	CHECK(strstr(err, "/nonexistent/x.conf") != NULL);
	CHECK(mri_geom_load("pentium", &g, err, sizeof(err)) == AMEBA_ENOENT);
	CHECK(strstr(err, "unknown preset 'pentium'") != NULL);
	/* CPUID's cache descriptors (the host preset where sysfs has none),
	 * register values computed by hand from the Intel SDM (leaf 4) and the
	 * AMD APM (0x80000005/6) */
	int llc = 0;
	memset(&g, 0, sizeof(g));
	/* leaf 4: data cache, level 1, 8 ways, 1 partition, 64 B, 64 sets */
	CHECK(mri_geom_cpuid_leaf(&g, 4, 1 | 1 << 5, 7u << 22 | 63, 63, &llc) == 1);
	CHECK_EQ_U64(g.l1d.sz_bytes, 32 * 1024);
	CHECK_EQ_U64(g.l1d.assoc, 8);
	CHECK_EQ_U64(g.l1d.line_bytes, 64);
	/* an instruction cache (type 2) is not a data cache */
	CHECK(mri_geom_cpuid_leaf(&g, 4, 2 | 1 << 5, 7u << 22 | 63, 63, &llc) == 0);
	CHECK_EQ_U64(g.l1d.sz_bytes, 32 * 1024);
	/* unified level 3, 11 ways, 64 B, 32,768 sets: 22 MiB, the LLC */
	CHECK(mri_geom_cpuid_leaf(&g, 4, 3 | 3 << 5, 10u << 22 | 63, 32767, &llc) == 4);
	CHECK_EQ_U64(g.llc.sz_bytes, 22 * 1024 * 1024);
	CHECK_EQ_U64(g.llc.assoc, 11);
	CHECK_EQ_U64(llc, 3);
	/* fully associative (bit 9): ways = lines */
	CHECK(mri_geom_cpuid_leaf(&g, 0x8000001d, 3 | 2 << 5 | 1 << 9, 0u << 22 | 63, 255, &llc) == 2);
	CHECK_EQ_U64(g.l2.sz_bytes, 16 * 1024);
	CHECK_EQ_U64(g.l2.assoc, 256);
	/* AMD legacy: 48 KiB 12-way L1D; 1 MiB L2 with code 6 (8 ways), code 5 (6 ways) */
	CHECK(mri_geom_cpuid_leaf(&g, 0x80000005, 0, 0, 48u << 24 | 12 << 16 | 64, &llc) == 1);
	CHECK_EQ_U64(g.l1d.sz_bytes, 48 * 1024);
	CHECK_EQ_U64(g.l1d.assoc, 12);
	CHECK(mri_geom_cpuid_leaf(&g, 0x80000006, 0, 0, 1024u << 16 | 6 << 12 | 64, &llc) == 2);
	CHECK_EQ_U64(g.l2.sz_bytes, 1024 * 1024);
	CHECK_EQ_U64(g.l2.assoc, 8);
	CHECK(mri_geom_cpuid_leaf(&g, 0x80000006, 0, 0, 768u << 16 | 5 << 12 | 64, &llc) == 2);
	CHECK_EQ_U64(g.l2.assoc, 6);
	/* code 9 (see 0x8000001D) and an absent L2 give nothing */
	CHECK(mri_geom_cpuid_leaf(&g, 0x80000006, 0, 0, 1024u << 16 | 9 << 12 | 64, &llc) == 0);
	CHECK(mri_geom_cpuid_leaf(&g, 0x80000006, 0, 0, 0, &llc) == 0);
	CHECK_EQ_U64(g.l2.sz_bytes, 768 * 1024);

	/* host: whatever this machine has, it must validate */
	CHECK(mri_geom_load("host", &g, err, sizeof(err)) == 0);
	CHECK(g.l1d.sz_bytes > 0 && g.nr_nodes >= 1);
	/* where sysfs has no cache directory, the host still has an L2 (CPUID's,
	 * or the base preset's): that is not a machine without caches. A
	 * directory that lists no L2 is believed, so there nothing is checked */
	{
		const char *root = getenv("AMEBA_SYSFS");
		char dir[4096];

		snprintf(dir, sizeof(dir), "%s/devices/system/cpu/cpu0/cache",
			 root && *root ? root : "/sys");
		if (access(dir, F_OK) != 0)
			CHECK(g.l2.sz_bytes > 0);
	}
}

/* ---- sampled mode's cold LLC sets (mon_sim_settle_cold) ---- */
static void test_settle_cold(void)
{
	/* L1 one line (every access below reaches the LLC), LLC 64 sets of 2
	 * ways: sets 0 and 1 get the known references, the rest stay cold */
	struct mri_geom g = small_geom(LINE, 1);
	g.llc = (struct mri_geom_cache){ 128 * LINE, 2, LINE, MRI_GEOM_LRU };
	static const int round[] = { 0, 1, 64, 65, 129 };	/* set 0: 0, 64; set 1: 1, 65, 129 */
	struct mon_sim_events ev;

	for (int on = 0; on < 2; on++) {
		struct mon_sim *s = new_sim(&g);
		struct mon_sim_core *c = mon_sim_core_get(s, 0, 0);
		uint64_t miss = 0, first = 0, late = 0;

		mon_sim_settle_cold(s, on);
		/* 250 rounds: set 0's two lines hit, set 1's three lines thrash
		 * its two ways (a miss each); the first round fills empty ways */
		for (int r = 0; r < 250; r++)
			for (size_t i = 0; i < sizeof(round) / sizeof(round[0]); i++) {
				mon_sim_access(c, BASE + (uintptr_t)round[i] * LINE, 8, 0, 0, &ev);
				if (r == 0)
					first += ev.llc_miss;
				else if (r == 249)
					late += ev.llc_miss;
			}
		/* exact: 5 first touches; settled: fewer than 1,024 known
		 * references yet, so the fills of empty ways are hits, but for
		 * 129, which evicts from a full set */
		CHECK_EQ_U64(first, on ? 1 : 5);
		CHECK_EQ_U64(late, 3);	/* full sets: counted as ever */
		/* 124 cold fills (sets 2..63, two ways each): all misses when
		 * exact; settled by the known ratio, 3 in 5 (+-1 for the dither) */
		for (int l = 2; l < 64; l++)
			for (int w = 0; w < 2; w++) {
				mon_sim_access(c, BASE + (uintptr_t)(l + 64 * w) * LINE, 8, 0, 0, &ev);
				miss += ev.llc_miss;
				if (on && !ev.llc_miss)
					CHECK(ev.est_cycles == test_lat.llc_hit);	/* an LLC hit's latency */
			}
		if (on)
			CHECK(miss >= 74 && miss <= 75);
		else
			CHECK_EQ_U64(miss, 124);
		mon_sim_destroy(s);
	}
}

int main(void)
{
	test_lru_order();
	test_find_far_lines();
	test_lru_min8();
	test_lf_slot();
	test_lean_renumber();
	test_lean_l2();
	test_lean_coh(0);
	test_lean_coh(1);
	test_lru16_order();
	test_lru16_random();
	test_llc16_random(1);
	test_llc16_random(0);
	test_llc32_random();
	test_llc_far_lines();
	test_after_fork();
	test_set_mapping();
	test_writeback();
	test_tlb();
	test_coherence();
	test_read_write_sharing();
	test_private_pages();
	test_numa();
	test_3c();
	test_3c_random();
	test_shadow_remove();
	test_plru();
	test_latency();
	test_span();
	test_resync();
	test_determinism();
	test_geometry();
	test_settle_cold();
	return check_done();
}
