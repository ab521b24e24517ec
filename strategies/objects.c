/*
 * objects.c - the `objects` strategy: measure every object and allocation
 * site directly, one experiment per interval.
 *
 * Notes:
 *  - A *unit* is what one counter covers: a global, a thread's stack or TLS
 *    block (one object each), or an allocation site (all live heap/mmap
 *    blocks of the site: its bin). A site with a single live block is
 *    presented as that block (kind heap, with its address); with more, as
 *    the bin (kind bin, the hull of its blocks, the sum of their sizes).
 *  - Each interval arms, for every metric asked, one total counter (no
 *    ranges) and one counter per unit (the exact extents of its objects),
 *    all per thread. Values accumulate over the intervals, so the contexts
 *    describe the whole measured window. Units keep their identity across
 *    refreshes (site label, or object id), so a block that is freed and
 *    reallocated at the same site keeps adding to its site.
 *  - Ranges of one site that touch, or are separated by less than
 *    ADJACENT_GAP bytes with no other object between them (malloc's chunk
 *    headers), are merged: fewer ranges, the same counts (the gaps hold no
 *    object whose accesses could be miscounted).
 *  - Cold units: a unit that has never counted anything, for COLD_AFTER
 *    intervals and COLD_AFTER_NS in a row (most globals of the C library:
 *    only instrumented code is counted), is folded into one "cold group" counter per metric over all
 *    such units' ranges. While the group reads zero, each of its units is
 *    known to be zero (exact, at a fraction of the counters). When it
 *    reads non-zero, every folded unit gets its own counters again from the
 *    next interval; that interval's cold counts are given to those units
 *    in proportion to what each counts in the next interval that measures
 *    them (cold_give). A unit that has counted stays out of the group when
 *    it goes silent (a phased program's arrays: the group's count of a
 *    phase was given to the unit of the phase after it, whose interval
 *    came next, and a sampled run of bench/sampled_accuracy's phases gave
 *    one array 55% of the misses and the other 0.4%, against 30 and 19%,
 *    in about one run of five); the counter budget's turns bound what
 *    they cost. Units with many ranges (more than
 *    1/COLD_MAX_SHARE of the range budget: sites with thousands of blocks)
 *    are not folded: a silent site is usually one whose blocks are all
 *    still being built, and the group would not fit in the budget. When
 *    the group is left out of an experiment (over the range budget), its
 *    units are not known to be zero: they are measured again.
 *  - Order of the units for the counter budget: those that counted (hottest
 *    first), then those never measured (objects and sites that appeared
 *    since the last interval), then the rest in turns.
 *  - Budgets: at most max_counters counters per experiment and max_ranges
 *    ranges in all counters together (each metric's counter repeats its
 *    unit's ranges, so a unit's ranges count nr_metrics times). Both
 *    default to the host's limits (host->max_counters, max_ranges: 4096
 *    and 24,000, what one 1 MiB start request carries at ~37 bytes of JSON
 *    a range). Under the sim backend the counters themselves cost nothing
 *    per access (every unit is whole objects: docs/mri.md), so the
 *    budgets bound the request, not the program's slowdown.
 *    Units beyond the counter budget are measured in turns, hottest first;
 *    their confidence is the share of the window they were measured in.
 *  - Sites with more ranges than fit (a million small blocks) are sampled:
 *    each active unit gets a fair share q of the range budget (water
 *    filling: units with fewer ranges keep all of theirs), and a unit over
 *    q is measured on every stride-th of its ranges (in address order),
 *    its counts scaled by its object bytes over the measured object bytes.
 *    Blocks of one site are alike, so the estimate is unbiased; its
 *    confidence is halved ("measured=sample"). The stride is a power of
 *    two and the sample starts at the first range, so the sample stays
 *    the same from one interval to the next while the blocks do (a heap
 *    growing upwards only adds ranges at the end): an experiment that is
 *    not re-armed keeps its counts. (A sample rotating with the intervals
 *    changed every experiment, and the provider carries the counts of a
 *    replaced experiment, taken while the agent was busy, only to
 *    identical counters: they were lost.)
 *    (The hull of the blocks, used before, is no estimate when sites are
 *    interleaved in the heap: each hull covers the others' blocks too.)
 *  - Bins: with bins=1 (the default) a site with several live blocks is
 *    measured by its site bin instead (a where-set the monitor resolves per
 *    access from the block it finds, docs/mri.md): every block, whole, new
 *    ones included, for no ranges; the sampling above then only concerns
 *    sites the host lists no bin for.
 *  - The strategy never finishes by itself unless rounds > 0: it measures
 *    until the target exits or the agent's --duration is spent.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ameba/plugin.h"
#include "strategy_util.h"

#define ADJACENT_GAP 32
#define COLD_AFTER 3		/* silent intervals before a unit is folded ... */
#define COLD_AFTER_NS 1000000000ull	/* ... that last at least this long */
#define COLD_MAX_SHARE 8	/* units with more ranges than budget / 8 stay warm */
#define TAG_TOTAL 0xffffffffu
#define TAG_COLD 0xfffffffeu

