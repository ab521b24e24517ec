/*
 * nway.c - the `nway` strategy: Buck & Hollingsworth's n-way priority-queue
 * search over the address space (seed 002, section 2.2), with the extensions
 * the paper suggests (continue into the remaining space, search per thread).
 *
 * Notes:
 *  - A *unit* is what the search can end at: a global, stack or TLS object
 *    (or all stacks / all TLS blocks: [stack], [tls], below), an allocation
 *    site (all live heap/mmap blocks of the site: its bin; a site with one
 *    live block is that block), or a single cache line of memory that
 *    belongs to no object. Units keep their identity across the
 *    agent's table refreshes (site label or object id, as in objects.c).
 *  - A *region* is a queue entry: an address span [start, end), a set of
 *    units, or one unit. Each interval measures n regions with n
 *    conditional counters plus one total counter (no ranges); a region's
 *    share is its count over the total of the same interval.
 *  - The priority queue holds every region measured so far, ranked by share
 *    (it is a sorted array: a few dozen entries, re-sorted per interval).
 *    Planning walks it from the top: a single unit (or a region kept after a
 *    zero count) is measured again as is, one counter; any other region is
 *    split in two halves, two counters; the walk stops when the n counters
 *    are used. With no singles this is "the top n/2 regions are split in
 *    halves"; a split parent leaves the queue and its halves enter it, so a
 *    region the search passed over stays ranked and the search backs up to
 *    it when its share beats everything found under the region it refined
 *    (seed 002, Fig. 2).
 *  - Halves: the split point is the middle of the part of the span that
 *    objects occupy (empty address space at either end is ignored, so the
 *    search does not spend intervals halving gaps), moved to the nearer end
 *    of the object it falls in, so no object spans two regions. The first n
 *    regions divide the hull of all objects into n equal parts, moved the
 *    same way; the first and last extend to the ends of the address space.
 *    Objects allocated after a boundary was drawn may straddle it: a span
 *    that holds parts of one unit only becomes that unit and is measured on
 *    its exact, whole extent from then on.
 *  - Bins: a span holding at most `group` units of which one is a site with
 *    several blocks (blocks of sites interleaved in the heap, which address
 *    halves cannot separate) becomes the set of those units and is split by
 *    unit from then on (each half a set of allocation sites, measured on
 *    all their blocks).
 *  - Units apart: what the address space cannot hold for long. A site
 *    whose blocks all were freed by a listing, or that allocated
 *    CHURN_FACTOR times more blocks than are alive (wl_thread_churn's
 *    scratch buffers: 10,000 of them, at most 4 alive, gone by the next
 *    listing) and, when the host lists them, the kind bins [stack] and [tls] (every
 *    thread's stack or TLS block: 10,000 TLS blocks of no common site) are
 *    units *apart*: their blocks map to no span, they are measured by their
 *    bins only (costing no ranges; the monitor counts every block of the
 *    bin, freed or not yet listed ones too), and they enter the queue as
 *    one set (fresh: measured as is next; first share 1/n) split by unit as
 *    any set, ranked with the rest. An apart site stays apart (its later
 *    blocks too). A set of them that counts nothing is dropped, and its
 *    units are not queued again by that search (until a new round of
 *    search_init): a site freed at start-up would be measured for ever.
 *    A queued unit that becomes apart is measured again first (its
 *    estimate came from its few live blocks' ranges).
 *  - Shares stay consistent: the units apart are counted by bin, and every
 *    counter with ranges (spans, units by range, the final measurement)
 *    leaves their blocks out (the experiment's counter_except: the
 *    monitor skips a range's access whose object is of an excepted site or
 *    kind). A freed block's address in a span still searched, or reused by
 *    a listed object, therefore counts once, for the unit apart, and the
 *    queue's shares still add up to at most the total (the unsearched
 *    share and the stale-estimate rule rely on that).
 *  - Names: a unit is named by its bin as the host names it now. A site
 *    that a later site with the same first frame deepened ("allocate@
 *    new_allocator.h:137" became "... <- main@cxx.cpp:140" and "... <-
 *    main@cxx.cpp:141", the oracle's names at exit) retires: blocks listed
 *    under the old label map to no unit, and the bins it became are units
 *    apart (which of them a stale-labelled block is cannot be told; their
 *    bins count them all). A found unit so deepened is replaced by one found
 *    entry per bin (each with a window of its own from then on).
 *  - Zero counts: a region that counts nothing in an interval is dropped,
 *    unless it holds an object and it or its parent was ranked in the top
 *    (selected for refinement): then it stays in the queue with half its
 *    parent's share (or its own past share) as its estimate, halved at each
 *    further zero count, and is measured again as is when its rank earns a
 *    counter; it is dropped once it counted nothing for `keep` intervals
 *    and `quiet_ms` in a row. When a region that had counted goes quiet,
 *    the interval grows by `grow` (once per interval, up to
 *    max_interval_ms): phases, seed 002 section 3.5. The n initial regions
 *    count as ranked (they are the whole search). Quiet regions are
 *    measured first, on up to n/2 counters (with n < 4, every other
 *    interval only: else no counters are left to split the top region,
 *    and a 2-way search stood still while a region was quiet), and while
 *    one may still come back the search does not end (a program's
 *    start-up is a sequence of phases too: arrays initialised one after
 *    the other).
 *  - A single unit measured again accumulates: its share is the sum of its
 *    counts over the sum of the totals of the intervals it was measured in
 *    (an average weighted by events, so longer intervals weigh more).
 *  - Termination (checked before each plan): the top n-1 regions are single
 *    units, each measured at least once as such; or the share of the
 *    regions still unsearched (not single) is under `unsearched` while at
 *    least one single was found; or `max_intervals` intervals were spent.
 *    The results are the singles among the top n regions (n-1, or n when
 *    the n-th is single too).
 *  - Stale estimates: when the queue's estimates add up to less than
 *    1 - `unsearched`, the region measured longest ago (at least
 *    STALE_INTERVALS) is measured again first, and the search does not end
 *    meanwhile (it was measured while the program worked elsewhere).
 *  - Final measurement: once every search ended, everything found is
 *    measured at once, on its exact extents, for `final_intervals`
 *    intervals (0: until the program exits or --duration is spent) at the
 *    longest interval a search grew to, extended by up
 *    to `keep` intervals, each longer by `grow`, while a found object counts
 *    nothing in an interval (a phase); every metric of `metrics`, per
 *    thread (only the ranking metric when the per-thread rows of all of
 *    them would not fit in one reply of the monitor: thousands of
 *    threads). The contexts carry these values and the program totals of the
 *    same window (confidence 1 on exact backends, halved when a site had to
 *    be measured on its hull). The window starts with an oracle mark
 *    (exp->mark "nway-N", docs/oracle.md: ignored unless the target runs
 *    with AMEBA_ORACLE), named in each context (extra: mark=nway-N), so
 *    that the window can be compared with the oracle over the same portion
 *    of the run. Before that (the program exited first), the
 *    found units and the singles of the queue are offered with the
 *    search's own counts (primary metric only, measured=search_intervals);
 *    so is a found unit that counted nothing over the whole window.
 *  - Rescan (a phase after the search): the final measurement also tells
 *    what share of each interval's total the found objects miss. The
 *    search ends in one phase of the program (e.g. while main() fills an
 *    input array) and the objects of a later phase counted nothing then,
 *    so they were dropped (true_sharing: the shared counter, 8% of the
 *    run, was never found). When the found objects miss more than
 *    `rescan` above what they missed at the search's end (its own
 *    estimate, or the least missed in a final interval since), a new
 *    phase began: the search starts again (a new round, from n regions
 *    over all objects minus the found ones) while the found objects are
 *    still measured (if the program exits first, their window stays
 *    whole). When the round found new objects, the window restarts for
 *    all of them (window_restart, a new mark): every share is over one
 *    window, so the shares add up to at most 1, rank against each other
 *    and match the program context (per-object windows gave true_sharing
 *    55.3% + 55.4% + 1.4%: samples over a window holding the fill, the
 *    shared counter over the workers' phase only). At most MAX_RESCANS
 *    times, and not again after a round that found nothing; not with
 *    per_thread=1 (each thread's search has its own phases).
 *  - Newcomers: while a rescan may still come, the final measurement also
 *    counts, on the counters the search had and the window leaves spare
 *    (n - 1 - found, at most MAX_WATCH), the site units first listed after
 *    the search's round began (its spans covered what was listed then;
 *    a later block may lie where a quiet span was dropped), newest first,
 *    then the sites that allocated again since, most blocks first (a site
 *    quiet in the search, dropped with its span or set, whose new blocks
 *    start a phase: million_live's second new_small caller).
 *    One that misses at least `unsearched` of a final interval starts a
 *    rescan by itself (wl_hash_table's `unknown` buffer: 5.4%, under
 *    rescan's 10 points, missed when the search dropped its span). When a rescan starts, each of them that counted in that
 *    interval enters the new queue as a single already measured once, so
 *    the rescan starts from it instead of finding it by halving again:
 *    a phase as short as million_live's second round (its last ~2%, a
 *    new site's 100,000 blocks) ends a few intervals after the rescan
 *    starts, and by then the halving has not reached it. A newcomer first
 *    listed in the interval that showed the phase (no final interval
 *    counted it) is measured, as a unit, in the rescan's first interval
 *    (search_newcomers).
 *  - An experiment holds at most max_ranges address ranges: beyond, the
 *    counters with the most ranges are measured on their hull (a site with
 *    more than max_ranges / 4 blocks always is).
 *  - more=1: after each round, the found units are cut out of the
 *    remaining regions (their spans are measured minus the found objects)
 *    and the search goes on, round after round, until the queue's share
 *    falls under `unsearched`, the queue is empty, a round finds nothing,
 *    or the budget is spent.
 *  - per_thread=1: one independent search per thread (its counters count
 *    that thread only; shares are of that thread's total), created when the
 *    thread first appears; the union of what they find is measured for all
 *    threads. A thread that counts nothing for 2 x keep intervals in a row,
 *    or exits, ends its search. The strategy finishes when every search did.
 *  - AMEBA_NWAY_TRACE=1 in the agent's environment dumps the queue after
 *    every interval on stderr (for working on the search itself).
 */
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
#define READ_BUDGET 900000	/* bytes of per-thread values in one MRI reply */
#define MAX_RESCANS 4		/* searches again on a new phase after the search */
#define EXCEPT_BYTES 131072	/* names of excepted bins in one experiment's JSON */
#define CHURN_FACTOR 8		/* a site with this many blocks allocated per live one is apart */
#define MAX_WATCH 8		/* newcomers counted beside the final measurement */

static const struct ameba_param nway_params[] = {
	{ "n", AMEBA_PARAM_INT, "10", "range counters per interval (regions measured at once), >= 2" },
	{ "metric", AMEBA_PARAM_METRIC, "mem_ref", "metric the search ranks by (the run's --metric)" },
	{ "metrics", AMEBA_PARAM_STRING, "all",
	  "metrics of the final measurement: all, or names joined by '+'" },
	{ "interval_ms", AMEBA_PARAM_INT, "0", "search interval (0: the agent's --interval)" },
	{ "max_interval_ms", AMEBA_PARAM_INT, "1600", "the interval grows up to this (phases)" },
	{ "grow", AMEBA_PARAM_DOUBLE, "2", "interval factor when a zero-count region is kept" },
	{ "keep", AMEBA_PARAM_INT, "4", "intervals a top region may count zero before it is dropped" },
	{ "quiet_ms", AMEBA_PARAM_INT, "1000", "... and the time it must stay quiet (ms)" },
	{ "unsearched", AMEBA_PARAM_DOUBLE, "0.02",
	  "stop when the regions not yet refined hold less than this share" },
	{ "max_intervals", AMEBA_PARAM_INT, "200", "search intervals before the search stops (budget)" },
	{ "final_intervals", AMEBA_PARAM_INT, "2",
	  "intervals of the final measurement (0: until the program exits)" },
	{ "more", AMEBA_PARAM_INT, "0", "1: continue into the remaining space after each result" },
	{ "rescan", AMEBA_PARAM_DOUBLE, "0.1", "search again when, after the search, the found "
	  "objects miss this much more of an interval's total (a new phase); 0: never" },
	{ "per_thread", AMEBA_PARAM_INT, "0", "1: one search per thread" },
	{ "group", AMEBA_PARAM_INT, "8", "regions of at most this many units with interleaved "
	  "heap blocks are split by allocation site" },
	{ "max_ranges", AMEBA_PARAM_STRING, "host", "address ranges per experiment (host: what fits "
	  "in one 1 MiB monitor request, ~37 bytes a range)" },
	{ "bins", AMEBA_PARAM_INT, "1", "1: measure an allocation site with several blocks by its bin "
	  "(the monitor resolves the blocks, new ones included); 0: by its blocks' ranges" },
};

enum { R_SPAN, R_SET, R_UNIT };
enum { S_SEARCH, S_DONE };
enum { F_NONE, F_MEASURING, F_DONE };
enum { END_NONE, END_SINGLES, END_UNSEARCHED, END_BUDGET, END_EMPTY, END_IDLE };
enum { TAG_TOTAL = 1, TAG_SLOT, TAG_FTOTAL, TAG_FUNIT, TAG_FWATCH };

