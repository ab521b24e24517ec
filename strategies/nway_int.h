/*
 * nway_int.h - the nway strategy's shared state and the functions its files
 * call across (nway.c holds the Notes: the algorithm and its invariants).
 * Private to strategies/nway*.c.
 */
#ifndef AMEBA_NWAY_INT_H
#define AMEBA_NWAY_INT_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ameba/plugin.h"
#include "strategy_util.h"

#define LINE_BYTES 64
#define ADJACENT_GAP 32
#define MAX_SEARCHES 64
#define STALE_INTERVALS 4	/* a region measured this long ago may be stale */
#define MAX_RESCANS 4		/* searches again on a new phase after the search */
#define CHURN_FACTOR 8		/* a site with this many blocks allocated per live one is apart */
#define MAX_WATCH 8		/* newcomers counted beside the final measurement */

enum { R_SPAN, R_SET, R_UNIT };
enum { S_SEARCH, S_DONE };
enum { F_NONE, F_MEASURING, F_DONE };
enum { END_NONE, END_SINGLES, END_UNSEARCHED, END_BUDGET, END_EMPTY, END_IDLE };
enum { TAG_TOTAL = 1, TAG_SLOT, TAG_FTOTAL, TAG_FUNIT, TAG_FWATCH };

/* The host's message limit (1 MiB over the MRI; hosts before it: the same). */
static inline uint64_t nway_message_bytes(const struct ameba_host *h)
{
	return AMEBA_HOST_HAS(h, max_message_bytes) && h->max_message_bytes ?
	       h->max_message_bytes : AMEBA_MAX_MESSAGE_BYTES;
}

/* Bytes of per-thread values one reading may carry (room left for the rest). */
#define READ_BUDGET(st) (nway_message_bytes((st)->host) / 100 * 86)
/* Names of excepted bins in one experiment's request, over all its counters. */
#define EXCEPT_BYTES(st) (nway_message_bytes((st)->host) / 8)

extern const char *const nway_end_names[];

struct unit {
	char *key;			/* "s:<site>", "o:<id>", "l:<addr>" */
	struct ameba_object obj;	/* presentation; name and site owned */
	char *line_name;
	int is_line;			/* a cache line outside every object */
	int found;			/* in the found list */
	/* this plan */
	uint32_t nr_live;
	uint64_t live_bytes;
	uintptr_t lo, hi;
	uint32_t obj_first;		/* index of a live object of the unit */
	uint32_t range_off, nr_ranges;
	int hull;
	const char *bin;		/* measured by this site bin (host's name), or NULL */
	uint32_t owner;			/* queue entry owning it + 1 (resolution) */
	/*
	 * Apart from the address space (Notes: units apart): a site that had
	 * no live block at a listing, or the [stack] / [tls] kind bin. Its
	 * blocks map to no span; it is measured by its bin only.
	 */
	int apart;
	uint32_t apart_plan;		/* the plan it became apart in + 1 */
	int retired;			/* an apart site whose name a later site deepened */
	uint64_t queued;		/* bit si: search si queued it apart once */
	uint32_t born_plan;		/* the plan it was first listed in + 1 */
	uint64_t bin_blocks, bin_bytes;	/* the host's bin: blocks and bytes ever */
	uint64_t round_blocks;		/* ... blocks when the search's round began */
};

struct region {
	int kind;
	uintptr_t start, end;		/* R_SPAN */
	uint32_t unit;			/* R_UNIT */
	uint32_t *set;			/* R_SET: unit indices */
	uint32_t nr_set;
	double share;			/* ranking estimate */
	double sum_v, sum_t;		/* R_UNIT: counts measured as such */
	uint64_t sum_ns;		/* R_UNIT: the time they were measured over */
	uint32_t nr_meas;		/* measurements as such */
	uint32_t zero_streak;
	uint64_t zero_ns;		/* time of the zero streak */
	uint32_t meas_at;		/* search interval of its last measurement */
	int fresh;			/* never measured: measure as is */
	int protect;			/* it or its parent was ranked in the top */
	int dead;
	int apart;			/* R_SET of units apart from the address space */
};

enum { SLOT_ASIS, SLOT_CHILD };

struct slot {
	int type;
	uint32_t qi;			/* queue entry measured or split */
	struct region child;		/* SLOT_CHILD */
	uint32_t range_off, nr_ranges;
};

struct search {
	int32_t thread;			/* -1: all threads */
	char who[24];			/* "" or " of thread N" (log lines) */
	uint32_t tid_storage;
	int phase;
	int ended_by;
	uint32_t round;
	struct region *q;
	uint32_t nr_q, cap_q;
	int started;
	uint32_t nr_intervals;		/* search intervals, this search */
	uint32_t idle;			/* intervals in a row with a zero total */
	uint32_t interval_ms;		/* 0: the agent's */
	/* this plan */
	struct slot *slots;
	uint32_t nr_slots, cap_slots;
	int planned;
};