static const struct ameba_param objects_params[] = {
	{ "metric", AMEBA_PARAM_METRIC, "mem_ref", "metric that orders the units (the run's --metric)" },
	{ "metrics", AMEBA_PARAM_STRING, "all", "metrics to measure: all, or a list like l1d_miss+mem_ref" },
	{ "rounds", AMEBA_PARAM_INT, "0", "intervals to measure, then stop (0: until the target exits)" },
	{ "max_counters", AMEBA_PARAM_STRING, "host", "counters per experiment (host: the monitor's limit)" },
	{ "max_ranges", AMEBA_PARAM_STRING, "host", "address ranges per experiment, over all counters "
	  "(host: the monitor's limit)" },
	{ "bins", AMEBA_PARAM_INT, "1", "1: measure an allocation site with several blocks by its bin "
	  "(the monitor resolves the blocks, new ones included); 0: by its blocks' ranges" },
};

struct unit {
	char *key;			/* "s:<site>" or "o:<id>" */
	struct ameba_object obj;	/* own copy; name and site owned */
	double values[AMEBA_M_NR];
	struct strategy_ptab pt;	/* the threads that counted on it */
	uint64_t window_ns;		/* time this unit was measured */
	int sampled;			/* this plan: measured on a sample of its ranges */
	int ever_sampled;
	double scale;			/* this plan: all bytes / measured bytes */
	uint32_t stride, phase;		/* this plan: ranges phase, phase + stride, ... */
	uint32_t seen, taken;		/* this plan: ranges met and taken in pass 2 */
	int last_taken;
	uint64_t all_bytes, taken_bytes;
	int cold;			/* folded into the cold group */
	uint32_t born_round;		/* the plan that made the unit */
	int was_armed;			/* measured in an earlier interval */
	int woken;			/* left the cold group; its share of the
					 * group's counts is still to be given */
	double last[AMEBA_M_NR];	/* this interval's counts */
	uint32_t zero_rounds;		/* consecutive intervals without a count */
	uint64_t zero_ns;		/* and their length */
	/* this plan */
	int active;
	int counted;
	int ever_counted;		/* counted in some interval: never folded */
	uint32_t range_off, nr_ranges;
	uint32_t nr_live;
	uint64_t live_bytes;
	uintptr_t lo, hi;
	const struct ameba_object *single;	/* the block, when nr_live == 1 */
	const char *bin;		/* this plan: measured by its site bin (host's name) */
};

struct objects {
	const struct ameba_host *host;
	int metrics[AMEBA_M_NR];
	uint32_t nr_metrics;
	int primary;
	uint32_t rounds, nr_rounds;
	uint32_t max_counters, max_ranges;
	int use_bins;

	struct unit *units;
	uint32_t nr_units, cap_units;
	uint32_t *index;		/* open addressing: unit index + 1, 0 = empty */
	uint32_t index_cap;
	uint32_t cursor;		/* round robin over units beyond the budget */

	double program[AMEBA_M_NR];
	struct strategy_ptab program_pt;
	uint64_t window_ns;

	double cold_unattributed[AMEBA_M_NR];	/* counted by the cold group */
	double cold_pending[AMEBA_M_NR];	/* of it, still to be given to woken units */
	struct strategy_ptab cold_pt;		/* its threads' part */
	uint32_t cold_wait;			/* intervals it has waited */

	/* plan storage, valid until observe() */
	struct ameba_counter *counters;
	struct ameba_counter_bins *cbins;	/* [cap_counters] */
	uint32_t cap_counters;
	uintptr_t *ranges;
	uint32_t nr_ranges, cap_ranges;
	uint32_t cold_off, cold_nr;	/* the cold group's ranges */
	uint32_t *order;

	/* contexts storage, valid until the next call */
	struct ameba_context *ctxs;
};

/* ---- units ---- */

/* The unit of key, created when new; NULL on allocation failure. */
static struct unit *unit_get(struct objects *st, const char *key)
{
	struct unit *u;
	uint32_t slot = 0;
	int64_t i = strategy_index_find(&st->index, &st->index_cap, st->units, sizeof(*st->units),
					offsetof(struct unit, key), st->nr_units, key, &slot);

	if (i >= 0)
		return &st->units[i];
	if (i != -1)
		return NULL;
	if (st->nr_units == st->cap_units) {
		uint32_t cap = st->cap_units ? 2 * st->cap_units : 64;
		struct unit *nu = realloc(st->units, cap * sizeof(*nu));

		if (!nu)
			return NULL;
		st->units = nu;
		st->cap_units = cap;
	}
	u = &st->units[st->nr_units];
	memset(u, 0, sizeof(*u));
	u->born_round = st->nr_rounds;
	u->stride = 1;
	u->scale = 1.0;
	u->key = strdup(key);
	if (!u->key)
		return NULL;
	st->index[slot] = ++st->nr_units;
	return u;
}