static const char *const end_names[] = { "-", "top n-1 single", "unsearched share under threshold",
					 "budget", "queue empty", "thread idle" };

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

/* ---- small helpers ---- */

static int grow_array(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t c = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	np = realloc(*p, (size_t)c * elem);
	if (!np)
		return AMEBA_ENOMEM;
	*p = np;
	*cap = c;
	return 0;
}

static int threads_grow(struct nway *st, uint32_t nr)
{
	uint32_t *ids;

	if (nr <= st->nr_threads_cap)
		return 0;
	for (uint32_t k = 0; k < st->nr_metrics; k++) {
		int m = st->metrics[k];

		if (strategy_grow_pt(&st->prog_pt[m], st->nr_threads_cap, nr))
			return AMEBA_ENOMEM;
		for (uint32_t f = 0; f < st->nr_found; f++)
			if (strategy_grow_pt(&st->found[f].pt[m], st->nr_threads_cap, nr) ||
			    strategy_grow_pt(&st->found[f].program_pt[m], st->nr_threads_cap, nr))
				return AMEBA_ENOMEM;
	}
	ids = realloc(st->thread_ids, nr * sizeof(*ids));
	if (!ids)
		return AMEBA_ENOMEM;
	st->thread_ids = ids;
	for (uint32_t t = 0; t < nr; t++)
		ids[t] = t;
	st->nr_threads_cap = nr;
	return 0;
}

static int ranges_push(struct nway *st, uintptr_t start, uintptr_t end)
{
	if (grow_array((void **)&st->ranges, &st->cap_ranges, 2 * (st->nr_ranges + 1),
		       sizeof(*st->ranges)))
		return AMEBA_ENOMEM;
	st->ranges[2 * st->nr_ranges] = start;
	st->ranges[2 * st->nr_ranges + 1] = end;
	st->nr_ranges++;
	return 0;
}

/* ---- units ---- */

/* The index of the unit of key, created when new; -1 on allocation failure. */
static int64_t unit_get(struct nway *st, const char *key)
{
	struct unit *u;
	uint64_t h;

	if ((st->nr_units + 1) * 2 > st->index_cap &&
	    strategy_index_grow(&st->index, &st->index_cap, st->units, sizeof(*st->units),
				offsetof(struct unit, key), st->nr_units))
		return -1;
	for (h = strategy_hash_str(key);; h++) {
		uint32_t v = st->index[h & (st->index_cap - 1)];

		if (!v)
			break;
		if (!strcmp(st->units[v - 1].key, key))
			return v - 1;
	}
	if (grow_array((void **)&st->units, &st->cap_units, st->nr_units + 1, sizeof(*st->units)))
		return -1;
	u = &st->units[st->nr_units];
	memset(u, 0, sizeof(*u));
	u->key = strdup(key);
	if (!u->key)
		return -1;
	u->born_plan = st->nr_plans + 1;
	st->index[h & (st->index_cap - 1)] = st->nr_units + 1;
	return st->nr_units++;
}

static int is_site_kind(const struct ameba_object *o)
{
	return (o->kind == AMEBA_OBJ_HEAP || o->kind == AMEBA_OBJ_MMAP) && o->site;
}

static int obj_usable(const struct ameba_object *o)
{
	return o->live && o->kind != AMEBA_OBJ_OTHER && o->end > o->start;
}

/* Is object i merged into the range of object i - 1 (same unit, adjacent)? */
static int merges(const struct nway *st, uint32_t i)
{
	const struct ameba_object *o = st->host->objects;

	return i > 0 && st->obj_unit[i] && st->obj_unit[i - 1] == st->obj_unit[i] &&
	       o[i].start - o[i - 1].end <= ADJACENT_GAP;
}

/* The host's bin named name, or NULL. */
static const struct ameba_object *host_bin(const struct ameba_host *h, const char *name)
{
	for (uint32_t b = 0; b < h->nr_bins; b++)
		if (h->bins[b].name && !strcmp(h->bins[b].name, name))
			return &h->bins[b];
	return NULL;
}

/*
 * The units apart from the address space (Notes), after the objects were
 * mapped: every site bin of the host with blocks ever allocated but none
 * live in this listing, or CHURN_FACTOR times more than live, becomes (and
 * stays) apart; the kind units are apart
 * from their creation. An apart site whose name is no bin any more (a
 * later site with the same first frame deepened it into "name <- caller"
 * bins) retires: its deeper bins are units of their own. Each apart unit
 * is measured by its bin and counts as live (nr_live >= 1). Also collects
 * the exception list: the bins of the apart units.
 */
static int units_apart(struct nway *st)
{
	const struct ameba_host *h = st->host;
	char key[4200];

	st->nr_xnames = 0;
	if (!st->use_bins)
		return 0;
	for (uint32_t b = 0; b < h->nr_bins; b++) {
		const struct ameba_object *hb = &h->bins[b];
		int64_t u;

		if (st->kinds_apart && hb->name &&
		    (hb->kind == AMEBA_OBJ_STACK || hb->kind == AMEBA_OBJ_TLS)) {
			/* also with none listed: the threads may all be gone */
			snprintf(key, sizeof(key), "k:%s", hb->name);
			u = unit_get(st, key);
			if (u < 0)
				return AMEBA_ENOMEM;
			st->units[u].apart = 1;
			continue;
		}
		if (hb->kind != AMEBA_OBJ_BIN || !hb->name || !hb->nr_blocks)
			continue;
		snprintf(key, sizeof(key), "s:%s", hb->name);
		u = unit_get(st, key);
		if (u < 0)
			return AMEBA_ENOMEM;
		/* no live block, or short-lived ones: far more blocks allocated
		 * than alive (wl_thread_churn's scratch buffers: 4 alive of
		 * hundreds by the time a listing sees them) */
		if (!st->units[u].apart && (!st->units[u].nr_live ||
		    hb->nr_blocks >= CHURN_FACTOR * ((uint64_t)st->units[u].nr_live + 2))) {
			st->units[u].apart = 1;
			st->units[u].apart_plan = st->nr_plans + 1;
		}
	}
	for (uint32_t u = 0; u < st->nr_units; u++) {
		struct unit *un = &st->units[u];
		const struct ameba_object *hb;

		if (!un->apart || un->retired)
			continue;
		hb = host_bin(h, un->key + 2);
		if (!hb && un->key[0] == 's') {
			un->retired = 1;
			un->nr_live = 0;
			continue;
		}
		if (!hb)
			continue;	/* a kind bin the host no longer lists: cannot be */
		un->bin = hb->name;
		un->bin_blocks = hb->nr_blocks;
		un->bin_bytes = hb->sz_bytes;
		if (!un->nr_live) {
			un->nr_live = 1;
			un->live_bytes = hb->sz_bytes ? hb->sz_bytes : 1;
		}
		if (grow_array((void **)&st->xnames, &st->cap_xnames, st->nr_xnames + 1,
			       sizeof(*st->xnames)))
			return AMEBA_ENOMEM;
		st->xnames[st->nr_xnames++] = un->key + 2;
	}
	return 0;
}

/*
 * Site labels that a later site deepened: the agent's table keeps the label
 * an object had when it was listed ("allocate@new_allocator.h:137"), the host's
 * bins have the names the oracle has at exit ("... <- main@cxx.cpp:140",
 * "... <- main@cxx.cpp:141"), and which of them a stale-labelled block is
 * cannot be told. Such a unit retires (its blocks map to no unit), and the
 * bins it became are made units apart: measured by bin, which counts every
 * block of theirs whatever its label, and left out of the spans.
 */
static int units_stale(struct nway *st)
{
	const struct ameba_host *h = st->host;
	char key[4200];

	if (!st->use_bins || !h->nr_bins)
		return 0;
	for (uint32_t u = 0; u < st->nr_units; u++) {
		const char *name = st->units[u].key + 2;
		size_t len = strlen(name);
		int deeper = 0;

		if (st->units[u].key[0] != 's' || st->units[u].retired || host_bin(h, name))
			continue;
		for (uint32_t b = 0; b < h->nr_bins; b++) {
			const char *bn = h->bins[b].name;
			int64_t d;

			if (!bn || strncmp(bn, name, len) || strncmp(bn + len, " <- ", 4))
				continue;
			snprintf(key, sizeof(key), "s:%s", bn);
			d = unit_get(st, key);
			if (d < 0)
				return AMEBA_ENOMEM;
			if (!st->units[d].apart)
				st->units[d].apart_plan = st->nr_plans + 1;
			st->units[d].apart = 1;
			deeper = 1;
		}
		if (deeper && !st->units[u].found)
			st->units[u].retired = 1;
	}
	return 0;
}

/* Maps the host's objects to units and collects every unit's ranges. */
static int units_refresh(struct nway *st)
{
	const struct ameba_host *h = st->host;
	char key[4200];
	uint32_t total = 0;

	if (grow_array((void **)&st->obj_unit, &st->cap_obj_unit, h->nr_objects + 1,
		       sizeof(*st->obj_unit)))
		return AMEBA_ENOMEM;
	for (uint32_t u = 0; u < st->nr_units; u++) {
		struct unit *un = &st->units[u];

		un->nr_live = un->is_line;
		un->live_bytes = un->is_line ? LINE_BYTES : 0;
		un->nr_ranges = 0;
		un->hull = 0;
		un->bin = NULL;
		un->owner = 0;
		if (un->is_line) {
			un->lo = un->obj.start;
			un->hi = un->obj.end;
		}
	}
	if (units_stale(st))
		return AMEBA_ENOMEM;
	st->kinds_apart = 0;
	if (st->use_bins)
		for (uint32_t b = 0; b < h->nr_bins; b++)
			st->kinds_apart |= h->bins[b].kind == AMEBA_OBJ_STACK ||
					   h->bins[b].kind == AMEBA_OBJ_TLS;
	for (uint32_t i = 0; i < h->nr_objects; i++) {
		const struct ameba_object *o = &h->objects[i];
		int kind_bin = st->kinds_apart && (o->kind == AMEBA_OBJ_STACK || o->kind == AMEBA_OBJ_TLS);
		struct unit *un;
		int64_t u;

		st->obj_unit[i] = 0;
		if (!obj_usable(o))
			continue;
		if (kind_bin)
			snprintf(key, sizeof(key), "k:%s", o->kind == AMEBA_OBJ_STACK ? "[stack]" : "[tls]");
		else if (is_site_kind(o))
			snprintf(key, sizeof(key), "s:%s", o->site);
		else
			snprintf(key, sizeof(key), "o:%llu", (unsigned long long)o->id);
		u = unit_get(st, key);
		if (u < 0)
			return AMEBA_ENOMEM;
		un = &st->units[u];
		if (un->retired)
			continue;	/* a stale label: its blocks are its deeper bins' */
		if (kind_bin || un->apart) {
			/* apart: counted for the unit, in no span */
			un->apart = 1;
			un->nr_live++;
			un->live_bytes += o->sz_bytes ? o->sz_bytes : o->end - o->start;
			continue;
		}
		st->obj_unit[i] = (uint32_t)u + 1;
		if (!un->nr_live) {
			un->lo = o->start;
			un->hi = o->end;
			un->obj_first = i;
		}
		un->nr_live++;
		un->live_bytes += o->sz_bytes ? o->sz_bytes : o->end - o->start;
		un->lo = o->start < un->lo ? o->start : un->lo;
		un->hi = o->end > un->hi ? o->end : un->hi;
		if (!merges(st, i))
			un->nr_ranges++;
	}
	if (units_apart(st))
		return AMEBA_ENOMEM;
	/* offsets into the unit range table (st->ranges is rebuilt per plan:
	 * the unit table goes first) */
	st->nr_ranges = 0;
	for (uint32_t u = 0; u < st->nr_units; u++) {
		struct unit *un = &st->units[u];

		if (un->apart) {
			un->range_off = total;
			un->nr_ranges = 0;
			continue;
		}
		/*
		 * A site with several blocks: its bin, resolved by the monitor
		 * per access, counts every block whole (new ones too) for no
		 * ranges, where ranges would list 10^5 interleaved blocks or
		 * fall back to an overlapping hull.
		 */
		if (st->use_bins && un->key[0] == 's' && un->nr_live) {
			const char *site = un->key + 2;

			/* a site that allocated more than once (in all: short-lived
			 * blocks come and go between listings, wl_thread_churn's
			 * scratch buffers, 4 live of 10,000) */
			for (uint32_t b = 0; b < h->nr_bins && !un->bin; b++)
				if (h->bins[b].name && !strcmp(h->bins[b].name, site) &&
				    (un->nr_live > 1 || h->bins[b].nr_blocks > 1))
					un->bin = h->bins[b].name;
			if (un->bin) {
				un->range_off = total;
				un->nr_ranges = 0;
				continue;
			}
		}
		if (un->nr_live && un->nr_ranges > st->max_ranges / 4) {
			un->hull = 1;
			un->nr_ranges = 1;
		}
		if (un->is_line)
			un->nr_ranges = 1;
		un->range_off = total;
		total += un->nr_ranges;
	}
	if (grow_array((void **)&st->ranges, &st->cap_ranges, 2 * (total + 1), sizeof(*st->ranges)))
		return AMEBA_ENOMEM;
	for (uint32_t u = 0; u < st->nr_units; u++) {
		struct unit *un = &st->units[u];

		if (un->hull || un->is_line) {
			st->ranges[2 * un->range_off] = un->lo;
			st->ranges[2 * un->range_off + 1] = un->hi;
		}
		un->nr_ranges = un->hull || un->is_line ? un->nr_ranges : 0;
	}
	for (uint32_t i = 0; i < h->nr_objects; i++) {
		uint32_t u = st->obj_unit[i];
		struct unit *un;
		uint32_t r;

		if (!u)
			continue;
		un = &st->units[u - 1];
		if (un->hull || un->bin)
			continue;
		if (merges(st, i)) {
			r = un->range_off + un->nr_ranges - 1;
			st->ranges[2 * r + 1] = h->objects[i].end;
			continue;
		}
		r = un->range_off + un->nr_ranges++;
		st->ranges[2 * r] = h->objects[i].start;
		st->ranges[2 * r + 1] = h->objects[i].end;
	}
	st->nr_ranges = total;
	return 0;
}

