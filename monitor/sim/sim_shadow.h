/*
 * sim_shadow.h - the 3C classification's fully associative LRU shadow of
 * an L1 (sim_mem.c), and the use of a line in its front segment, inline for
 * the line entries (sim_core.h sim_l0_hit_at; backend_sim_x86.c repeats it
 * in assembly). Included by sim_core.h, after its helpers.
 */
#ifndef AMEBA_SIM_SHADOW_H
#define AMEBA_SIM_SHADOW_H

#include <stdint.h>
#include <stddef.h>

/* ---- fully associative LRU shadow of the L1 (3C) ----
 * One LRU order in two parts: the front segment, the SIM_SHADOW_SEG most
 * recently used lines ordered by their stamps (out of the list), then the
 * list. Using a line of the segment only stamps it; using another moves
 * the segment's oldest line to the list's front and puts the line in its
 * slot. That is the move to the front of one list, so the order, and
 * which line leaves when a new one comes (the list's tail), are the same
 * (docs/simulator.md, "3C"). */
#define SIM_SHADOW_SEG 8
#define SIM_SHADOW_TOMB UINT64_MAX	/* a hash slot whose line left */
#define SIM_SHADOW_CLOCK_MAX 0xffff	/* stamps renumbered before it (sim_mem.c) */
struct sim_shadow_seg {
	uint64_t line[SIM_SHADOW_SEG];	/* UINT64_MAX: empty */
	uint16_t stamp[SIM_SHADOW_SEG];	/* 0: empty; one host instruction finds
					 * the oldest (phminposuw) */
	uint32_t node[SIM_SHADOW_SEG];
	uint64_t clock;			/* the last stamp, < SIM_SHADOW_CLOCK_MAX */
};
struct sim_shadow {
	uint64_t *hkey;		/* open addressing: line + 1, 0 empty,
				 * SIM_SHADOW_TOMB a line removed */
	uint32_t *hval;		/* node index */
	struct sim_snode {	/* LRU list node; node 0 = the list head */
		uint64_t line;	/* UINT64_MAX: free */
		uint32_t prev, next;
		uint32_t slot;	/* the line's hash slot (lines do not move in
				 * the hash but when it is built again) */
	} *node;
	uint32_t hmask, hshift, cap, nr, free_top;
	uint32_t tombs;		/* slots of removed lines (rebuilt from the nodes
				 * when they and the lines fill half the hash) */
	uint32_t *free;
	size_t map_sz;
	void *map;		/* the mapping; it starts with the segment (all
				 * slots empty for good when cap <= SIM_SHADOW_SEG) */
};

/* Stamps line as most recently used when the shadow's segment holds it:
 * the whole of a use of such a line (sim_shadow_access's first case),
 * inline for the paths that make no call. 0: not there, or the stamps
 * need renumbering first (sim_shadow_access does it) */
static inline int sim_shadow_seg_touch(const struct sim_shadow *sh, uint64_t line)
{
	struct sim_shadow_seg *g = sh->map;

	for (int j = 0; j < SIM_SHADOW_SEG; j++)
		if (g->line[j] == line) {
			if (sim_unlikely(g->clock + 1 >= SIM_SHADOW_CLOCK_MAX))
				return 0;
			g->stamp[j] = (uint16_t)++g->clock;
			return 1;
		}
	return 0;
}

/* Accesses line in the shadow; returns 1 on a hit. *hint: the node the
 * line had (a guess, checked; 0 = none), updated. */
int sim_shadow_access(struct sim_shadow *sh, uint64_t line, uint32_t *hint) SIM_HIDDEN;

#endif