static int unit_set_obj(struct unit *u, const struct ameba_object *o)
{
	char *name = strdup(o->name ? o->name : "?");
	char *site = o->site ? strdup(o->site) : NULL;

	if (!name || (o->site && !site)) {
		free(name);
		free(site);
		return AMEBA_ENOMEM;
	}
	free((char *)u->obj.name);
	free((char *)u->obj.site);
	u->obj = *o;
	u->obj.name = name;
	u->obj.site = site;
	return 0;
}

static int ranges_push(struct objects *st, uintptr_t start, uintptr_t end)
{
	if (st->nr_ranges + 1 > st->cap_ranges) {
		uint32_t cap = st->cap_ranges ? 2 * st->cap_ranges : 1024;
		uintptr_t *r = realloc(st->ranges, 2 * (size_t)cap * sizeof(*r));

		if (!r)
			return AMEBA_ENOMEM;
		st->ranges = r;
		st->cap_ranges = cap;
	}
	st->ranges[2 * st->nr_ranges] = start;
	st->ranges[2 * st->nr_ranges + 1] = end;
	st->nr_ranges++;
	return 0;
}

static int is_site_kind(const struct ameba_object *o)
{
	return (o->kind == AMEBA_OBJ_HEAP || o->kind == AMEBA_OBJ_MMAP) && o->site;
}

/*
 * Pass 1: find each live object's unit and count its blocks and ranges.
 * Objects arrive sorted by start, so the ranges of a unit are in address
 * order; a unit's ranges are collected per unit in pass 2.
 */
static int units_collect(struct objects *st, uint32_t *of)
{
	const struct ameba_host *h = st->host;
	/* the units of the sites met last: a heap of a million blocks from a
	 * few sites costs a strcmp per block, not a key and a hash */
	struct { const char *site; uint32_t unit; } recent[8] = { { 0 } };
	uint32_t next_recent = 0;
	char key[4200];

	for (uint32_t u = 0; u < st->nr_units; u++) {
		st->units[u].active = 0;
		st->units[u].nr_live = 0;
		st->units[u].nr_ranges = 0;
		st->units[u].live_bytes = 0;
		st->units[u].single = NULL;
		st->units[u].sampled = 0;
		st->units[u].scale = 1.0;
		st->units[u].stride = 1;
		st->units[u].phase = 0;
		st->units[u].bin = NULL;
	}
	for (uint32_t i = 0; i < h->nr_objects; i++) {
		const struct ameba_object *o = ameba_host_object(h, i);
		struct unit *u;

		of[i] = 0;
		if (!o->live || o->kind == AMEBA_OBJ_OTHER || o->end <= o->start)
			continue;
		u = NULL;
		if (is_site_kind(o))
			for (uint32_t k = 0; k < 8 && !u; k++)
				if (recent[k].site && (recent[k].site == o->site ||
						       !strcmp(recent[k].site, o->site)))
					u = &st->units[recent[k].unit];
		if (!u) {
			if (is_site_kind(o))
				snprintf(key, sizeof(key), "s:%s", o->site);
			else
				snprintf(key, sizeof(key), "o:%llu", (unsigned long long)o->id);
			u = unit_get(st, key);
			if (!u)
				return AMEBA_ENOMEM;
			if (is_site_kind(o)) {
				recent[next_recent].site = o->site;
				recent[next_recent].unit = (uint32_t)(u - st->units);
				next_recent = (next_recent + 1) % 8;
			}
		}
		of[i] = (uint32_t)(u - st->units) + 1;	/* an index: units may move */
		if (!u->nr_live) {
			u->lo = o->start;
			u->hi = o->end;
		}
		u->nr_live++;
		u->live_bytes += o->sz_bytes;
		u->lo = o->start < u->lo ? o->start : u->lo;
		u->hi = o->end > u->hi ? o->end : u->hi;
		u->single = o;
	}
	return 0;
}

/* Presentation of a unit: its single block, or its bin. */
static int unit_describe(struct objects *st, struct unit *u)
{
	const struct ameba_host *h = st->host;
	struct ameba_object bin;

	if (u->nr_live == 1 || u->key[0] == 'o')
		return unit_set_obj(u, u->single);
	memset(&bin, 0, sizeof(bin));
	bin.kind = AMEBA_OBJ_BIN;
	bin.name = u->single->site;
	bin.site = u->single->site;
	bin.start = u->lo;
	bin.end = u->hi;
	bin.sz_bytes = u->live_bytes;
	bin.nr_blocks = u->nr_live;
	bin.live = 1;
	for (uint32_t b = 0; b < h->nr_bins; b++)
		if (ameba_host_bin(h, b)->name && !strcmp(ameba_host_bin(h, b)->name, u->single->site)) {
			bin.id = ameba_host_bin(h, b)->id;
			break;
		}
	return unit_set_obj(u, &bin);
}