/* The presentation of unit u: its single object, its bin, or its line. */
static int unit_describe(struct nway *st, uint32_t u)
{
	struct unit *un = &st->units[u];
	const struct ameba_host *h = st->host;
	struct ameba_object o;
	char *name, *site;

	if (un->is_line || !un->nr_live)
		return 0;
	if (un->apart) {
		/* by its bin: the oracle's bin, named as the host names it now */
		memset(&o, 0, sizeof(o));
		o.kind = un->key[0] == 'k' ? (un->key[3] == 's' ? AMEBA_OBJ_STACK : AMEBA_OBJ_TLS) :
			 AMEBA_OBJ_BIN;
		o.name = un->key + 2;
		o.site = o.kind == AMEBA_OBJ_BIN ? o.name : NULL;
		/* a kind bin has no count of its own: its live blocks' */
		o.sz_bytes = un->bin_bytes ? un->bin_bytes : un->live_bytes;
		o.nr_blocks = un->bin_blocks ? (uint32_t)un->bin_blocks : un->nr_live;
		o.live = 1;
		for (uint32_t b = 0; b < h->nr_bins; b++)
			if (h->bins[b].name && !strcmp(h->bins[b].name, o.name)) {
				o.id = h->bins[b].id;
				break;
			}
	} else {
		o = h->objects[un->obj_first];
	}
	if (!un->apart && un->key[0] == 's' && un->nr_live > 1) {
		memset(&o, 0, sizeof(o));
		o.kind = AMEBA_OBJ_BIN;
		o.name = h->objects[un->obj_first].site;
		o.site = o.name;
		o.start = un->lo;
		o.end = un->hi;
		o.sz_bytes = un->live_bytes;
		o.nr_blocks = un->nr_live;
		o.live = 1;
		for (uint32_t b = 0; b < h->nr_bins; b++)
			if (h->bins[b].name && !strcmp(h->bins[b].name, o.name)) {
				o.id = h->bins[b].id;
				break;
			}
	}
	name = strdup(o.name ? o.name : "?");
	site = o.site ? strdup(o.site) : NULL;
	if (!name || (o.site && !site)) {
		free(name);
		free(site);
		return AMEBA_ENOMEM;
	}
	free((char *)un->obj.name);
	free((char *)un->obj.site);
	un->obj = o;
	un->obj.name = name;
	un->obj.site = site;
	return 0;
}

/* A unit for the cache line at addr (memory outside every object). */
static int64_t line_unit(struct nway *st, uintptr_t addr)
{
	char key[40];
	int64_t u;
	struct unit *un;

	snprintf(key, sizeof(key), "l:%lx", (unsigned long)addr);
	u = unit_get(st, key);
	if (u < 0)
		return -1;
	un = &st->units[u];
	if (!un->is_line) {
		un->is_line = 1;
		un->line_name = malloc(40);
		if (!un->line_name)
			return -1;
		snprintf(un->line_name, 40, "[line 0x%lx]", (unsigned long)addr);
		un->obj.kind = AMEBA_OBJ_OTHER;
		un->obj.name = un->line_name;
		un->obj.start = addr;
		un->obj.end = addr + LINE_BYTES;
		un->obj.sz_bytes = LINE_BYTES;
		un->obj.nr_blocks = 1;
		un->obj.live = 1;
		un->nr_live = 1;
		un->live_bytes = LINE_BYTES;
		un->lo = addr;
		un->hi = addr + LINE_BYTES;
	}
	return u;
}

