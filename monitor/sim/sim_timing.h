/*
 * sim_timing.h - the timing model: how long a core's accesses take.
 *
 * Notes
 * - The cache model says where each access was served and what it cost in
 *   latency (est_cycles). A core that executes out of order does not wait
 *   for every one of those latencies: it keeps issuing while misses are
 *   outstanding, a prefetcher brings sequential lines before they are
 *   asked for, and the memory channel, not the latency, bounds a stream.
 *   This model turns the access stream into a run time (est_runtime_cycles,
 *   the thread clocks of ordered mode, what-if predictions); the counts and
 *   est_cycles do not change.
 * - Issue: every access costs access_mcycles / 1000 cycles of issue (the
 *   instructions around it included); access i issues at T(i).
 * - A miss (an access whose est_cycles exceeds an L1 hit: L2 and beyond,
 *   a TLB miss, a coherence action) completes at T(i) + its latency. It
 *   holds one of `mshrs` miss buffers until then; a miss that finds them
 *   all busy issues when the first frees.
 * - Window: access j + window cannot issue before miss j completes (the
 *   reorder buffer fills behind it). So independent misses within a window
 *   overlap, and a run of hits behind a miss hides part of its latency.
 * - Dependence: a miss whose address lies within 4 KiB after the value an
 *   outstanding 8-byte load miss returned (p = p->next) waits for it. The
 *   value is read only where the access is simulated by the thread that
 *   makes it, just before it makes it (inline mode, tm_values); in ordered
 *   mode the merger cannot read it safely and such chains overlap.
 * - Coherence: an access that took its line from another core (an
 *   intervention, an invalidation sent, a coherence miss) completes before
 *   the next access issues. The cache model hands the line over at once;
 *   a core running on past it would keep the line for a window of hits it
 *   could not have made in time, and contending cores would stop
 *   alternating.
 * - Prefetch: a table of 16 streams, one per 4 KiB page; an L1 miss on the
 *   line after (or before) the stream's last, once two such steps were
 *   seen, finds its line on its way: it costs an L2 hit (its TLB part
 *   stays) instead of the LLC or memory latency. Streams do not cross
 *   pages, as the L2 streamers of Intel and AMD cores.
 * - Page walks: an access that missed the last TLB level waits for one
 *   of `walkers` page walkers, which it holds for lat_tlb_miss; its
 *   latency counts from the walk's start.
 * - Bandwidth: every line from memory (demand or prefetched) occupies the
 *   core's memory channel for mem_line_cycles; a line completes no earlier
 *   than its slot. Writebacks are free.
 * - Stores are timed as loads (a store miss fills the store buffer as a
 *   load miss fills the ROB). No compute beyond the issue cost, no
 *   instruction fetch, no branch mispredictions.
 * Time is kept in 1/1000 cycles.
 */
#ifndef AMEBA_SIM_TIMING_H
#define AMEBA_SIM_TIMING_H

#include <stdint.h>
#include <stddef.h>

#define SIM_TM_STREAMS 16

struct sim_tm_miss {
	uint64_t idx;		/* the access's index (nr_acc when it issued) */
	uint64_t done;		/* when it completes, mcycles */
	uint64_t value;		/* an 8-byte load's value, or 0 */
};

struct sim_tm_stream {
	uint64_t page;		/* 4 KiB page + 1; 0: empty */
	uint64_t line;		/* the last line missed in it */
	int32_t dir;		/* +1, -1, or 0 not known yet */
	uint32_t steps;		/* consecutive steps seen */
	uint64_t stamp;		/* LRU */
};

struct sim_tm {
	uint64_t nr_acc;	/* accesses simulated on the core */
	uint64_t t_last;	/* mcycles: when access acc_last issued */
	uint64_t acc_last;
	uint64_t rob_next;	/* the first access index a window bound applies to */
	uint64_t bus_free;	/* mcycles: the memory channel's next free slot */
	uint64_t walker_free[8];	/* mcycles: when each page walker is free
					 * (MRI_GEOM_MAX_WALKERS) */
	uint32_t nr_out;	/* outstanding misses in out[] */
	uint32_t pad;
	struct sim_tm_miss out[32];	/* MRI_GEOM_MAX_MSHRS */
	struct sim_tm_stream stream[SIM_TM_STREAMS];
	uint64_t stream_clock;
	uintptr_t value_at;	/* where the next load's value is read: 0 its own
				 * address, UINTPTR_MAX nowhere (mon_sim_core_tm_value_at) */
	uint64_t nr_prefetched, nr_dependent, nr_mshr_full;	/* statistics */
};

struct mon_sim_core;
struct mon_sim_events;
/* Times the access of core c that just missed (est_cycles above an L1 hit;
 * counted in nr_acc already: its index is nr_acc - 1). The core is held. */
void sim_tm_miss(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write,
		 const struct mon_sim_events *ev);

#endif