static int cmp_hot(const void *a, const void *b, void *arg)
{
	const struct objects *st = arg;
	const struct unit *x = &st->units[*(const uint32_t *)a], *y = &st->units[*(const uint32_t *)b];
	double vx = x->values[st->primary], vy = y->values[st->primary];

	return (vx < vy) - (vx > vy);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Is object i merged into the range of object i - 1 (same group, adjacent)? */
static int merges(const struct ameba_host *h, const uint32_t *grp, uint32_t i)
{
	return i > 0 && grp[i] && grp[i - 1] == grp[i] &&
	       ameba_host_object(h, i)->start - ameba_host_object(h, i - 1)->end <= ADJACENT_GAP;
}

/*
 * The largest q such that the active units, each measured on at most q of
 * its ranges, hold no more than budget ranges (water filling); at least 1.
 */
static uint32_t fair_share(struct objects *st, uint32_t nr_active, uint32_t budget)
{
	uint32_t *n = malloc((nr_active + 1) * sizeof(*n)), left = nr_active, q = 1;

	if (!n)
		return 1;
	for (uint32_t i = 0; i < nr_active; i++)
		n[i] = st->units[st->order[i]].nr_ranges;
	qsort(n, nr_active, sizeof(*n), cmp_u32);
	for (uint32_t i = 0; i < nr_active; i++, left--) {
		if ((uint64_t)n[i] * left > budget) {
			q = budget / left;
			break;
		}
		budget -= n[i];
		q = n[i];
	}
	free(n);
	return q ? q : 1;
}

static int objects_plan(void *state, struct ameba_experiment *exp)
{
	struct objects *st = state;
	const struct ameba_host *h = st->host;
	uint32_t *of = NULL, *grp = NULL;
	uint32_t nr_active = 0, max_units, nr_counters, c = 0, n = 0, nr_hot = 0;
	uint32_t nr_grp_ranges, total, budget;
	int rc, have_bins = 0;

	if (st->rounds && st->nr_rounds >= st->rounds)
		return 1;
	of = calloc(h->nr_objects + 1, sizeof(*of));
	grp = calloc(h->nr_objects + 1, sizeof(*grp));
	free(st->order);
	st->order = malloc((st->nr_units + h->nr_objects + 1) * sizeof(*st->order));
	if (!of || !grp || !st->order) {
		rc = AMEBA_ENOMEM;
		goto out;
	}
	rc = units_collect(st, of);
	if (rc)
		goto out;
	/*
	 * A site with several blocks is measured by its bin: the monitor finds
	 * each access's block and its site, so every block counts, whole, new
	 * ones included, for no ranges (no sample, no listing lag).
	 */
	for (uint32_t u = 0; st->use_bins && u < st->nr_units; u++) {
		struct unit *un = &st->units[u];

		if (un->key[0] != 's' || un->nr_live < 2)
			continue;
		for (uint32_t b = 0; b < h->nr_bins && !un->bin; b++)
			if (ameba_host_bin(h, b)->name && !strcmp(ameba_host_bin(h, b)->name, un->key + 2))
				un->bin = ameba_host_bin(h, b)->name;
	}

	/*
	 * Which units get counters of their own: the warm ones (not folded
	 * into the cold group), hottest first, as many as the counter budget
	 * holds (one counter per metric each, plus the total and the cold
	 * group); beyond the budget the rest take turns.
	 */
	max_units = st->max_counters / st->nr_metrics;
	max_units = max_units > 2 ? max_units - 2 : 0;
	for (uint32_t u = 0; u < st->nr_units; u++)
		if (st->units[u].nr_live && !st->units[u].cold)
			st->order[n++] = u;
	qsort_r(st->order, n, sizeof(*st->order), cmp_hot, st);
	while (nr_hot < n && st->units[st->order[nr_hot]].values[st->primary] > 0)
		nr_hot++;
	{
		/* next, units never measured (new objects, new sites): an
		 * object allocated mid-run is measured from the next interval,
		 * not after its turn among hundreds of silent library globals */
		uint32_t k = nr_hot, rest = 0, *tmp = malloc((n - nr_hot + 1) * sizeof(*tmp));

		if (tmp) {
			for (uint32_t i = nr_hot; i < n; i++) {
				uint32_t t = st->order[i];

				if (!st->units[t].window_ns)
					st->order[k++] = t;
				else
					tmp[rest++] = t;
			}
			memcpy(st->order + k, tmp, rest * sizeof(*tmp));
			free(tmp);
			nr_hot = k;
		}
	}
	if (n > max_units && nr_hot < max_units) {
		/* rotate the tail so every unit gets its turn */
		uint32_t rest = n - nr_hot, shift = st->cursor % rest;
		uint32_t *tmp = malloc(rest * sizeof(*tmp));

		if (tmp) {
			for (uint32_t i = 0; i < rest; i++)
				tmp[i] = st->order[nr_hot + (i + shift) % rest];
			memcpy(st->order + nr_hot, tmp, rest * sizeof(*tmp));
			free(tmp);
		}
		st->cursor += max_units - nr_hot;
	}
	nr_active = n < max_units ? n : max_units;
	for (uint32_t i = 0; i < nr_active; i++)
		st->units[st->order[i]].active = 1;

	/*
	 * Range groups per object: its unit (index + 1) when active, the cold
	 * group (UINT32_MAX) when its unit is cold, else none (0). Count the
	 * ranges of each group after merging adjacent objects of one group.
	 */
	nr_grp_ranges = 0;
	total = 0;
	for (uint32_t i = 0; i < h->nr_objects; i++) {
		struct unit *u = of[i] ? &st->units[of[i] - 1] : NULL;

		grp[i] = !u || u->bin ? 0 : u->active ? of[i] : u->cold ? UINT32_MAX : 0;
		if (!grp[i] || merges(h, grp, i))
			continue;
		if (grp[i] == UINT32_MAX)
			nr_grp_ranges++;
		else
			u->nr_ranges++;
		total++;
	}
	/*
	 * Over the range budget (every range is repeated in each metric's
	 * counter): the cold group is left unmeasured when it would take
	 * more than half the budget, and units with more ranges than their
	 * fair share q are measured on every stride-th range (a sample that
	 * rotates with the rounds), their counts scaled up by bytes.
	 */
	budget = st->max_ranges / st->nr_metrics;
	if (total > budget && nr_grp_ranges > budget / 2) {
		total -= nr_grp_ranges;
		nr_grp_ranges = 0;
	}
	if (total > budget) {
		uint32_t q = fair_share(st, nr_active, budget > nr_grp_ranges ?
					budget - nr_grp_ranges : 0);

		for (uint32_t i = 0; i < nr_active; i++) {
			struct unit *u = &st->units[st->order[i]];

			if (u->nr_ranges <= q)
				continue;
			u->sampled = 1;
			u->stride = 1;
			while ((uint64_t)u->stride * q < u->nr_ranges)
				u->stride *= 2;
			u->phase = 0;
			u->nr_ranges = (u->nr_ranges + u->stride - 1) / u->stride;
		}
	}
	st->nr_ranges = 0;
	st->cold_off = 0;
	st->cold_nr = 0;
	for (uint32_t i = 0; i < nr_active; i++) {
		struct unit *u = &st->units[st->order[i]];

		u->range_off = st->nr_ranges;
		for (uint32_t k = 0; k < u->nr_ranges; k++)
			if ((rc = ranges_push(st, 0, 0)))
				goto out;
		u->seen = u->taken = 0;
		u->last_taken = 0;
		u->all_bytes = u->taken_bytes = 0;
	}
	st->cold_off = st->nr_ranges;
	for (uint32_t k = 0; k < nr_grp_ranges; k++)
		if ((rc = ranges_push(st, 0, 0)))
			goto out;
	for (uint32_t i = 0; i < h->nr_objects; i++) {
		const struct ameba_object *o = ameba_host_object(h, i);
		uint32_t g = grp[i], r;
		struct unit *u = g && g != UINT32_MAX ? &st->units[g - 1] : NULL;

		if (!g || (!u && !nr_grp_ranges))
			continue;
		if (!u) {
			if (merges(h, grp, i))
				st->ranges[2 * (st->cold_off + st->cold_nr - 1) + 1] = o->end;
			else {
				r = st->cold_off + st->cold_nr++;
				st->ranges[2 * r] = o->start;
				st->ranges[2 * r + 1] = o->end;
			}
			continue;
		}
		u->all_bytes += o->end - o->start;
		if (!merges(h, grp, i))
			u->last_taken = u->seen++ % u->stride == u->phase && u->taken < u->nr_ranges;
		if (!u->last_taken)
			continue;
		u->taken_bytes += o->end - o->start;
		if (merges(h, grp, i)) {
			st->ranges[2 * (u->range_off + u->taken - 1) + 1] = o->end;
			continue;
		}
		r = u->range_off + u->taken++;
		st->ranges[2 * r] = o->start;
		st->ranges[2 * r + 1] = o->end;
	}
	for (uint32_t i = 0; i < nr_active; i++) {
		struct unit *u = &st->units[st->order[i]];

		u->nr_ranges = u->taken;
		if (u->sampled && u->taken_bytes)
			u->scale = (double)u->all_bytes / (double)u->taken_bytes;
	}
	for (uint32_t i = 0; i < nr_active; i++)
		if ((rc = unit_describe(st, &st->units[st->order[i]])))
			goto out;

	nr_counters = st->nr_metrics * (nr_active + 2);
	if (nr_counters > st->cap_counters) {
		struct ameba_counter *cs = realloc(st->counters, nr_counters * sizeof(*cs));
		struct ameba_counter_bins *cb;

		if (cs)
			st->counters = cs;
		cb = realloc(st->cbins, nr_counters * sizeof(*cb));
		if (cb)
			st->cbins = cb;
		if (!cs || !cb) {
			rc = AMEBA_ENOMEM;
			goto out;
		}
		st->cap_counters = nr_counters;
	}
	memset(st->cbins, 0, nr_counters * sizeof(*st->cbins));
	for (uint32_t k = 0; k < st->nr_metrics; k++) {
		struct ameba_counter *ct = &st->counters[c++];

		memset(ct, 0, sizeof(*ct));
		ct->metric = st->metrics[k];
		ct->per_thread = 1;
		ct->tag = ((uint64_t)TAG_TOTAL << 8) | (uint64_t)k;
		if (st->cold_nr) {
			ct = &st->counters[c++];
			memset(ct, 0, sizeof(*ct));
			ct->metric = st->metrics[k];
			ct->nr_ranges = st->cold_nr;
			ct->ranges = st->ranges + 2 * (size_t)st->cold_off;
			ct->tag = ((uint64_t)TAG_COLD << 8) | (uint64_t)k;
		}
		for (uint32_t i = 0; i < nr_active; i++) {
			struct unit *u = &st->units[st->order[i]];

			ct = &st->counters[c++];
			memset(ct, 0, sizeof(*ct));
			ct->metric = st->metrics[k];
			ct->nr_ranges = u->nr_ranges;
			ct->ranges = st->ranges + 2 * (size_t)u->range_off;
			ct->per_thread = 1;
			ct->tag = ((uint64_t)st->order[i] << 8) | (uint64_t)k;
			if (u->bin) {
				st->cbins[c - 1].nr = 1;
				st->cbins[c - 1].names = &u->bin;
				have_bins = 1;
			}
		}
	}
	ameba_experiment_reset(exp);
	exp->nr_counters = c;
	exp->counters = st->counters;
	exp->counter_bins = have_bins ? st->cbins : NULL;
	rc = 0;
out:
	free(of);
	free(grp);
	return rc;
}

/*
 * What the cold group counted in the interval it woke up in is given to the
 * units that left it, in proportion to what each counts in the next
 * interval that measures them (per metric; by the primary metric's
 * proportions for a metric they all count nothing of), threads included.
 * A unit whose phase begins is so given the interval it began in (a short
 * phase lost most of its counts to the group otherwise, sampled runs
 * most). After COLD_GIVE_WAIT intervals in which none of them counts, the
 * counts stay unattributed.
 */
#define COLD_GIVE_WAIT 3
static int cold_give(struct objects *st)
{
	double sum[AMEBA_M_NR] = { 0 };
	int any = 0, left = 0, p = st->primary;

	for (uint32_t u = 0; u < st->nr_units; u++) {
		const struct unit *un = &st->units[u];

		if (!un->woken)
			continue;
		any = 1;
		for (uint32_t k = 0; k < st->nr_metrics; k++)
			sum[st->metrics[k]] += un->last[st->metrics[k]];
	}
	if (!any)
		return 0;
	for (uint32_t k = 0; k < st->nr_metrics; k++) {
		int m = st->metrics[k], by = sum[m] > 0 ? m : p;
		struct strategy_ptab *cp = &st->cold_pt;

		if (st->cold_pending[m] <= 0)
			continue;
		if (sum[by] <= 0) {
			left = 1;
			continue;
		}
		for (uint32_t u = 0; u < st->nr_units; u++) {
			struct unit *un = &st->units[u];
			double f = un->woken ? un->last[by] / sum[by] : 0;

			if (f <= 0)
				continue;
			un->values[m] += f * st->cold_pending[m];
			for (uint32_t t = 0; t < cp->nr; t++) {
				long e = cp->v[m] ? strategy_ptab_at(&un->pt, st->metrics, st->nr_metrics,
								     cp->ids[t]) : 0;

				if (e < 0)
					return AMEBA_ENOMEM;
				if (cp->v[m])
					un->pt.v[m][e] += f * cp->v[m][t];
			}
		}
		st->cold_unattributed[m] -= st->cold_pending[m];
		st->cold_pending[m] = 0;
	}
	if (left && ++st->cold_wait < COLD_GIVE_WAIT)
		return 0;
	for (uint32_t u = 0; u < st->nr_units; u++)
		st->units[u].woken = 0;
	memset(st->cold_pending, 0, sizeof(st->cold_pending));
	strategy_ptab_free(&st->cold_pt);
	st->cold_wait = 0;
	return 0;
}

static int objects_observe(void *state, const struct ameba_experiment *exp,
			   const struct ameba_results *res)
{
	struct objects *st = state;
	int rc, cold_hit = 0;

	for (uint32_t u = 0; u < st->nr_units; u++) {
		st->units[u].counted = 0;
		memset(st->units[u].last, 0, sizeof(st->units[u].last));
	}
	for (uint32_t i = 0; i < exp->nr_counters && i < res->nr_counters; i++) {
		const struct ameba_counter *ct = &exp->counters[i];
		uint32_t u = (uint32_t)(ct->tag >> 8);
		int m = st->metrics[ct->tag & 0xff];
		struct strategy_ptab *pt;
		double *tot, scale = 1.0;

		if (u == TAG_COLD) {
			/* counts of folded units, not attributable to one of them */
			if (res->values[i]) {
				st->cold_unattributed[m] += (double)res->values[i];
				st->cold_pending[m] += (double)res->values[i];
				cold_hit = 1;
				if (res->per_thread && res->per_thread[i] &&
				    (rc = strategy_ptab_add(&st->cold_pt, st->metrics, st->nr_metrics, m,
							    res, res->per_thread[i], 1.0)))
					return rc;
			}
			continue;
		}
		if (u == TAG_TOTAL) {
			tot = &st->program[m];
			pt = &st->program_pt;
		} else {
			struct unit *un = &st->units[u];

			tot = &un->values[m];
			pt = &un->pt;
			un->counted |= res->values[i] != 0;
			scale = un->scale;
			un->ever_sampled |= un->sampled;
			/*
			 * A unit the program made after the first plan, measured
			 * for the first time: what its objects counted between
			 * their births and this interval (the program's counter
			 * counted it in the intervals before) -- an array
			 * allocated and filled at once is counted whole.
			 */
			un->last[m] += scale * (double)res->values[i];
			if (res->before && un->born_round > 0 && !un->was_armed) {
				*tot += scale * (double)res->before[i];
				un->counted |= res->before[i] != 0;
				if (res->per_thread_before && res->per_thread_before[i] &&
				    (rc = strategy_ptab_add(pt, st->metrics, st->nr_metrics, m, res,
							    res->per_thread_before[i], scale)))
					return rc;
			}
		}
		*tot += scale * (double)res->values[i];
		if (res->per_thread && res->per_thread[i] &&
		    (rc = strategy_ptab_add(pt, st->metrics, st->nr_metrics, m, res, res->per_thread[i],
					    scale)))
			return rc;
	}
	for (uint32_t u = 0; u < st->nr_units; u++)
		st->units[u].was_armed |= st->units[u].active;
	if ((rc = cold_give(st)))
		return rc;
	for (uint32_t u = 0; u < st->nr_units; u++) {
		struct unit *un = &st->units[u];

		if (un->active) {
			un->window_ns += res->elapsed_ns;
			/* fold a unit that stays silent into the cold group */
			un->ever_counted |= un->counted;
			un->zero_rounds = un->counted ? 0 : un->zero_rounds + 1;
			un->zero_ns = un->counted ? 0 : un->zero_ns + res->elapsed_ns;
			if (un->zero_rounds >= COLD_AFTER && un->zero_ns >= COLD_AFTER_NS && !un->ever_counted &&
			    un->seen <= st->max_ranges / st->nr_metrics / COLD_MAX_SHARE && !un->bin)
				un->cold = 1;
		} else if (un->cold && un->nr_live) {
			if (cold_hit || !st->cold_nr) {
				/* someone in the cold group woke up, or the group was
				 * not measured (over the range budget): measure each
				 * again */
				un->cold = 0;
				un->woken = cold_hit;
				un->zero_rounds = 0;
				un->zero_ns = 0;
			} else {
				/* the group counted nothing: neither did this unit */
				un->window_ns += res->elapsed_ns;
			}
		}
	}
	st->window_ns += res->elapsed_ns;
	st->nr_rounds++;
	return 0;
}

static void ctx_fill(struct objects *st, struct ameba_context *c, const double *values,
		     const struct strategy_ptab *pt)
{
	strategy_ctx_fill(c, st->metrics, st->nr_metrics, values, st->program, pt->v, pt->nr,
			  pt->ids, st->window_ns, st->host->exact);
}

static int objects_contexts(void *state, const struct ameba_context **out, uint32_t *nr)
{
	struct objects *st = state;
	uint32_t n = 0, *order;

	free(st->ctxs);
	st->ctxs = strategy_ctxs_alloc(st->nr_units + 1);
	order = malloc((st->nr_units + 1) * sizeof(*order));
	if (!st->ctxs || !order) {
		free(order);
		return AMEBA_ENOMEM;
	}
	ctx_fill(st, &st->ctxs[n], st->program, &st->program_pt);
	st->ctxs[n++].kind = AMEBA_CTX_PROGRAM;
	{
		uint32_t k = 0;

		for (uint32_t u = 0; u < st->nr_units; u++) {
			const struct unit *un = &st->units[u];
			int any = 0;

			for (uint32_t i = 0; i < st->nr_metrics; i++)
				any |= un->values[st->metrics[i]] > 0;
			if (any && un->obj.name)
				order[k++] = u;
		}
		qsort_r(order, k, sizeof(*order), cmp_hot, st);
		for (uint32_t i = 0; i < k; i++) {
			struct unit *un = &st->units[order[i]];
			struct ameba_context *c = &st->ctxs[n++];

			ctx_fill(st, c, un->values, &un->pt);
			c->kind = AMEBA_CTX_OBJECT;
			c->object = &un->obj;
			if (st->window_ns && un->window_ns < st->window_ns)
				c->confidence *= (double)un->window_ns / (double)st->window_ns;
			if (un->ever_sampled) {
				c->confidence *= 0.5;
				c->extra = "measured=sample";
			}
		}
	}
	free(order);
	*out = st->ctxs;
	*nr = n;
	return 0;
}

static void objects_progress(void *state, char *buf, size_t len)
{
	struct objects *st = state;
	const struct unit *best = NULL;

	for (uint32_t u = 0; u < st->nr_units; u++)
		if (!best || st->units[u].values[st->primary] > best->values[st->primary])
			best = &st->units[u];
	if (best && best->obj.name && st->program[st->primary] > 0)
		snprintf(buf, len, "%s %.1f%% of %s", best->obj.name,
			 100.0 * best->values[st->primary] / st->program[st->primary],
			 ameba_metric_info(st->primary)->name);
	else
		snprintf(buf, len, "%u units", st->nr_units);
}

static void objects_destroy(void *state)
{
	struct objects *st = state;

	for (uint32_t u = 0; u < st->nr_units; u++) {
		free(st->units[u].key);
		free((char *)st->units[u].obj.name);
		free((char *)st->units[u].obj.site);
		strategy_ptab_free(&st->units[u].pt);
	}
	strategy_ptab_free(&st->program_pt);
	strategy_ptab_free(&st->cold_pt);
	free(st->units);
	free(st->index);
	free(st->counters);
	free(st->cbins);
	free(st->ranges);
	free(st->order);
	free(st->ctxs);
	free(st);
}

static int objects_create(const struct ameba_host *host, const struct ameba_params *params,
			  void **state, char *msg)
{
	struct objects *st;
	const char *metrics = ameba_param_get(params, "metrics");
	const char *metric = ameba_param_get(params, "metric");
	long long rounds = atoll(ameba_param_get(params, "rounds") ?: "0");
	int has = AMEBA_HOST_HAS(host, max_ranges);
	long long max_counters = strategy_limit(ameba_param_get(params, "max_counters"),
						has ? host->max_counters : 0, AMEBA_MAX_COUNTERS);
	long long max_ranges = strategy_limit(ameba_param_get(params, "max_ranges"),
					      has ? host->max_ranges : 0, AMEBA_MAX_RANGES);
	long long use_bins = atoll(ameba_param_get(params, "bins") ?: "1");

	if (host->abi_version != AMEBA_PLUGIN_ABI_VERSION) {
		snprintf(msg, 256, "host speaks plugin ABI %u, objects.so was built for %d",
			 host->abi_version, AMEBA_PLUGIN_ABI_VERSION);
		return AMEBA_EABI;
	}
	if (rounds < 0 || max_counters < 2 || max_ranges < 1 || (use_bins != 0 && use_bins != 1)) {
		snprintf(msg, 256, "rounds must be >= 0, max_counters >= 2, max_ranges >= 1, bins 0 or 1 "
			 "(got %lld, %lld, %lld, %lld)", rounds, max_counters, max_ranges, use_bins);
		return AMEBA_EINVAL;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return AMEBA_ENOMEM;
	st->host = host;
	st->rounds = (uint32_t)rounds;
	st->max_counters = (uint32_t)max_counters;
	st->max_ranges = (uint32_t)max_ranges;
	st->use_bins = use_bins != 0;
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
	if (st->nr_metrics * 2 > st->max_counters) {
		snprintf(msg, 256, "max_counters=%u cannot hold %u metrics x (1 total + 1 object)",
			 st->max_counters, st->nr_metrics);
		free(st);
		return AMEBA_EINVAL;
	}
	*state = st;
	return 0;
}

static const struct ameba_strategy_desc objects_desc = {
	.abi_version = AMEBA_PLUGIN_ABI_VERSION,
	.struct_size = sizeof(struct ameba_strategy_desc),
	.name = "objects",
	.summary = "measure every object and allocation site directly, every interval (exact)",
	.params = objects_params,
	.nr_params = sizeof(objects_params) / sizeof(objects_params[0]),
	.create = objects_create,
	.plan = objects_plan,
	.observe = objects_observe,
	.contexts = objects_contexts,
	.progress = objects_progress,
	.destroy = objects_destroy,
};

AMEBA_API const struct ameba_strategy_desc *ameba_strategy_entry(void)
{
	return &objects_desc;
}