/* Index of the first object whose end is above addr. */
static uint32_t obj_first_after(const struct ameba_host *h, uintptr_t addr)
{
	uint32_t lo = 0, hi = h->nr_objects;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (h->objects[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The usable object containing addr strictly inside (start < addr < end), or NULL. */
static const struct ameba_object *obj_across(const struct nway *st, uintptr_t addr)
{
	const struct ameba_host *h = st->host;
	uint32_t i = obj_first_after(h, addr);

	for (; i < h->nr_objects && h->objects[i].start < addr; i++)
		if (st->obj_unit[i] && h->objects[i].start < addr && addr < h->objects[i].end)
			return &h->objects[i];
	return NULL;
}

/*
 * The distinct units with an object in [s, e), not found yet, up to max + 1
 * of them, into out; *multi says whether one is a site with several blocks.
 */
static uint32_t span_units(const struct nway *st, uintptr_t s, uintptr_t e, uint32_t *out,
			   uint32_t max, int *multi)
{
	const struct ameba_host *h = st->host;
	uint32_t n = 0;

	*multi = 0;
	for (uint32_t i = obj_first_after(h, s); i < h->nr_objects && h->objects[i].start < e; i++) {
		uint32_t u = st->obj_unit[i], k;

		if (!u || st->units[u - 1].found)
			continue;
		for (k = 0; k < n && out[k] != u - 1; k++)
			;
		if (k < n)
			continue;
		if (n == max + 1)
			break;
		out[n++] = u - 1;
		*multi |= st->units[u - 1].key[0] == 's' && st->units[u - 1].nr_live > 1;
	}
	return n;
}

/* Emits [s, e) minus the objects of found units, as ranges; their count. */
static int span_emit(struct nway *st, uintptr_t s, uintptr_t e, uint32_t *nr)
{
	const struct ameba_host *h = st->host;
	uintptr_t at = s;
	uint32_t before = st->nr_ranges;

	for (uint32_t i = obj_first_after(h, s); i < h->nr_objects && h->objects[i].start < e; i++) {
		uint32_t u = st->obj_unit[i];
		uintptr_t os = h->objects[i].start, oe = h->objects[i].end;

		if (!u || !st->units[u - 1].found)
			continue;
		if (os > at && ranges_push(st, at, os))
			return AMEBA_ENOMEM;
		if (oe > at)
			at = oe;
	}
	if (at < e && ranges_push(st, at, e))
		return AMEBA_ENOMEM;
	*nr = st->nr_ranges - before;
	return 0;
}

static int unit_emit(struct nway *st, uint32_t u, uint32_t *nr)
{
	const struct unit *un = &st->units[u];

	if (un->bin) {
		/* taken by the next counter_add() (bn_mark) */
		if (grow_array((void **)&st->bnames, &st->cap_bnames, st->nr_bnames + 1,
			       sizeof(*st->bnames)))
			return AMEBA_ENOMEM;
		st->bnames[st->nr_bnames++] = un->bin;
		return 0;
	}

	for (uint32_t r = 0; r < un->nr_ranges; r++) {
		uintptr_t a = st->ranges[2 * (un->range_off + r)];
		uintptr_t b = st->ranges[2 * (un->range_off + r) + 1];

		if (ranges_push(st, a, b))
			return AMEBA_ENOMEM;
	}
	*nr += un->nr_ranges;
	return 0;
}

static int region_emit(struct nway *st, const struct region *r, uint32_t *off, uint32_t *nr)
{
	*off = st->nr_ranges;
	*nr = 0;
	if (r->kind == R_SPAN)
		return span_emit(st, r->start, r->end, nr);
	if (r->kind == R_UNIT)
		return unit_emit(st, r->unit, nr);
	for (uint32_t k = 0; k < r->nr_set; k++)
		if (unit_emit(st, r->set[k], nr))
			return AMEBA_ENOMEM;
	return 0;
}

static int region_single(const struct region *r)
{
	return r->kind == R_UNIT;
}

static void region_free(struct region *r)
{
	free(r->set);
	r->set = NULL;
	r->nr_set = 0;
}

/* Does region r hold any object (or is it a line)? */
static int region_has_objects(const struct nway *st, const struct region *r)
{
	uint32_t tmp[2];
	int multi;

	if (r->kind != R_SPAN)
		return 1;
	return span_units(st, r->start, r->end, tmp, 0, &multi) > 0;
}

/* ---- the queue ---- */

static int q_push(struct search *s, const struct region *r)
{
	if (grow_array((void **)&s->q, &s->cap_q, s->nr_q + 1, sizeof(*s->q)))
		return AMEBA_ENOMEM;
	s->q[s->nr_q++] = *r;
	return 0;
}

static int cmp_share(const void *a, const void *b)
{
	const struct region *x = a, *y = b;

	if (x->share != y->share)
		return (x->share < y->share) - (x->share > y->share);
	/* ties: singles first, then lower addresses (deterministic) */
	if (region_single(x) != region_single(y))
		return region_single(y) - region_single(x);
	return (x->start > y->start) - (x->start < y->start);
}

static void q_compact(struct search *s)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < s->nr_q; i++) {
		if (s->q[i].dead)
			region_free(&s->q[i]);
		else
			s->q[k++] = s->q[i];
	}
	s->nr_q = k;
	qsort(s->q, s->nr_q, sizeof(*s->q), cmp_share);
}

/* What r holds changed: it is measured as is next, its own counts from zero. */
static void region_remeasure(struct region *r)
{
	r->fresh = 1;
	r->nr_meas = 0;
	r->sum_v = r->sum_t = 0;
	r->sum_ns = 0;
}

/*
 * Puts the units apart that search s never queued into its apart set (a
 * new one when it has none left): measured as is next, then split by unit
 * as any set. A unit queued once and dropped (it counted nothing) is not
 * queued again: a site freed long ago would be measured for ever.
 */
static int search_apart(struct nway *st, struct search *s)
{
	uint64_t bit = 1ull << ((uint32_t)(s - st->searches) % 64);
	struct region *ap = NULL, r;
	uint32_t nr = 0;

	for (uint32_t u = 0; u < st->nr_units; u++) {
		struct unit *un = &st->units[u];

		if (!un->apart || un->retired || un->found || (un->queued & bit) || !un->bin ||
		    un->owner)
			continue;
		if (!ap) {
			for (uint32_t i = 0; i < s->nr_q && !ap; i++)
				if (s->q[i].apart && s->q[i].kind == R_SET && !s->q[i].dead)
					ap = &s->q[i];
			if (!ap) {
				memset(&r, 0, sizeof(r));
				r.kind = R_SET;
				r.apart = 1;
				r.start = UINTPTR_MAX;	/* ties: after the spans */
				r.share = 1.0 / st->n;
				if (q_push(s, &r))
					return AMEBA_ENOMEM;
				ap = &s->q[s->nr_q - 1];
			}
		}
		if (grow_array((void **)&ap->set, &nr, ap->nr_set + 1, sizeof(*ap->set)))
			return AMEBA_ENOMEM;
		ap->set[ap->nr_set++] = u;
		un->queued |= bit;
		region_remeasure(ap);
		ap->protect = 0;	/* quiet when first measured: dropped */
		un->owner = (uint32_t)(ap - s->q) + 1;
	}
	/* one unit: a unit region */
	if (ap && ap->nr_set == 1) {
		ap->kind = R_UNIT;
		ap->unit = ap->set[0];
		region_free(ap);
	}
	return 0;
}

/*
 * How much of a newcomer (Notes) unit u is: 0 for none; else blocks its
 * site allocated since the search's round began, plus 2^40 when the unit
 * was first listed since (those rank first, newest first, by born_plan).
 */
static uint64_t newcomer_rank(const struct nway *st, uint32_t u)
{
	const struct unit *un = &st->units[u];
	const struct ameba_object *hb;

	if (un->found || un->retired || un->is_line || !un->nr_live || un->key[0] != 's')
		return 0;
	hb = host_bin(st->host, un->key + 2);
	if (!hb)
		return 0;
	if (un->born_plan > st->round_plan)
		return (1ull << 40) + ((uint64_t)un->born_plan << 20) +
		       (hb->nr_blocks < (1u << 20) ? hb->nr_blocks : (1u << 20) - 1);
	/* nr_blocks is 32 bits: under 2^40 */
	return hb->nr_blocks > un->round_blocks ? hb->nr_blocks - un->round_blocks : 0;
}

/*
 * The newcomers (Notes), at most max into out: site units, not found, that
 * the host has a bin for, first listed since the search's round began
 * (newest first, then by blocks allocated), then those whose site
 * allocated again since (most blocks first).
 */
static uint32_t newcomers(const struct nway *st, uint32_t *out, uint32_t max)
{
	uint64_t rank[MAX_WATCH];
	uint32_t nr = 0;

	max = max < MAX_WATCH ? max : MAX_WATCH;
	for (uint32_t u = 0; u < st->nr_units && max; u++) {
		uint64_t v = newcomer_rank(st, u);
		uint32_t k;

		if (!v)
			continue;
		/* insertion into the sorted few */
		for (k = nr; k > 0 && rank[k - 1] < v; k--)
			if (k < max) {
				out[k] = out[k - 1];
				rank[k] = rank[k - 1];
			}
		if (k < max) {
			out[k] = u;
			rank[k] = v;
			nr += nr < max;
		}
	}
	return nr;
}

/* Unit u is measured by its bin from now on, in no span (units apart). */
static void unit_apart_now(struct nway *st, uint32_t u)
{
	struct unit *un = &st->units[u];
	const struct ameba_object *hb = host_bin(st->host, un->key + 2);

	un->apart = 1;
	if (hb) {
		un->bin = hb->name;
		un->bin_blocks = hb->nr_blocks;
		un->bin_bytes = hb->sz_bytes;
	}
}

/*
 * A rescan's first plan: the newcomers that no final interval counted (first
 * listed in the interval that showed the new phase) are measured first too,
 * each as a unit by its bin, apart from the spans from now on (Notes).
 */
static int search_newcomers(struct nway *st, struct search *s)
{
	uint64_t bit = 1ull << ((uint32_t)(s - st->searches) % 64);
	uint32_t nc[MAX_WATCH], nr = newcomers(st, nc, st->n / 2 < MAX_WATCH ? st->n / 2 : MAX_WATCH);

	for (uint32_t i = 0; i < nr; i++) {
		struct unit *un = &st->units[nc[i]];
		struct region r;

		if (un->queued & bit)
			continue;	/* seeded with its count already */
		memset(&r, 0, sizeof(r));
		r.kind = R_UNIT;
		r.unit = nc[i];
		r.share = 1.0 / st->n;
		r.fresh = 1;
		if (q_push(s, &r) ||
		    grow_array((void **)&st->xnames, &st->cap_xnames, st->nr_xnames + 1,
			       sizeof(*st->xnames)))
			return AMEBA_ENOMEM;
		unit_apart_now(st, nc[i]);
		un->queued |= bit;
		un->owner = s->nr_q;
		/* the spans leave its blocks out from this interval on */
		st->xnames[st->nr_xnames++] = un->key + 2;
		if (unit_describe(st, nc[i]))
			return AMEBA_ENOMEM;
	}
	return 0;
}

/* The initial n regions: the hull of all objects in n equal parts. */
static int search_init(struct nway *st, struct search *s)
{
	const struct ameba_host *h = st->host;
	uintptr_t lo = UINTPTR_MAX, hi = 0, prev = 0;

	for (uint32_t i = 0; i < h->nr_objects; i++)
		if (st->obj_unit[i]) {
			lo = h->objects[i].start < lo ? h->objects[i].start : lo;
			hi = h->objects[i].end > hi ? h->objects[i].end : hi;
		}
	s->started = 1;
	for (uint32_t u = 0; u < st->nr_units; u++)
		st->units[u].queued &= ~(1ull << ((uint32_t)(s - st->searches) % 64));
	/* a rescan's newcomers, queued already (rescan_check) */
	for (uint32_t i = 0; i < s->nr_q; i++)
		if (s->q[i].kind == R_UNIT) {
			st->units[s->q[i].unit].queued |= 1ull << ((uint32_t)(s - st->searches) % 64);
			st->units[s->q[i].unit].owner = i + 1;
		}
	if (st->nr_rescans && s->round == st->rescan_round && search_newcomers(st, s))
		return AMEBA_ENOMEM;
	if (lo >= hi) {
		lo = 0;
		hi = UINTPTR_MAX;
	}
	for (uint32_t k = 1; k <= st->n; k++) {
		struct region r;
		uintptr_t b = k == st->n ? UINTPTR_MAX : lo + (hi - lo) / st->n * k;

		if (k < st->n) {
			const struct ameba_object *o = obj_across(st, b);

			if (o)
				b = b - o->start <= o->end - b ? o->start : o->end;
		}
		if (b <= prev)
			continue;
		memset(&r, 0, sizeof(r));
		r.kind = R_SPAN;
		r.start = prev;
		r.end = b;
		r.share = 1.0 / st->n;
		r.fresh = 1;
		r.protect = 1;	/* all of the search: as if ranked on top */
		if (q_push(s, &r))
			return AMEBA_ENOMEM;
		prev = b;
	}
	st->round_plan = st->nr_plans + 1;	/* what is listed now, these spans cover */
	for (uint32_t u = 0; u < st->nr_units; u++) {
		const struct ameba_object *hb = st->units[u].key[0] == 's' ?
						host_bin(h, st->units[u].key + 2) : NULL;

		st->units[u].round_blocks = hb ? hb->nr_blocks : 0;
	}
	return search_apart(st, s);
}

/*
 * Resolution before each plan: spans holding one unit become that unit,
 * spans of few units with interleaved site blocks become sets, and every
 * unit has at most one owner in the queue (a later duplicate is dropped).
 */
static int search_resolve(struct nway *st, struct search *s)
{
	uint32_t buf[64];

	for (uint32_t u = 0; u < st->nr_units; u++)
		st->units[u].owner = 0;
	for (uint32_t i = 0; i < s->nr_q; i++) {
		struct region *r = &s->q[i];

		if (r->kind != R_UNIT)
			continue;
		if (st->units[r->unit].found || !st->units[r->unit].nr_live ||
		    st->units[r->unit].owner) {
			r->dead = 1;
			continue;
		}
		st->units[r->unit].owner = i + 1;
		if (st->units[r->unit].apart_plan == st->nr_plans + 1 && r->nr_meas + r->zero_streak) {
			/* measured on its few live blocks' ranges until now, by
			 * its bin from now on: the old estimate says nothing
			 * (wl_thread_churn's scratch buffers: 0.35% on 4
			 * blocks, 69% by bin); measured again first */
			region_remeasure(r);
			r->zero_streak = 0;
			r->zero_ns = 0;
			r->share = r->share > 1.0 / st->n ? r->share : 1.0 / st->n;
		}
	}
	for (uint32_t i = 0; i < s->nr_q; i++) {
		struct region *r = &s->q[i];
		uint32_t k = 0;

		if (r->kind != R_SET || r->dead)
			continue;
		for (uint32_t j = 0; j < r->nr_set; j++) {
			struct unit *un = &st->units[r->set[j]];

			if (!un->found && un->nr_live && !un->owner) {
				un->owner = i + 1;
				r->set[k++] = r->set[j];
			}
		}
		r->nr_set = k;
		if (k == 0)
			r->dead = 1;
		else if (k == 1) {
			r->kind = R_UNIT;
			r->unit = r->set[0];
			region_free(r);
			r->nr_meas = 0;
			r->fresh = 1;
		}
	}
	for (uint32_t i = 0; i < s->nr_q; i++) {
		struct region *r = &s->q[i];
		uint32_t max = st->group < 63 ? st->group : 63, nr, k = 0;
		int multi;

		if (r->kind != R_SPAN || r->dead)
			continue;
		nr = span_units(st, r->start, r->end, buf, max, &multi);
		if (nr == 0) {
			if (r->end - r->start <= LINE_BYTES) {
				int64_t u = line_unit(st, r->start);

				if (u < 0)
					return AMEBA_ENOMEM;
				r->kind = R_UNIT;
				r->unit = (uint32_t)u;
				r->fresh = 1;
			}
			continue;
		}
		if (nr > 1 && !(nr <= max && multi))
			continue;
		for (uint32_t j = 0; j < nr; j++)
			if (!st->units[buf[j]].owner)
				buf[k++] = buf[j];
		if (k == 0) {
			r->dead = 1;
			continue;
		}
		for (uint32_t j = 0; j < k; j++)
			st->units[buf[j]].owner = i + 1;
		region_remeasure(r);
		if (k == 1) {
			r->kind = R_UNIT;
			r->unit = buf[0];
		} else {
			r->kind = R_SET;
			r->set = malloc(k * sizeof(*r->set));
			if (!r->set)
				return AMEBA_ENOMEM;
			memcpy(r->set, buf, k * sizeof(*r->set));
			r->nr_set = k;
		}
	}
	if (search_apart(st, s))
		return AMEBA_ENOMEM;
	q_compact(s);
	/* names for the progress line and the contexts, while the tables are valid */
	for (uint32_t i = 0; i < s->nr_q; i++)
		if (s->q[i].kind == R_UNIT && unit_describe(st, s->q[i].unit))
			return AMEBA_ENOMEM;
	return 0;
}

/* Splits r into two halves a and b; 0, or 1 when r cannot be split. */
static int region_split(struct nway *st, const struct region *r, struct region *a,
			struct region *b)
{
	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	a->protect = b->protect = 1;
	if (r->kind == R_SET) {
		uint64_t total = 0, acc = 0;
		uint32_t cut = 1;

		/* halves by bytes, in address order of the units */
		for (uint32_t k = 0; k < r->nr_set; k++)
			total += st->units[r->set[k]].live_bytes;
		for (uint32_t k = 0; k + 1 < r->nr_set; k++) {
			acc += st->units[r->set[k]].live_bytes;
			cut = k + 1;
			if (2 * acc >= total)
				break;
		}
		a->kind = b->kind = R_SET;
		a->set = malloc(cut * sizeof(*a->set));
		b->set = malloc((r->nr_set - cut) * sizeof(*b->set));
		if (!a->set || !b->set) {
			region_free(a);
			region_free(b);
			return AMEBA_ENOMEM;
		}
		memcpy(a->set, r->set, cut * sizeof(*a->set));
		memcpy(b->set, r->set + cut, (r->nr_set - cut) * sizeof(*b->set));
		a->nr_set = cut;
		b->nr_set = r->nr_set - cut;
		if (a->nr_set == 1) {
			a->kind = R_UNIT;
			a->unit = a->set[0];
			region_free(a);
		}
		if (b->nr_set == 1) {
			b->kind = R_UNIT;
			b->unit = b->set[0];
			region_free(b);
		}
		return 0;
	}
	if (r->kind != R_SPAN)
		return 1;
	{
		const struct ameba_host *h = st->host;
		uintptr_t lo = 0, hi = 0, mid;
		int any = 0;

		for (uint32_t i = obj_first_after(h, r->start);
		     i < h->nr_objects && h->objects[i].start < r->end; i++) {
			uintptr_t os = h->objects[i].start, oe = h->objects[i].end;

			if (!st->obj_unit[i] || st->units[st->obj_unit[i] - 1].found)
				continue;
			os = os < r->start ? r->start : os;
			oe = oe > r->end ? r->end : oe;
			if (!any)
				lo = os;
			hi = oe > hi ? oe : hi;
			any = 1;
		}
		if (!any) {
			lo = r->start;
			hi = r->end;
		}
		mid = lo + (hi - lo) / 2;
		if (!any && hi - lo > LINE_BYTES)
			mid &= ~(uintptr_t)(LINE_BYTES - 1);
		if (any) {
			const struct ameba_object *o = obj_across(st, mid);

			if (o) {
				uintptr_t near = mid - o->start <= o->end - mid ? o->start : o->end;
				uintptr_t far = near == o->start ? o->end : o->start;

				if (near <= lo || near >= hi)
					near = far;
				if (near > lo && near < hi)
					mid = near;
			}
		}
		if (mid <= r->start || mid >= r->end)
			return 1;
		a->kind = b->kind = R_SPAN;
		a->start = r->start;
		a->end = mid;
		b->start = mid;
		b->end = r->end;
	}
	return 0;
}

/* ---- planning ---- */

static int slot_add(struct search *s, int type, uint32_t qi, const struct region *child)
{
	struct slot *sl;

	if (grow_array((void **)&s->slots, &s->cap_slots, s->nr_slots + 1, sizeof(*s->slots)))
		return AMEBA_ENOMEM;
	sl = &s->slots[s->nr_slots++];
	memset(sl, 0, sizeof(*sl));
	sl->type = type;
	sl->qi = qi;
	if (child)
		sl->child = *child;
	return 0;
}

static void slots_clear(struct search *s)
{
	for (uint32_t i = 0; i < s->nr_slots; i++)
		if (s->slots[i].type == SLOT_CHILD)
			region_free(&s->slots[i].child);
	s->nr_slots = 0;
}

static int found_add(struct nway *st, struct search *s, uint32_t u, double share, double v,
		     double t, uint64_t ns)
{
	struct found *f;
	uint64_t bit = s->thread < 0 ? 1ull << 63 : 1ull << (s->thread % 63);

	for (uint32_t i = 0; i < st->nr_found; i++)
		if (st->found[i].unit == u) {
			st->found[i].found_by |= bit;
			return 0;
		}
	if (grow_array((void **)&st->found, &st->cap_found, st->nr_found + 1, sizeof(*st->found)))
		return AMEBA_ENOMEM;
	f = &st->found[st->nr_found];
	memset(f, 0, sizeof(*f));
	f->unit = u;
	f->round = s->round;
	f->search_share = share;
	f->search_v = v;
	f->search_t = t;
	f->search_ns = ns;
	f->found_by = bit;
	for (uint32_t k = 0; k < st->nr_metrics; k++) {
		int m = st->metrics[k];

		if (st->nr_threads_cap && (strategy_grow_pt(&f->pt[m], 0, st->nr_threads_cap) ||
					   strategy_grow_pt(&f->program_pt[m], 0, st->nr_threads_cap)))
			return AMEBA_ENOMEM;
	}
	st->units[u].found = 1;
	if (unit_describe(st, u))
		return AMEBA_ENOMEM;
	st->nr_found++;
	return 0;
}

/*
 * Ends the current round of search s: the singles among the top n regions
 * are found. With more=1 the search goes on into what is left.
 */
static int search_terminate(struct nway *st, struct search *s, int why)
{
	uint32_t nr = 0;
	double left = 0;

	s->ended_by = why;
	for (uint32_t i = 0; i < s->nr_q && i < st->n && nr < st->n; i++) {
		struct region *r = &s->q[i];

		if (!region_single(r) || !r->nr_meas || r->share <= 0)
			continue;
		if (found_add(st, s, r->unit, r->share, r->sum_v, r->sum_t, r->sum_ns))
			return AMEBA_ENOMEM;
		r->dead = 1;
		nr++;
	}
	q_compact(s);
	for (uint32_t i = 0; i < s->nr_q; i++)
		left += s->q[i].share;
	st->host->log(st->host, "search%s round %u ended (%s): %u objects found, %.1f%% left",
		      s->who, s->round + 1, end_names[why], nr, 100 * left);
	if (st->more && nr && s->nr_q && left >= st->unsearched &&
	    s->nr_intervals < st->max_intervals) {
		s->round++;
		for (uint32_t i = 0; i < s->nr_q; i++)
			s->q[i].fresh = 1;	/* measure the rest again, minus the found */
		return 0;
	}
	s->phase = S_DONE;
	return 0;
}

/*
 * The share the queue does not explain (1 - the sum of its estimates, each
 * from its own interval) and the stalest region not measured for
 * STALE_INTERVALS (index + 1, or 0). A large deficit means some region's
 * estimate is out of date (measured in another phase, e.g. while the
 * program initialised other arrays): it is measured again before the
 * search goes on or ends.
 */
static uint32_t search_stale(const struct nway *st, const struct search *s)
{
	double sum = 0;
	uint32_t best = 0;

	for (uint32_t i = 0; i < s->nr_q; i++)
		sum += s->q[i].share;
	if (1 - sum <= st->unsearched)
		return 0;
	for (uint32_t i = 0; i < s->nr_q; i++) {
		const struct region *r = &s->q[i];

		if (region_single(r) || r->zero_streak || r->fresh ||
		    r->meas_at + STALE_INTERVALS > s->nr_intervals)
			continue;
		if (!best || r->meas_at < s->q[best - 1].meas_at)
			best = i + 1;
	}
	return best;
}

/* Checks the termination rules; 1 when the round ended. */
static int search_check_end(struct nway *st, struct search *s)
{
	uint32_t top = st->n - 1, k;
	double unsearched = 0;
	int any_single = 0, limbo = 0;

	if (s->nr_q == 0) {
		s->ended_by = END_EMPTY;
		s->phase = S_DONE;
		return 1;
	}
	/* a quiet region that may come back (a phase), or one measured long
	 * ago while the queue misses a good part of the total, holds it */
	for (uint32_t i = 0; i < s->nr_q; i++)
		limbo |= s->q[i].zero_streak > 0;
	limbo |= search_stale(st, s) > 0;
	for (k = 0; k < s->nr_q && k < top; k++)
		if (!region_single(&s->q[k]) || !s->q[k].nr_meas || s->q[k].zero_streak)
			break;
	if (!limbo && (k == top || k == s->nr_q))
		return search_terminate(st, s, END_SINGLES) ? -1 : 1;

	for (uint32_t i = 0; i < s->nr_q; i++) {
		if (region_single(&s->q[i]) && s->q[i].nr_meas)
			any_single = 1;
		else
			unsearched += s->q[i].share;
	}
	if (any_single && !limbo && s->nr_intervals > 1 && unsearched < st->unsearched)
		return search_terminate(st, s, END_UNSEARCHED) ? -1 : 1;
	if (s->nr_intervals >= st->max_intervals)
		return search_terminate(st, s, END_BUDGET) ? -1 : 1;
	return 0;
}

/* Chooses what search s measures this interval (its slots). */
static int search_select(struct nway *st, struct search *s)
{
	uint32_t left = st->n, limbo = st->n / 2 ? st->n / 2 : 1, stale = search_stale(st, s);

	slots_clear(s);
	/* with n < 4 a quiet or stale region's counter leaves too few to split
	 * the top region (2-way: none), and the search stood still while any
	 * region was quiet: they are measured every other interval only */
	if (st->n < 4 && (s->nr_intervals & 1)) {
		stale = 0;
		limbo = 0;
	}
	if (stale) {
		if (slot_add(s, SLOT_ASIS, stale - 1, NULL))
			return AMEBA_ENOMEM;
		left--;
		limbo -= limbo > 1;
	}
	/* quiet regions that may come back are measured first, on up to n/2
	 * counters: they must either come back or expire */
	for (uint32_t i = 0; i < s->nr_q && limbo; i++) {
		if (!s->q[i].zero_streak)
			continue;
		if (slot_add(s, SLOT_ASIS, i, NULL))
			return AMEBA_ENOMEM;
		limbo--;
		left--;
	}
	for (uint32_t i = 0; i < s->nr_q && left; i++) {
		struct region *r = &s->q[i];
		struct region a, b;
		int asis = region_single(r) || r->fresh;

		if (r->zero_streak || i + 1 == stale)
			continue;

		if (!asis) {
			if (left < 2)
				break;
			int rc = region_split(st, r, &a, &b);

			if (rc < 0)
				return rc;
			if (rc == 0) {
				if (slot_add(s, SLOT_CHILD, i, &a) || slot_add(s, SLOT_CHILD, i, &b)) {
					region_free(&a);
					region_free(&b);
					return AMEBA_ENOMEM;
				}
				left -= 2;
				r->protect = 1;
				continue;
			}
		}
		if (slot_add(s, SLOT_ASIS, i, NULL))
			return AMEBA_ENOMEM;
		if (!r->fresh || r->nr_meas)
			r->protect = 1;
		left--;
	}
	return 0;
}

static int counter_add(struct nway *st, int metric, uint32_t off, uint32_t nr,
		       const struct search *s, int per_thread, uint64_t tag)
{
	struct ameba_counter *c;

	if (grow_array((void **)&st->counters, &st->cap_counters, st->nr_counters + 1,
		       sizeof(*st->counters)) ||
	    grow_array((void **)&st->cbins, &st->cap_cbins, st->nr_counters + 1, sizeof(*st->cbins)))
		return AMEBA_ENOMEM;
	/* the bins emitted since the last counter are this counter's */
	st->cbins[st->nr_counters].nr = st->nr_bnames - st->bn_mark;
	st->cbins[st->nr_counters].names = (const char *const *)(uintptr_t)st->bn_mark;
	st->bn_mark = st->nr_bnames;
	c = &st->counters[st->nr_counters++];
	memset(c, 0, sizeof(*c));
	c->metric = metric;
	c->nr_ranges = nr;
	c->ranges = (const uintptr_t *)(uintptr_t)off;	/* fixed up at the end */
	if (s && s->thread >= 0) {
		c->nr_threads = 1;
		c->threads = &s->tid_storage;
	}
	c->per_thread = per_thread;
	c->tag = tag;
	return 0;
}

static uint64_t mktag(int kind, uint32_t a, uint32_t b)
{
	return ((uint64_t)kind << 56) | ((uint64_t)(a & 0xffffff) << 32) | b;
}

static int search_counters(struct nway *st, uint32_t si)
{
	struct search *s = &st->searches[si];

	if (counter_add(st, st->primary, 0, 0, s, 0, mktag(TAG_TOTAL, si, 0)))
		return AMEBA_ENOMEM;
	for (uint32_t k = 0; k < s->nr_slots; k++) {
		struct slot *sl = &s->slots[k];
		const struct region *r = sl->type == SLOT_CHILD ? &sl->child : &s->q[sl->qi];

		if (region_emit(st, r, &sl->range_off, &sl->nr_ranges))
			return AMEBA_ENOMEM;
		if (counter_add(st, st->primary, sl->range_off, sl->nr_ranges, s, 0,
				mktag(TAG_SLOT, si, k)))
			return AMEBA_ENOMEM;
	}
	return 0;
}

/*
 * Keeps an experiment within max_ranges address ranges: the counters with
 * the most ranges are measured on the hull of their ranges instead, until
 * the rest fits (a found unit measured so is marked: confidence halves).
 * Counter ranges are still offsets here.
 */
static void ranges_cap(struct nway *st)
{
	uint64_t total = 0;

	for (uint32_t i = 0; i < st->nr_counters; i++)
		total += st->counters[i].nr_ranges;
	while (total > st->max_ranges) {
		struct ameba_counter *c = NULL;
		uintptr_t lo = UINTPTR_MAX, hi = 0, *r;

		for (uint32_t i = 0; i < st->nr_counters; i++)
			if (st->counters[i].nr_ranges > 1 &&
			    (!c || st->counters[i].nr_ranges > c->nr_ranges))
				c = &st->counters[i];
		if (!c)
			break;
		r = st->ranges + 2 * (size_t)(uintptr_t)c->ranges;
		for (uint32_t k = 0; k < c->nr_ranges; k++) {
			lo = r[2 * k] < lo ? r[2 * k] : lo;
			hi = r[2 * k + 1] > hi ? r[2 * k + 1] : hi;
		}
		r[0] = lo;
		r[1] = hi;
		total -= c->nr_ranges - 1;
		c->nr_ranges = 1;
		if ((int)(c->tag >> 56) == TAG_FUNIT) {
			uint32_t f = (uint32_t)(c->tag >> 32) & 0xffffff;

			if (f < st->nr_found)
				st->found[f].hull = 1;
		}
	}
}

static int search_add(struct nway *st, int32_t thread)
{
	struct search *s;

	if (st->nr_searches == MAX_SEARCHES)
		return 0;
	s = &st->searches[st->nr_searches++];
	memset(s, 0, sizeof(*s));
	s->thread = thread;
	s->tid_storage = thread < 0 ? 0 : (uint32_t)thread;
	if (thread >= 0)
		snprintf(s->who, sizeof(s->who), " of thread %d", thread);
	s->interval_ms = st->interval_ms;
	return 0;
}

/*
 * Starts the final measurement's window (again): every found object, the
 * program's totals and the window's length from zero, one oracle mark for
 * all (Notes: final measurement). Rescans call it when a round found new
 * objects, so that every share is over one window and they add up.
 */
static void window_restart(struct nway *st)
{
	uint32_t nt = st->nr_threads_cap;

	st->nr_marks++;
	st->final_ns = 0;
	for (int m = 0; m < AMEBA_M_NR; m++) {
		st->prog[m] = 0;
		if (st->prog_pt[m] && nt)
			memset(st->prog_pt[m], 0, nt * sizeof(double));
	}
	for (uint32_t i = 0; i < st->nr_found; i++) {
		struct found *f = &st->found[i];

		f->mark = st->nr_marks;
		f->window_ns = 0;
		for (int m = 0; m < AMEBA_M_NR; m++) {
			f->values[m] = f->program[m] = 0;
			if (f->pt[m] && nt)
				memset(f->pt[m], 0, nt * sizeof(double));
			if (f->program_pt[m] && nt)
				memset(f->program_pt[m], 0, nt * sizeof(double));
		}
	}
}

/*
 * A found site whose name a later site deepened ("allocate@new_allocator.h:137"
 * became "... <- make_a@x.cpp:3" and "... <- make_b@x.cpp:9": two bins, as
 * the oracle names them at exit) is replaced by one found entry per bin it
 * became, each measured by its own bin and named by it. The figures under
 * the old name were the sum of the bins: each new entry starts its own
 * window (as the found objects of a rescan do).
 */
static int found_deepen(struct nway *st)
{
	const struct ameba_host *h = st->host;
	char key[4200];
	int changed = 0;

	if (!st->use_bins || !h->nr_bins)
		return 0;
	for (uint32_t f = 0; f < st->nr_found; f++) {
		struct unit *un = &st->units[st->found[f].unit];
		const char *name = un->key + 2;
		size_t len = strlen(name);
		uint32_t nr = 0, old = st->found[f].unit;

		if (un->key[0] != 's' || host_bin(h, name))
			continue;
		for (uint32_t b = 0; b < h->nr_bins; b++) {
			const char *bn = h->bins[b].name;
			struct found *fd;
			int64_t u;

			if (!bn || strncmp(bn, name, len) || strncmp(bn + len, " <- ", 4))
				continue;
			snprintf(key, sizeof(key), "s:%s", bn);
			u = unit_get(st, key);
			if (u < 0)
				return AMEBA_ENOMEM;
			un = &st->units[old];	/* units may have moved */
			if (st->units[u].found)
				continue;
			if (nr++ == 0) {
				fd = &st->found[f];
			} else {
				struct found tmp = st->found[f];

				if (grow_array((void **)&st->found, &st->cap_found, st->nr_found + 1,
					       sizeof(*st->found)))
					return AMEBA_ENOMEM;
				fd = &st->found[st->nr_found++];
				*fd = tmp;
				for (uint32_t k = 0; k < st->nr_metrics; k++) {
					int m = st->metrics[k];

					fd->pt[m] = fd->program_pt[m] = NULL;
					if (st->nr_threads_cap &&
					    (strategy_grow_pt(&fd->pt[m], 0, st->nr_threads_cap) ||
					     strategy_grow_pt(&fd->program_pt[m], 0, st->nr_threads_cap)))
						return AMEBA_ENOMEM;
				}
			}
			fd->unit = (uint32_t)u;
			/* the old name's figures were the sum: not measuring
			 * makes the next plan restart the common window, which
			 * zeroes every found object's figures (window_restart) */
			fd->window_ns = 0;
			fd->measuring = 0;
			fd->search_v /= 2;	/* no better split known */
			fd->search_share /= 2;
			st->units[u].found = 1;
			st->units[old].found = 0;
			st->units[old].retired = 1;
			st->host->log(st->host, "found %s: the site is now the bin %s", name, bn);
			changed = 1;
		}
	}
	return changed;
}

/* Can a rescan still come (Notes: rescan)? */
static int rescan_may(const struct nway *st)
{
	return st->rescan > 0 && !st->per_thread && st->nr_searches == 1 &&
	       st->nr_rescans < MAX_RESCANS &&
	       !(st->nr_rescans && st->nr_found == st->found_before_rescan);
}

/* Adds the counters of the newcomers watched this interval (Notes). */
static int watch_plan(struct nway *st)
{
	uint32_t spare = st->n > st->nr_found + 1 ? st->n - st->nr_found - 1 : 0;

	st->nr_watch = newcomers(st, st->watch, spare < MAX_WATCH ? spare : MAX_WATCH);
	for (uint32_t w = 0; w < st->nr_watch; w++) {
		uint32_t off = st->nr_ranges, nr = 0;

		st->watch_v[w] = 0;
		if (unit_emit(st, st->watch[w], &nr) ||
		    counter_add(st, st->primary, off, nr, NULL, 0, mktag(TAG_FWATCH, w, 0)) ||
		    unit_describe(st, st->watch[w]))
			return AMEBA_ENOMEM;
	}
	return 0;
}

static int nway_plan(void *state, struct ameba_experiment *exp)
{
	struct nway *st = state;
	const struct ameba_host *h = st->host;
	uint32_t interval = 0;
	int rc, active = 0;

	rc = threads_grow(st, h->nr_threads);
	if (rc)
		return rc;
	rc = units_refresh(st);
	if (rc)
		return rc;
	rc = found_deepen(st);
	if (rc < 0)
		return rc;
	if (rc) {
		/* the deeper units' bins, ranges and names */
		rc = units_refresh(st);
		for (uint32_t f = 0; !rc && f < st->nr_found; f++)
			rc = unit_describe(st, st->found[f].unit);
		if (rc)
			return rc;
	}
	if (st->per_thread) {
		int all_done = st->nr_searches > 0;

		for (uint32_t i = 0; i < st->nr_searches; i++)
			all_done &= st->searches[i].phase == S_DONE;
		/* once every search ended, later threads are not searched */
		for (uint32_t t = 0; t < h->nr_threads && !all_done; t++) {
			int have = 0;

			for (uint32_t i = 0; i < st->nr_searches; i++)
				have |= st->searches[i].thread == (int32_t)h->threads[t].id;
			if (!have && !h->threads[t].exited)
				search_add(st, (int32_t)h->threads[t].id);
		}
	} else if (!st->nr_searches) {
		search_add(st, -1);
	}
	st->nr_counters = 0;
	st->nr_bnames = 0;
	st->bn_mark = 0;
	for (uint32_t si = 0; si < st->nr_searches; si++) {
		struct search *s = &st->searches[si];

		s->planned = 0;
		slots_clear(s);
		if (s->phase == S_SEARCH && st->per_thread && s->thread >= 0) {
			for (uint32_t t = 0; t < h->nr_threads; t++)
				if (h->threads[t].id == (uint32_t)s->thread && h->threads[t].exited) {
					s->ended_by = END_IDLE;
					s->phase = S_DONE;
				}
		}
		if (s->phase == S_SEARCH) {
			rc = s->started ? search_resolve(st, s) : search_init(st, s);
			if (rc)
				return rc;
			rc = s->nr_intervals ? search_check_end(st, s) : 0;
			if (rc < 0)
				return AMEBA_ENOMEM;
		}
		if (s->phase == S_SEARCH) {
			rc = search_select(st, s);
			if (rc)
				return rc;
			rc = search_counters(st, si);
			if (rc)
				return rc;
			s->planned = 1;
			active = 1;
		}
		if (s->interval_ms > st->final_interval_ms)
			st->final_interval_ms = s->interval_ms;	/* grown: phases */
		if (s->planned && s->interval_ms > interval)
			interval = s->interval_ms;
	}
	if (!active && (st->final == F_DONE || !st->nr_found))
		return 1;
	if (!active || st->nr_rescans) {
		/*
		 * Every search ended: the final measurement of everything found,
		 * on the exact extents, all at once (one window for all):
		 * every metric, one total and one counter per found unit. It
		 * goes on while a rescan searches (Notes), so the windows of
		 * what was found stay whole.
		 */
		if (st->final == F_NONE && !active) {
			st->final = F_MEASURING;
			st->final_plan = st->nr_plans + 1;
			st->final_left = st->final_intervals;
			st->final_ext = 0;
			st->missed_min = -1;
		}
		if (!active)
			interval = st->final_interval_ms;
		/*
		 * Objects found since the last plan (the search's end, or a
		 * rescan's): the common window starts (again) now, with an
		 * oracle mark (Notes: final measurement).
		 */
		for (uint32_t f = 0; f < st->nr_found && !st->mark_now; f++)
			st->mark_now = !st->found[f].measuring;
		if (st->mark_now)
			window_restart(st);
		for (uint32_t f = 0; f < st->nr_found; f++) {
			st->found[f].measuring = 1;
			st->found[f].hull = st->units[st->found[f].unit].hull;
			st->found[f].iv = 0;
		}
		/*
		 * The monitor answers a read with a row per thread and counter
		 * in one message of at most ~1 MiB (about 21 bytes a value):
		 * with thousands of threads, only the ranking metric.
		 */
		uint64_t cost = (uint64_t)h->nr_threads *
				((uint64_t)st->nr_metrics * (st->nr_found + 1) * 21 + 24);

		for (uint32_t k = 0; k < st->nr_metrics; k++)
			st->final_has[st->metrics[k]] = cost <= READ_BUDGET ||
							 st->metrics[k] == st->primary;
		for (uint32_t k = 0; k < st->nr_metrics; k++) {
			int m = st->metrics[k];

			if (!st->final_has[m])
				continue;
			if (counter_add(st, m, 0, 0, NULL, 1, mktag(TAG_FTOTAL, 0, k)))
				return AMEBA_ENOMEM;
			for (uint32_t f = 0; f < st->nr_found; f++) {
				uint32_t off = st->nr_ranges, nr = 0;

				if (unit_emit(st, st->found[f].unit, &nr) ||
				    counter_add(st, m, off, nr, NULL, 1, mktag(TAG_FUNIT, f, k)))
					return AMEBA_ENOMEM;
			}
		}
		st->nr_watch = 0;
		if (!active && rescan_may(st)) {
			rc = watch_plan(st);
			if (rc)
				return rc;
		}
	}
	ranges_cap(st);
	/* ranges are stable now: turn offsets into pointers */
	for (uint32_t i = 0; i < st->nr_counters; i++)
		st->counters[i].ranges = st->counters[i].nr_ranges ?
			st->ranges + 2 * (size_t)(uintptr_t)st->counters[i].ranges : NULL;
	memset(exp, 0, sizeof(*exp));
	exp->nr_counters = st->nr_counters;
	exp->counters = st->counters;
	if (st->nr_bnames) {
		for (uint32_t i = 0; i < st->nr_counters; i++)
			st->cbins[i].names = st->bnames + (uintptr_t)st->cbins[i].names;
		exp->counter_bins = st->cbins;
	}
	/* every ranged counter leaves out the blocks of the units apart, which
	 * their own bins count: so a freed block's address in a searched span
	 * (or reused by a listed object) does not count twice (Notes) */
	if (st->nr_xnames) {
		uint32_t nr_ranged = 0, keep = 0;
		uint64_t bytes = 0;

		if (grow_array((void **)&st->cexcept, &st->cap_cexcept, st->nr_counters + 1,
			       sizeof(*st->cexcept)))
			return AMEBA_ENOMEM;
		for (uint32_t i = 0; i < st->nr_counters; i++)
			nr_ranged += st->counters[i].nr_ranges > 0;
		/*
		 * The lists go with every ranged counter in one request under
		 * the monitor's 1 MiB: at most EXCEPT_BYTES of names in all.
		 * Beyond, the first units apart keep theirs (the kind bins and
		 * the sites found apart earliest); the rest, sites of freed
		 * blocks by the hundred, may count twice where a span holds
		 * their old addresses.
		 */
		while (keep < st->nr_xnames &&
		       (bytes + strlen(st->xnames[keep]) + 4) * nr_ranged <= EXCEPT_BYTES)
			bytes += strlen(st->xnames[keep++]) + 4;
		for (uint32_t i = 0; i < st->nr_counters; i++) {
			st->cexcept[i].nr = st->counters[i].nr_ranges ? keep : 0;
			st->cexcept[i].names = st->xnames;
		}
		exp->counter_except = keep ? st->cexcept : NULL;
	}
	exp->interval_ms = interval;
	if (st->mark_now) {
		snprintf(st->mark_label, sizeof(st->mark_label), "nway-%u", st->nr_marks);
		exp->mark = st->mark_label;
		st->mark_now = 0;
	}
	st->nr_plans++;
	return 0;
}

/* ---- observing ---- */

/* Lengthens the intervals of search s by the factor grow (phases). */
static void search_grow(struct nway *st, struct search *s, uint64_t elapsed_ns)
{
	uint64_t cur_ms = elapsed_ns / 1000000;
	double base = s->interval_ms ? s->interval_ms : cur_ms > 100 ? (double)cur_ms : 100;
	double next = base * st->grow;

	if (next > st->max_interval_ms)
		next = st->max_interval_ms;
	if (next > s->interval_ms)
		s->interval_ms = (uint32_t)next;
}

static void search_observe(struct nway *st, struct search *s, const uint64_t *slot_v, double total,
			   uint64_t elapsed_ns)
{
	int kept = 0;

	s->nr_intervals++;
	if (total <= 0) {
		/* nothing happened (an idle thread): nothing learned */
		s->idle++;
		if (st->per_thread && s->idle >= 2 * st->keep && s->thread >= 0) {
			s->ended_by = END_IDLE;
			s->phase = S_DONE;
		}
		slots_clear(s);
		return;
	}
	s->idle = 0;
	for (uint32_t k = 0; k < s->nr_slots; k++) {
		struct slot *sl = &s->slots[k];
		struct region *r = &s->q[sl->qi];
		double v = (double)slot_v[k];

		if (sl->type == SLOT_ASIS) {
			r->fresh = 0;
			r->meas_at = s->nr_intervals;
			if (region_single(r)) {
				r->sum_v += v;
				r->sum_t += total;
				r->sum_ns += elapsed_ns;
			}
			if (v > 0) {
				r->nr_meas++;
				r->zero_streak = 0;
				r->zero_ns = 0;
				r->share = region_single(r) ? r->sum_v / r->sum_t : v / total;
				continue;
			}
			if (r->protect && region_has_objects(st, r) &&
			    (r->zero_streak < st->keep || r->zero_ns < st->quiet_ns)) {
				/* kept: it (or its parent) ranked in the top before.
				 * Its estimate halves, so it sinks in the queue but
				 * stays there until it was quiet for keep intervals
				 * and quiet_ms; a region that counted before and
				 * went quiet is a phase: the interval grows */
				r->zero_streak++;
				r->zero_ns += elapsed_ns;
				if (region_single(r) && r->nr_meas)
					r->share = r->sum_v / r->sum_t;
				else
					r->share /= 2;
				kept |= r->nr_meas > 0;
			} else {
				r->dead = 1;
			}
			continue;
		}
		/* a half of a split parent */
		r->dead = 1;
		{
			struct region c = sl->child;

			sl->child.set = NULL;	/* moved into the queue */
			c.fresh = 0;
			c.meas_at = s->nr_intervals;
			if (v > 0) {
				c.share = v / total;
				c.nr_meas = 1;
				if (region_single(&c)) {
					c.sum_v = v;
					c.sum_t = total;
					c.sum_ns = elapsed_ns;
				}
			} else if (region_has_objects(st, &c) && st->keep) {
				/* a quiet half of a top region: kept for a few
				 * intervals (it may be in another phase), with half
				 * its parent's share as the estimate */
				c.share = r->share / 2;
				c.zero_streak = 1;
				c.zero_ns = elapsed_ns;
				if (region_single(&c)) {
					c.sum_t = total;
					c.sum_ns = elapsed_ns;
				}
			} else {
				region_free(&c);
				continue;
			}
			if (q_push(s, &c)) {
				region_free(&c);
				continue;
			}
			r = &s->q[sl->qi];	/* q may have moved */
		}
	}
	/* a quiet region not measured this interval (n < 4: every other
	 * one) stays quiet for the time of it: quiet_ms is time, not counts */
	for (uint32_t i = 0; i < s->nr_q; i++)
		if (s->q[i].zero_streak && s->q[i].meas_at != s->nr_intervals)
			s->q[i].zero_ns += elapsed_ns;
	slots_clear(s);
	q_compact(s);
	if (kept)
		search_grow(st, s, elapsed_ns);
}

static void search_log(struct nway *st, uint32_t si)
{
	struct search *s = &st->searches[si];
	uint32_t nr_single = 0;
	char best[120] = "-", who[24] = "";

	for (uint32_t i = 0; i < s->nr_q; i++)
		nr_single += region_single(&s->q[i]) && s->q[i].nr_meas;
	if (s->nr_q) {
		const struct region *r = &s->q[0];

		if (region_single(r))
			snprintf(best, sizeof(best), "%s %.1f%%", st->units[r->unit].obj.name ?
				 st->units[r->unit].obj.name : st->units[r->unit].key + 2, 100 * r->share);
		else if (r->kind == R_SET)
			snprintf(best, sizeof(best), "%u sites %.1f%%", r->nr_set, 100 * r->share);
		else
			snprintf(best, sizeof(best), "[0x%lx, 0x%lx) %.1f%%", (unsigned long)r->start,
				 (unsigned long)r->end, 100 * r->share);
	}
	if (getenv("AMEBA_NWAY_TRACE"))
		for (uint32_t i = 0; i < s->nr_q; i++) {
			const struct region *r = &s->q[i];

			fprintf(stderr, "  q%u kind %d [%lx,%lx) unit %s set %u share %.4f meas %u "
				"zero %u fresh %d prot %d\n", i, r->kind, (unsigned long)r->start, (unsigned long)r->end,
				r->kind == R_UNIT ? st->units[r->unit].key : "-", r->nr_set, r->share,
				r->nr_meas, r->zero_streak, r->fresh, r->protect);
		}
	if (s->thread >= 0)
		snprintf(who, sizeof(who), " (thread %d)", s->thread);
	st->host->log(st->host, "interval %u%s: %u regions queued, %u single, best %s, next "
		      "interval %u ms", s->nr_intervals, who, s->nr_q, nr_single, best,
		      s->interval_ms);
}

/*
 * After the search: does the interval just measured (primary total
 * `total`) show a new phase the found objects miss? Then the search starts
 * again (Notes: rescan); 1 when it did.
 */
static int rescan_check(struct nway *st, double total)
{
	struct search *s = &st->searches[0];
	double found = 0, missed, base, top_new = 0;

	if (!rescan_may(st) || total <= 0)
		return 0;
	for (uint32_t f = 0; f < st->nr_found; f++)
		if (st->found[f].measuring)
			found += st->found[f].iv;
	missed = 1 - found / total;
	if (st->missed_min < 0) {
		/* what the search itself left unexplained at its end */
		double sum = 0;

		for (uint32_t f = 0; f < st->nr_found; f++)
			if (st->found[f].round >= st->rescan_round)
				sum += st->found[f].search_share;
		st->missed_min = sum < 1 ? 1 - sum : 0;
	}
	base = st->missed_min;
	if (missed < st->missed_min)
		st->missed_min = missed;
	for (uint32_t w = 0; w < st->nr_watch; w++)
		if (st->watch_v[w] / total > top_new)
			top_new = st->watch_v[w] / total;
	if (missed <= base + st->rescan && (top_new <= 0 || top_new < st->unsearched))
		return 0;
	if (missed > base + st->rescan)
		st->host->log(st->host, "the %u found objects miss %.1f%% of an interval (%.1f%% at "
			      "the search's end): a new phase, searching again", st->nr_found,
			      100 * missed, 100 * base);
	else
		st->host->log(st->host, "a site first listed or allocating again after the search "
			      "began misses %.1f%% of an interval (at least unsearched=%g): searching "
			      "again", 100 * top_new, st->unsearched);
	for (uint32_t i = 0; i < s->nr_q; i++)
		region_free(&s->q[i]);
	s->nr_q = 0;
	/* the newcomers that counted in this interval: singles measured once
	 * (Notes), by bin from now on and so in no span */
	for (uint32_t w = 0; w < st->nr_watch; w++) {
		struct unit *un = &st->units[st->watch[w]];
		struct region r;

		if (st->watch_v[w] <= 0 || un->found)
			continue;
		memset(&r, 0, sizeof(r));
		r.kind = R_UNIT;
		r.unit = st->watch[w];
		r.sum_v = st->watch_v[w];
		r.sum_t = total;
		r.sum_ns = st->watch_ns;
		r.share = r.sum_v / total;
		r.nr_meas = 1;
		r.meas_at = s->nr_intervals;
		r.protect = 1;
		if (q_push(s, &r))
			break;
		unit_apart_now(st, st->watch[w]);
		st->host->log(st->host, "newcomer %s (%s after the search began): %.1f%% of "
			      "that interval, measured first", un->obj.name ? un->obj.name :
			      un->key + 2, un->born_plan > st->round_plan ? "first listed" :
			      "allocating again", 100 * r.share);
	}
	st->nr_watch = 0;
	s->started = 0;
	s->phase = S_SEARCH;
	s->ended_by = END_NONE;
	s->idle = 0;
	s->round++;
	st->rescan_round = s->round;
	st->final = F_NONE;
	st->nr_rescans++;
	st->found_before_rescan = st->nr_found;
	return 1;
}

static int nway_observe(void *state, const struct ameba_experiment *exp,
			const struct ameba_results *res)
{
	struct nway *st = state;
	uint64_t *slot_v[MAX_SEARCHES] = { 0 };
	double totals[MAX_SEARCHES] = { 0 };
	int rc = threads_grow(st, strategy_results_width(res)), final_seen = 0;
	double final_total = 0;

	if (rc)
		return rc;
	for (uint32_t si = 0; si < st->nr_searches; si++) {
		struct search *s = &st->searches[si];

		if (s->planned && s->phase == S_SEARCH && s->nr_slots) {
			slot_v[si] = calloc(s->nr_slots, sizeof(uint64_t));
			if (!slot_v[si]) {
				rc = AMEBA_ENOMEM;
				goto out;
			}
		}
	}
	for (uint32_t i = 0; i < exp->nr_counters && i < res->nr_counters; i++) {
		uint64_t tag = exp->counters[i].tag;
		int kind = (int)(tag >> 56);
		uint32_t a = (uint32_t)(tag >> 32) & 0xffffff, b = (uint32_t)tag;
		const uint64_t *pt = res->per_thread ? res->per_thread[i] : NULL;

		if (kind == TAG_TOTAL && a < st->nr_searches) {
			totals[a] = (double)res->values[i];
		} else if (kind == TAG_SLOT && a < st->nr_searches && slot_v[a] &&
			   b < st->searches[a].nr_slots) {
			slot_v[a][b] = res->values[i];
		} else if (kind == TAG_FTOTAL && b < st->nr_metrics) {
			int m = st->metrics[b];

			final_seen = 1;
			if (m == st->primary)
				final_total = (double)res->values[i];
			st->prog[m] += (double)res->values[i];
			for (uint32_t k = 0; pt && k < res->nr_threads; k++)
				st->prog_pt[m][ameba_results_thread(res, k)] += (double)pt[k];
			for (uint32_t f = 0; f < st->nr_found; f++) {
				struct found *fd = &st->found[f];

				if (!fd->measuring)
					continue;
				fd->program[m] += (double)res->values[i];
				for (uint32_t k = 0; pt && k < res->nr_threads; k++)
					fd->program_pt[m][ameba_results_thread(res, k)] += (double)pt[k];
			}
		} else if (kind == TAG_FUNIT && a < st->nr_found && b < st->nr_metrics) {
			struct found *fd = &st->found[a];
			int m = st->metrics[b];

			fd->values[m] += (double)res->values[i];
			if (m == st->primary)
				fd->iv = (double)res->values[i];
			for (uint32_t k = 0; pt && k < res->nr_threads; k++)
				fd->pt[m][ameba_results_thread(res, k)] += (double)pt[k];
		} else if (kind == TAG_FWATCH && a < st->nr_watch) {
			st->watch_v[a] = (double)res->values[i];
		}
	}
	if (final_seen) {
		st->watch_ns = res->elapsed_ns;
		st->final_ns += res->elapsed_ns;
		for (uint32_t f = 0; f < st->nr_found; f++)
			if (st->found[f].measuring)
				st->found[f].window_ns += res->elapsed_ns;
	}
	for (uint32_t si = 0; si < st->nr_searches; si++) {
		struct search *s = &st->searches[si];

		if (!s->planned)
			continue;
		if (s->phase == S_SEARCH) {
			search_observe(st, s, slot_v[si] ? slot_v[si] : (uint64_t[1]){ 0 }, totals[si],
				       res->elapsed_ns);
			search_log(st, si);
		}
	}
	if (final_seen && st->final == F_MEASURING && rescan_check(st, final_total))
		goto out;
	if (final_seen && st->final == F_MEASURING) {
		int quiet = 0;

		for (uint32_t f = 0; f < st->nr_found; f++)
			quiet |= st->found[f].iv <= 0;
		if (quiet && st->final_ext < st->keep) {
			/* a found object went quiet: a phase; measure longer */
			uint64_t cur_ms = res->elapsed_ns / 1000000;
			double next = (double)(st->final_interval_ms ? st->final_interval_ms :
					       cur_ms > 100 ? cur_ms : 100) * st->grow;

			st->final_ext++;
			st->final_interval_ms = next > st->max_interval_ms ? st->max_interval_ms :
						(uint32_t)next;
		} else if (st->final_intervals && !--st->final_left) {
			st->final = F_DONE;	/* final_intervals=0: until the program exits */
		}
	}
out:
	for (uint32_t si = 0; si < st->nr_searches; si++)
		free(slot_v[si]);
	return rc;
}

/* ---- contexts ---- */

static double found_share(const struct nway *st, const struct found *f)
{
	return f->program[st->primary] > 0 ? f->values[st->primary] / f->program[st->primary] : 0;
}

static int cmp_found(const void *a, const void *b, void *arg)
{
	const struct nway *st = arg;
	const struct found *x = &st->found[*(const uint32_t *)a], *y = &st->found[*(const uint32_t *)b];
	double sx = x->window_ns ? found_share(st, x) : x->search_share;
	double sy = y->window_ns ? found_share(st, y) : y->search_share;

	if (x->round != y->round)
		return (x->round > y->round) - (x->round < y->round);
	return (sx < sy) - (sx > sy);
}

static void found_extra(const struct nway *st, struct found *f)
{
	size_t o = (size_t)snprintf(f->extra, sizeof(f->extra), "strategy=nway\nsearch_share=%.6f\n"
				    "round=%u\nfound_by=", f->search_share, f->round + 1);

	if (f->found_by >> 63)
		o += (size_t)snprintf(f->extra + o, sizeof(f->extra) - o, "all");
	for (uint32_t t = 0; t < 63 && o < sizeof(f->extra); t++)
		if (f->found_by & (1ull << t))
			o += (size_t)snprintf(f->extra + o, sizeof(f->extra) - o, "%sT%u",
					      (f->found_by & ((1ull << t) - 1)) ? "," : "", t);
	if (f->hull && o < sizeof(f->extra))
		o += (size_t)snprintf(f->extra + o, sizeof(f->extra) - o, "\nmeasured=hull");
	if (f->mark && o < sizeof(f->extra))
		snprintf(f->extra + o, sizeof(f->extra) - o, "\nmark=nway-%u", f->mark);
	(void)st;
}

static int nway_contexts(void *state, const struct ameba_context **out, uint32_t *nr)
{
	struct nway *st = state;
	uint32_t n = 0, nr_prov = 0, cap = st->nr_found + 2, *order, *seen;

	for (uint32_t si = 0; si < st->nr_searches; si++)
		cap += st->searches[si].nr_q;
	free(st->ctxs);
	free(st->prov_objs);
	free(st->prov_extra);
	st->ctxs = calloc(cap, sizeof(*st->ctxs));
	st->prov_objs = calloc(cap, sizeof(*st->prov_objs));
	st->prov_extra = calloc(cap, sizeof(*st->prov_extra));
	order = malloc(cap * sizeof(*order));
	seen = malloc(cap * sizeof(*seen));
	if (!st->ctxs || !st->prov_objs || !st->prov_extra || !order || !seen) {
		free(order);
		free(seen);
		return AMEBA_ENOMEM;
	}
	/*
	 * A window that saw nothing of the ranking metric (a rescan restarted
	 * it as the program ended: the 2-way on million_live, window from
	 * 100% of the run) is no window: the found objects keep the search's
	 * figures, as if the program had ended before it.
	 */
	int window = st->final_ns && st->prog[st->primary] > 0;

	if (window) {
		struct ameba_context *c = &st->ctxs[n++];

		c->kind = AMEBA_CTX_PROGRAM;
		for (uint32_t k = 0; k < st->nr_metrics; k++) {
			int m = st->metrics[k];

			if (!st->final_has[m])
				continue;
			c->has[m] = 1;
			c->values[m] = c->program[m] = st->prog[m];
			c->per_thread[m] = st->prog_pt[m];
		}
		c->nr_threads = st->nr_threads_cap;
		c->thread_ids = st->thread_ids;
		c->window_ns = st->final_ns;
		c->confidence = st->host->exact ? 1.0 : 0.5;
	}
	for (uint32_t f = 0; f < st->nr_found; f++)
		order[f] = f;
	qsort_r(order, st->nr_found, sizeof(*order), cmp_found, st);
	for (uint32_t i = 0; i < st->nr_found; i++) {
		struct found *f = &st->found[order[i]];
		/* hot while the search ran, nothing in the whole window: a phase
		 * that ended as the window began (wl_cxx's tally, whose window
		 * was the teardown after the workers joined) */
		int quiet = window && f->window_ns && f->values[st->primary] <= 0 &&
			    f->search_v > 0;
		struct ameba_context *c;

		if (!f->window_ns || !window || quiet) {
			/*
			 * Found, but the program ended before the final
			 * measurement - or before a window that a rescan
			 * restarted just before the exit saw anything (above):
			 * the search's own figures, over the time of the
			 * intervals that measured it (its window_ns). Beside a
			 * window that did run, an object without one is left
			 * out once the final measurement runs; while a rescan
			 * searches, it is reported as provisional (the agent
			 * lists it after the window's objects, the report
			 * flags it) with half the confidence: a share over a
			 * few intervals at the end of the run, not over the
			 * window the others share. So is one the window saw
			 * quiet (above): left out, a table would rank it last at
			 * 0% when it held a third of the misses before.
			 */
			if ((st->final != F_NONE && window && !quiet) || f->search_v <= 0)
				continue;
			c = &st->ctxs[n++];
			c->kind = AMEBA_CTX_OBJECT;
			c->object = &st->units[f->unit].obj;
			c->has[st->primary] = 1;
			c->values[st->primary] = f->search_v;
			c->program[st->primary] = f->search_t;
			c->window_ns = f->search_ns;
			c->confidence = (st->host->exact ? 1.0 : 0.5) * (window ? 0.5 : 1.0);
			c->extra = "strategy=nway\nmeasured=search_intervals";
			continue;
		}
		c = &st->ctxs[n++];
		c->kind = AMEBA_CTX_OBJECT;
		c->object = &st->units[f->unit].obj;
		for (uint32_t k = 0; k < st->nr_metrics; k++) {
			int m = st->metrics[k];

			if (!st->final_has[m])
				continue;
			c->has[m] = 1;
			c->values[m] = f->values[m];
			c->program[m] = f->program[m];
			c->per_thread[m] = f->pt[m];
		}
		c->nr_threads = st->nr_threads_cap;
		c->thread_ids = st->thread_ids;
		c->window_ns = f->window_ns;
		c->confidence = (st->host->exact ? 1.0 : 0.5) * (f->hull ? 0.5 : 1.0);
		found_extra(st, f);
		c->extra = f->extra;
	}
	/* not finally measured yet: the search's own figures */
	for (uint32_t si = 0; st->final == F_NONE && si < st->nr_searches; si++) {
		const struct search *s = &st->searches[si];

		for (uint32_t i = 0; i < s->nr_q; i++) {
			const struct region *r = &s->q[i];
			struct ameba_context *c;
			struct unit *un;
			int dup = 0;

			if (!region_single(r) || !r->nr_meas || r->sum_v <= 0)
				continue;
			un = &st->units[r->unit];
			for (uint32_t j = 0; j < nr_prov; j++)
				dup |= seen[j] == r->unit;
			if (dup || un->found || !un->obj.name)
				continue;
			seen[nr_prov] = r->unit;
			c = &st->ctxs[n++];
			st->prov_objs[nr_prov] = un->obj;
			c->kind = AMEBA_CTX_OBJECT;
			c->object = &st->prov_objs[nr_prov];
			c->has[st->primary] = 1;
			c->values[st->primary] = r->sum_v;
			c->program[st->primary] = r->sum_t;
			c->window_ns = r->sum_ns;
			/* beside a window's objects (a rescan's queue): provisional */
			c->confidence = (st->host->exact ? 1.0 : 0.5) * (window ? 0.5 : 1.0);
			snprintf(st->prov_extra[nr_prov], sizeof(st->prov_extra[0]),
				 "strategy=nway\nmeasured=search_intervals\nsearch_share=%.6f", r->share);
			c->extra = st->prov_extra[nr_prov];
			nr_prov++;
		}
	}
	free(order);
	free(seen);
	*out = st->ctxs;
	*nr = n;
	return 0;
}

static void nway_progress(void *state, char *buf, size_t len)
{
	struct nway *st = state;
	const struct search *s = st->nr_searches ? &st->searches[0] : NULL;
	uint32_t nr_single = 0;

	if (!s) {
		snprintf(buf, len, "nway: starting");
		return;
	}
	for (uint32_t i = 0; i < s->nr_q; i++)
		nr_single += region_single(&s->q[i]) && s->q[i].nr_meas;
	if (s->phase == S_SEARCH && s->nr_q) {
		const struct region *r = &s->q[0];
		const char *name = region_single(r) && st->units[r->unit].obj.name ?
				   st->units[r->unit].obj.name : "a region";

		snprintf(buf, len, "nway interval %u: %u regions, %u single, best %s %.1f%%",
			 s->nr_intervals, s->nr_q, nr_single, name, 100 * r->share);
	} else {
		snprintf(buf, len, "nway %s: %u objects found (%s)", st->final == F_DONE ? "done" :
			 "final measurement", st->nr_found, end_names[s->ended_by]);
	}
}

static void nway_destroy(void *state)
{
	struct nway *st = state;

	for (uint32_t si = 0; si < st->nr_searches; si++) {
		struct search *s = &st->searches[si];

		slots_clear(s);
		for (uint32_t i = 0; i < s->nr_q; i++)
			region_free(&s->q[i]);
		free(s->q);
		free(s->slots);
	}
	for (uint32_t u = 0; u < st->nr_units; u++) {
		free(st->units[u].key);
		if (!st->units[u].is_line) {
			free((char *)st->units[u].obj.name);
			free((char *)st->units[u].obj.site);
		}
		free(st->units[u].line_name);
	}
	for (uint32_t f = 0; f < st->nr_found; f++)
		for (int m = 0; m < AMEBA_M_NR; m++) {
			free(st->found[f].pt[m]);
			free(st->found[f].program_pt[m]);
		}
	for (int m = 0; m < AMEBA_M_NR; m++)
		free(st->prog_pt[m]);
	free(st->found);
	free(st->units);
	free(st->index);
	free(st->obj_unit);
	free(st->thread_ids);
	free(st->ranges);
	free(st->counters);
	free(st->cbins);
	free(st->xnames);
	free(st->cexcept);
	free(st->bnames);
	free(st->ctxs);
	free(st->prov_objs);
	free(st->prov_extra);
	free(st);
}

/* ---- creation ---- */

static long long param_int(const struct ameba_params *p, const char *name, long long def)
{
	const char *v = ameba_param_get(p, name);

	return v ? atoll(v) : def;
}

static double param_double(const struct ameba_params *p, const char *name, double def)
{
	const char *v = ameba_param_get(p, name);

	return v ? atof(v) : def;
}

static int nway_create(const struct ameba_host *host, const struct ameba_params *params,
		       void **state, char *msg)
{
	struct nway *st;
	const char *metric = ameba_param_get(params, "metric");
	const char *metrics = ameba_param_get(params, "metrics");
	long long n = param_int(params, "n", 10), keep = param_int(params, "keep", 4);
	long long quiet = param_int(params, "quiet_ms", 1000);
	long long interval = param_int(params, "interval_ms", 0);
	long long max_interval = param_int(params, "max_interval_ms", 1600);
	long long max_intervals = param_int(params, "max_intervals", 200);
	long long final_intervals = param_int(params, "final_intervals", 2);
	long long group = param_int(params, "group", 8);
	long long max_ranges = strategy_limit(ameba_param_get(params, "max_ranges"),
					      AMEBA_HOST_HAS(host, max_ranges) ? host->max_ranges : 0,
					      AMEBA_MAX_RANGES);
	long long use_bins = param_int(params, "bins", 1);
	long long more = param_int(params, "more", 0), per_thread = param_int(params, "per_thread", 0);
	double grow = param_double(params, "grow", 2);
	double unsearched = param_double(params, "unsearched", 0.02);
	double rescan = param_double(params, "rescan", 0.1);

	if (host->abi_version != AMEBA_PLUGIN_ABI_VERSION) {
		snprintf(msg, 256, "host speaks plugin ABI %u, nway.so was built for %d",
			 host->abi_version, AMEBA_PLUGIN_ABI_VERSION);
		return AMEBA_EABI;
	}
	if (n < 2 || n > 1000) {
		snprintf(msg, 256, "n must be from 2 to 1000, got %lld", n);
		return AMEBA_EINVAL;
	}
	if (keep < 0 || quiet < 0 || interval < 0 || max_interval < 1 || max_intervals < 1 ||
	    final_intervals < 0 || group < 2 || max_ranges < 16 || (more != 0 && more != 1) ||
	    (per_thread != 0 && per_thread != 1) || (use_bins != 0 && use_bins != 1)) {
		snprintf(msg, 256, "want keep >= 0, quiet_ms >= 0, interval_ms >= 0, max_interval_ms >= 1, "
			 "max_intervals >= 1, final_intervals >= 0, group >= 2, max_ranges >= 16, "
			 "more, per_thread and bins 0 or 1");
		return AMEBA_EINVAL;
	}
	if (grow < 1 || unsearched < 0 || unsearched >= 1 || rescan < 0 || rescan > 1) {
		snprintf(msg, 256, "grow must be >= 1 (got %g), unsearched in [0, 1) (got %g) "
			 "and rescan in [0, 1] (got %g)", grow, unsearched, rescan);
		return AMEBA_EINVAL;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return AMEBA_ENOMEM;
	st->host = host;
	st->n = (uint32_t)n;
	st->keep = (uint32_t)keep;
	st->quiet_ns = (uint64_t)quiet * 1000000ull;
	st->interval_ms = (uint32_t)interval;
	st->max_interval_ms = (uint32_t)max_interval;
	st->max_intervals = (uint32_t)max_intervals;
	st->final_intervals = (uint32_t)final_intervals;
	st->group = (uint32_t)group;
	st->max_ranges = (uint32_t)max_ranges;
	st->use_bins = use_bins != 0;
	st->more = (int)more;
	st->per_thread = (int)per_thread;
	st->grow = grow;
	st->unsearched = unsearched;
	st->rescan = rescan;
	st->missed_min = -1;
	st->primary = ameba_metric_by_name(metric ? metric : "mem_ref");
	if (st->primary < 0 || !strategy_host_has(host, st->primary)) {
		snprintf(msg, 256, "metric=%s: the backend does not measure it", metric ? metric : "?");
		free(st);
		return AMEBA_ENOTSUP;
	}
	if (strategy_metrics_select(host, metrics, st->primary, st->metrics, &st->nr_metrics,
				    msg)) {
		free(st);
		return AMEBA_EINVAL;
	}
	*state = st;
	return 0;
}

static const struct ameba_strategy_desc nway_desc = {
	.abi_version = AMEBA_PLUGIN_ABI_VERSION,
	.struct_size = sizeof(struct ameba_strategy_desc),
	.name = "nway",
	.summary = "n-way priority-queue search of the address space for the hottest objects "
		   "(Buck & Hollingsworth)",
	.params = nway_params,
	.nr_params = sizeof(nway_params) / sizeof(nway_params[0]),
	.create = nway_create,
	.plan = nway_plan,
	.observe = nway_observe,
	.contexts = nway_contexts,
	.progress = nway_progress,
	.destroy = nway_destroy,
};

AMEBA_API const struct ameba_strategy_desc *ameba_strategy_entry(void)
{
	return &nway_desc;
}