struct found {
	uint32_t unit;
	uint32_t round;
	double search_share;		/* the search's estimate at termination */
	double search_v, search_t;	/* the search's own counts of it */
	uint64_t search_ns;		/* ... and the time they cover */
	uint64_t found_by;		/* bit t: thread t's search; bit 63: all threads */
	double values[AMEBA_M_NR], program[AMEBA_M_NR];
	double *pt[AMEBA_M_NR], *program_pt[AMEBA_M_NR];
	uint64_t window_ns;
	uint32_t mark;			/* the oracle mark starting its window: nway-N; 0 none */
	int measuring, hull;
	double iv;			/* primary count of the last interval */
	char extra[160];
};

struct nway {
	const struct ameba_host *host;
	uint32_t n, keep, max_intervals, final_intervals, group, max_ranges;
	int use_bins;
	uint32_t interval_ms, max_interval_ms;
	uint64_t quiet_ns;
	double grow, unsearched, rescan;
	int more, per_thread;
	/* rescans: the least share the found objects missed since the search
	 * ended (< 0: not known yet), how many rescans, found before the last */
	double missed_min;
	uint32_t nr_rescans, found_before_rescan, rescan_round;
	int primary;
	int metrics[AMEBA_M_NR];
	uint32_t nr_metrics;

	struct unit *units;
	uint32_t nr_units, cap_units;
	uint32_t *index, index_cap;
	uint32_t *obj_unit;		/* [nr_objects]: unit + 1, 0 = none */
	uint32_t cap_obj_unit;

	struct search searches[MAX_SEARCHES];
	uint32_t nr_searches;

	struct found *found;
	uint32_t nr_found, cap_found;

	uint32_t nr_threads_cap;
	uint32_t *thread_ids;
	double prog[AMEBA_M_NR];
	double *prog_pt[AMEBA_M_NR];
	uint64_t final_ns;
	uint32_t nr_plans;
	int final;			/* F_* */
	uint8_t final_has[AMEBA_M_NR];	/* metrics of the final measurement */
	uint32_t final_left, final_ext, final_interval_ms;
	uint32_t nr_marks;		/* oracle marks asked for (windows started) */
	/* newcomers watched beside the final measurement (Notes) and their
	 * counts in the last final interval; round_plan: the plan (+ 1) the
	 * last round of the search started in; final_plan: the plan (+ 1) the
	 * final measurement last started in */
	uint32_t watch[MAX_WATCH], nr_watch, round_plan, final_plan;
	double watch_v[MAX_WATCH], watch_total;
	uint64_t watch_ns;
	char mark_label[24];		/* the one of this plan (exp->mark) */
	int mark_now;

	/* plan storage, valid until observe() */
	uintptr_t *ranges;
	uint32_t nr_ranges, cap_ranges;
	struct ameba_counter *counters;
	uint32_t nr_counters, cap_counters;
	/* bin where-sets: names back to back, each counter's [off, off + nr) */
	const char **bnames;
	uint32_t nr_bnames, cap_bnames, bn_mark;
	struct ameba_counter_bins *cbins;	/* [cap_counters]; names offsets until the end */
	uint32_t cap_cbins;
	/* the bins of the units apart: every ranged counter leaves them out */
	const char **xnames;
	uint32_t nr_xnames, cap_xnames;
	struct ameba_counter_bins *cexcept;	/* [cap_cexcept] */
	uint32_t cap_cexcept;
	int kinds_apart;		/* the host measures [stack] and [tls] bins */

	/* contexts storage */
	struct ameba_context *ctxs;
	struct ameba_object *prov_objs;
	char (*prov_extra)[96];
};

/* nway_units.c */
int grow_array(void **p, uint32_t *cap, uint32_t need, size_t elem);
int threads_grow(struct nway *st, uint32_t nr);
int64_t unit_get(struct nway *st, const char *key);
const struct ameba_object *host_bin(const struct ameba_host *h, const char *name);
int units_refresh(struct nway *st);
int unit_describe(struct nway *st, uint32_t u);
int64_t line_unit(struct nway *st, uintptr_t addr);
uint32_t obj_first_after(const struct ameba_host *h, uintptr_t addr);
const struct ameba_object *obj_across(const struct nway *st, uintptr_t addr);
uint32_t span_units(const struct nway *st, uintptr_t s, uintptr_t e, uint32_t *out,
		    uint32_t max, int *multi);
int unit_emit(struct nway *st, uint32_t u, uint32_t *nr);
int region_emit(struct nway *st, const struct region *r, uint32_t *off, uint32_t *nr);
int region_single(const struct region *r);
void region_free(struct region *r);
int region_has_objects(const struct nway *st, const struct region *r);

/* nway_queue.c */
int q_push(struct search *s, const struct region *r);
void q_compact(struct search *s);
uint32_t newcomers(const struct nway *st, uint32_t *out, uint32_t max);
void unit_apart_now(struct nway *st, uint32_t u);
int search_init(struct nway *st, struct search *s);
int search_resolve(struct nway *st, struct search *s);
int region_split(struct nway *st, const struct region *r, struct region *a,
		 struct region *b);

/* nway_plan.c */
void slots_clear(struct search *s);
int counter_add(struct nway *st, int metric, uint32_t off, uint32_t nr,
		const struct search *s, int per_thread, uint64_t tag);
int rescan_may(const struct nway *st);
int nway_plan(void *state, struct ameba_experiment *exp);

/* nway.c */
int rescan_check(struct nway *st, double total, double watch_total);

#endif
