/*
 * threads.c - the `threads` strategy: refine the objects another strategy
 * found (the seeds of a chain, --strategy objects,threads) to who causes
 * their misses: per-thread figures on each object (AMEBA's ParPerf
 * context), per-cache-line figures for its worst lines, and word-level
 * evidence (writes and reads per 8-byte word, per thread) on those lines.
 *
 * Notes:
 *  - Targets: the top `top` seeds of kind object by `metric` (the run's
 *    metric), or the one named by `object=NAME` (a seed, or else a live
 *    object or bin of that name or site: the strategy also runs alone).
 *    Program and line seeds are skipped. A target keeps its seed's extent;
 *    a bin is measured on its live blocks, refreshed every interval.
 *  - Every interval measures, per thread, every metric of the backend on
 *    the whole address space (the program context) and on each target's
 *    extent (the object context), plus each target's line work:
 *      survey  two counters (coh_miss, and l1d_miss or else the ranking
 *              metric) per candidate segment, not per thread;
 *      words   for each chosen line: every metric on the line per thread,
 *              and writes and reads on each of its eight 8-byte words per
 *              thread (16 more counters).
 *    A target of at most max_lines lines has all its lines chosen at once.
 *    A larger one is cut into max_segs segments of whole lines (half the
 *    counter budget shared by the targets, at most 1024); after `survey`
 *    intervals the max_lines worst segments that counted anything
 *    (coherence misses first, then misses) are kept and cut again, until
 *    they are single lines: the chosen ones. An 8 MiB object takes three
 *    survey intervals; a segment that went quiet in a phase is dropped,
 *    and a target whose segments all counted nothing is surveyed again
 *    (without holding back the end after `rounds`).
 *    Targets survey and measure words independently, so one large seed
 *    does not hold back the others.
 *  - Budgets: max_counters counters and max_ranges ranges per experiment
 *    (the monitor's limits). A target's survey is armed whole or not at
 *    all in an interval. Chosen lines beyond the budget are measured in
 *    turns; a line's confidence is then the share of the time since it was
 *    chosen that it was measured.
 *  - Lines are whole 64-byte cache lines, also where the object starts or
 *    ends inside one: a neighbour's writes to the same line are exactly
 *    the evidence false sharing needs. Offsets are relative to the
 *    object's start (the hull's start for a bin) and can be negative for
 *    the words of a first line that begins before the object.
 *  - A word counter counts the accesses whose address (after the monitor
 *    split them at line boundaries) lies in the word: an access wider than
 *    8 bytes counts for its first word only.
 *  - Evidence goes to ctx->extra, one key=value per line:
 *      line.<line offset>=<coh_miss>,<coh_miss_false>,<writes>
 *      w.<thread id>.<word offset>=<writes>,<reads>   (non-zero words)
 *    an object context holds all its chosen lines, a line context its own.
 *    Metrics the backend lacks read 0. A line measured in turns adds
 *    `measured=turns` to its own context's extra (confidence < 1).
 *  - Ends after `rounds` intervals counted once every survey ended (0:
 *    never; the target's exit or the agent's --duration ends it); with no
 *    target it ends at once.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ameba/plugin.h"
#include "strategy_util.h"

#define LINE_BYTES 64
#define WORD_BYTES 8
#define NR_WORDS (LINE_BYTES / WORD_BYTES)
#define MAX_TARGETS 64

/* counter tags: kind << 56 | index << 8 | slot (metric, word, or survey target) */
enum { TAG_TOTAL = 1, TAG_OBJ, TAG_LINE, TAG_WORD_WR, TAG_WORD_RD, TAG_SURVEY_COH,
       TAG_SURVEY_MISS };

static const struct ameba_param threads_params[] = {
	{ "metric", AMEBA_PARAM_METRIC, "mem_ref", "metric that ranks seeds (the run's --metric)" },
	{ "top", AMEBA_PARAM_INT, "3", "seeds to refine, best first" },
	{ "object", AMEBA_PARAM_STRING, "", "refine only this object (name or site); overrides top" },
	{ "max_lines", AMEBA_PARAM_INT, "16", "cache lines per object with word-level evidence" },
	{ "survey", AMEBA_PARAM_INT, "1", "intervals each set of survey segments is counted before it is narrowed" },
	{ "rounds", AMEBA_PARAM_INT, "0", "intervals after the surveys, then stop (0: until the end)" },
	{ "max_counters", AMEBA_PARAM_STRING, "host", "counters per experiment (host: the monitor's limit)" },
	{ "max_ranges", AMEBA_PARAM_STRING, "host", "address ranges per experiment (host: the monitor's limit)" },
};

struct line {
	uintptr_t addr;
	uint32_t target;
	double values[AMEBA_M_NR];
	double *pt[AMEBA_M_NR];		/* [nr_threads_cap] */
	double *wr[NR_WORDS], *rd[NR_WORDS];	/* [nr_threads_cap] */
	uint64_t window_ns;
	uint64_t chosen_ns;		/* the strategy's window when it was chosen */
	int active;			/* measured in this experiment */
	char *extra;
};

enum phase { PH_NEW, PH_SURVEY, PH_WORDS };

struct seg {
	uintptr_t start, end;
	double coh, miss;
};

struct target {
	struct ameba_object obj;	/* own copy; name and site owned */
	int bin;			/* measured on its live blocks */
	uintptr_t *blocks;		/* 2 * nr_blocks, sorted */
	uint32_t nr_blocks;
	double values[AMEBA_M_NR];
	double *pt[AMEBA_M_NR];
	uint64_t window_ns;
	int phase;			/* enum phase */
	/* survey: candidate segments of whole lines, [start, end) */
	struct seg *segs;
	uint32_t nr_segs;
	uint32_t seg_rounds;		/* intervals the current segments were counted */
	int surveyed;			/* this plan counts its segments */
	int waiting;			/* its survey counted nothing, or did not fit: it
					 * does not hold back `rounds` */
	uint32_t range_off;		/* this plan: first block range */
	char *extra;
};

struct threads {
	const struct ameba_host *host;
	int metrics[AMEBA_M_NR];
	uint32_t nr_metrics;
	int primary, survey_metric;
	uint32_t top, max_lines, survey, rounds, max_counters, max_ranges;
	uint32_t max_segs;		/* survey segments per target and interval */
	char *object_name;

	struct target *targets;
	uint32_t nr_targets;
	int resolved;			/* targets were chosen */
	uint32_t nr_word_rounds;	/* intervals after every survey ended */

	struct line *lines;		/* chosen, all targets */
	uint32_t nr_lines;
	uint32_t line_cursor;

	uint32_t nr_threads_cap;
	uint32_t *thread_ids;
	double program[AMEBA_M_NR];
	double *program_pt[AMEBA_M_NR];
	uint64_t window_ns;

	/* plan storage */
	struct ameba_counter *counters;
	uint32_t nr_counters, cap_counters;
	uintptr_t *ranges;
	uint32_t nr_ranges, cap_ranges;

	struct ameba_context *ctxs;
};

static uint64_t tag_make(int kind, uint32_t idx, uint32_t slot)
{
	return (uint64_t)kind << 56 | (uint64_t)idx << 8 | slot;
}

static int host_has(const struct ameba_host *h, int m)
{
	for (uint32_t i = 0; i < h->nr_metrics; i++)
		if (h->metrics[i] == m)
			return 1;
	return 0;
}

/* ---- per-thread arrays ---- */

static int line_grow(struct threads *st, struct line *l, uint32_t old, uint32_t nr)
{
	for (uint32_t k = 0; k < st->nr_metrics; k++)
		if (strategy_grow_pt(&l->pt[st->metrics[k]], old, nr))
			return AMEBA_ENOMEM;
	for (int w = 0; w < NR_WORDS; w++)
		if (strategy_grow_pt(&l->wr[w], old, nr) || strategy_grow_pt(&l->rd[w], old, nr))
			return AMEBA_ENOMEM;
	return 0;
}

static int threads_grow(struct threads *st, uint32_t nr)
{
	uint32_t *ids, old = st->nr_threads_cap;

	if (nr <= old)
		return 0;
	for (uint32_t k = 0; k < st->nr_metrics; k++) {
		int m = st->metrics[k];

		if (strategy_grow_pt(&st->program_pt[m], old, nr))
			return AMEBA_ENOMEM;
		for (uint32_t i = 0; i < st->nr_targets; i++)
			if (strategy_grow_pt(&st->targets[i].pt[m], old, nr))
				return AMEBA_ENOMEM;
	}
	for (uint32_t i = 0; i < st->nr_lines; i++)
		if (line_grow(st, &st->lines[i], old, nr))
			return AMEBA_ENOMEM;
	ids = realloc(st->thread_ids, nr * sizeof(*ids));
	if (!ids)
		return AMEBA_ENOMEM;
	for (uint32_t t = 0; t < nr; t++)
		ids[t] = t;
	st->thread_ids = ids;
	st->nr_threads_cap = nr;
	return 0;
}

/* ---- targets ---- */

static int target_add(struct threads *st, const struct ameba_object *o)
{
	struct target *t;

	if (st->nr_targets >= MAX_TARGETS || o->end <= o->start)
		return 0;
	for (uint32_t i = 0; i < st->nr_targets; i++)
		if (st->targets[i].obj.start == o->start && st->targets[i].obj.end == o->end)
			return 0;	/* the same object twice */
	t = &st->targets[st->nr_targets];
	memset(t, 0, sizeof(*t));
	t->obj = *o;
	t->obj.name = strdup(o->name ? o->name : "?");
	t->obj.site = o->site ? strdup(o->site) : NULL;
	if (!t->obj.name || (o->site && !t->obj.site)) {
		free((char *)t->obj.name);
		free((char *)t->obj.site);
		return AMEBA_ENOMEM;
	}
	t->bin = o->kind == AMEBA_OBJ_BIN && o->site;
	st->nr_targets++;
	for (uint32_t k = 0; k < st->nr_metrics && st->nr_threads_cap; k++)
		if (strategy_grow_pt(&t->pt[st->metrics[k]], 0, st->nr_threads_cap))
			return AMEBA_ENOMEM;
	return 0;
}

static int named(const struct ameba_object *o, const char *name)
{
	return (o->name && !strcmp(o->name, name)) || (o->site && !strcmp(o->site, name));
}

static const struct ameba_context *const *sort_seeds;
static int sort_metric;

static int cmp_seed(const void *a, const void *b)
{
	const struct ameba_context *x = sort_seeds[*(const uint32_t *)a];
	const struct ameba_context *y = sort_seeds[*(const uint32_t *)b];
	double vx = ameba_ctx_has(x, sort_metric) ? x->values[sort_metric] : -1;
	double vy = ameba_ctx_has(y, sort_metric) ? y->values[sort_metric] : -1;

	if (vx != vy)
		return vx < vy ? 1 : -1;
	return (*(const uint32_t *)a > *(const uint32_t *)b) -
	       (*(const uint32_t *)a < *(const uint32_t *)b);
}

/* Chooses the targets from the seeds (or the host's objects for object=). */
static int targets_resolve(struct threads *st)
{
	const struct ameba_host *h = st->host;
	const struct ameba_context *seeds = NULL;
	uint32_t nr_seeds = 0, n = 0, *order;
	const struct ameba_context **ptrs;
	int rc = 0;

	if (AMEBA_HOST_HAS(h, nr_seeds) && h->seeds) {
		seeds = h->seeds;
		nr_seeds = h->nr_seeds;
	}
	if (st->object_name) {
		for (uint32_t i = 0; i < nr_seeds; i++) {
			const struct ameba_context *sd = ameba_context_at(seeds, i);

			if (sd->kind == AMEBA_CTX_OBJECT && sd->object &&
			    named(sd->object, st->object_name))
				return target_add(st, sd->object);
		}
		for (uint32_t i = 0; i < h->nr_objects; i++)
			if (ameba_host_object(h, i)->live && named(ameba_host_object(h, i), st->object_name))
				return target_add(st, ameba_host_object(h, i));
		for (uint32_t i = 0; i < h->nr_bins; i++)
			if (named(ameba_host_bin(h, i), st->object_name))
				return target_add(st, ameba_host_bin(h, i));
		return 0;	/* not there (yet) */
	}
	order = malloc((nr_seeds + 1) * sizeof(*order));
	ptrs = malloc((nr_seeds + 1) * sizeof(*ptrs));
	if (!order || !ptrs) {
		free(order);
		free(ptrs);
		return AMEBA_ENOMEM;
	}
	for (uint32_t i = 0; i < nr_seeds; i++) {
		ptrs[i] = ameba_context_at(seeds, i);
		if (ptrs[i]->kind == AMEBA_CTX_OBJECT && ptrs[i]->object)
			order[n++] = i;
	}
	sort_seeds = ptrs;
	sort_metric = st->primary;
	qsort(order, n, sizeof(*order), cmp_seed);
	for (uint32_t i = 0; i < n && st->nr_targets < st->top && !rc; i++)
		rc = target_add(st, ameba_context_at(seeds, order[i])->object);
	free(order);
	free(ptrs);
	return rc;
}

/* The target's ranges: its extent, or a bin's live blocks. */
static int target_blocks(struct threads *st, struct target *t)
{
	const struct ameba_host *h = st->host;
	uint32_t n = 0;

	if (!t->bin) {
		if (!t->blocks) {
			t->blocks = malloc(2 * sizeof(*t->blocks));
			if (!t->blocks)
				return AMEBA_ENOMEM;
		}
		t->blocks[0] = t->obj.start;
		t->blocks[1] = t->obj.end;
		t->nr_blocks = 1;
		return 0;
	}
	for (uint32_t i = 0; i < h->nr_objects; i++)
		n += ameba_host_object(h, i)->live && ameba_host_object(h, i)->site && !strcmp(ameba_host_object(h, i)->site, t->obj.site);
	free(t->blocks);
	t->blocks = malloc((2 * (size_t)n + 2) * sizeof(*t->blocks));
	if (!t->blocks)
		return AMEBA_ENOMEM;
	t->nr_blocks = 0;
	for (uint32_t i = 0; i < h->nr_objects; i++) {
		const struct ameba_object *o = ameba_host_object(h, i);

		if (!o->live || !o->site || strcmp(o->site, t->obj.site) || o->end <= o->start)
			continue;
		t->blocks[2 * t->nr_blocks] = o->start;
		t->blocks[2 * t->nr_blocks + 1] = o->end;
		t->nr_blocks++;
	}
	return 0;
}

static int line_add(struct threads *st, uint32_t target, uintptr_t addr)
{
	struct line *v = realloc(st->lines, (st->nr_lines + 1) * sizeof(*v)), *l;

	if (!v)
		return AMEBA_ENOMEM;
	st->lines = v;
	l = &st->lines[st->nr_lines++];
	memset(l, 0, sizeof(*l));
	l->addr = addr;
	l->target = target;
	l->chosen_ns = st->window_ns;
	return st->nr_threads_cap ? line_grow(st, l, 0, st->nr_threads_cap) : 0;
}

static uintptr_t line_down(uintptr_t a)
{
	return a & ~(uintptr_t)(LINE_BYTES - 1);
}

/* Whether the line at a holds bytes of one of the target's blocks. */
static int line_in_blocks(const struct target *t, uintptr_t a)
{
	for (uint32_t b = 0; b < t->nr_blocks; b++)
		if (t->blocks[2 * b] < a + LINE_BYTES && a < t->blocks[2 * b + 1])
			return 1;
	return 0;
}

/* Appends [start, end) cut into at most parts segments of whole lines. */
static int segs_split(struct seg **v, uint32_t *nr, uint32_t *cap, uintptr_t start, uintptr_t end,
		      uint32_t parts)
{
	uint64_t nr_lines = (end - start) / LINE_BYTES;

	if (parts > nr_lines)
		parts = (uint32_t)nr_lines;
	for (uint32_t i = 0; i < parts; i++) {
		uintptr_t s = start + (uintptr_t)(nr_lines * i / parts) * LINE_BYTES;
		uintptr_t e = start + (uintptr_t)(nr_lines * (i + 1) / parts) * LINE_BYTES;

		if (*nr == *cap) {
			uint32_t c = *cap ? 2 * *cap : 64;
			struct seg *n = realloc(*v, c * sizeof(*n));

			if (!n)
				return AMEBA_ENOMEM;
			*v = n;
			*cap = c;
		}
		(*v)[(*nr)++] = (struct seg){ s, e, 0, 0 };
	}
	return 0;
}

/* Worst first: coherence misses, then misses, then address. */
static int cmp_seg(const void *a, const void *b)
{
	const struct seg *x = a, *y = b;

	if (x->coh != y->coh)
		return x->coh < y->coh ? 1 : -1;
	if (x->miss != y->miss)
		return x->miss < y->miss ? 1 : -1;
	return (x->start > y->start) - (x->start < y->start);
}

/*
 * A target's first plan: few lines go straight to the word phase; more
 * are surveyed as max_segs segments of the hull of its blocks.
 */
static int target_start(struct threads *st, uint32_t i)
{
	struct target *t = &st->targets[i];
	uintptr_t lo, hi;
	uint32_t cap = 0;
	int rc;

	if (!t->nr_blocks)
		return 0;	/* a bin without live blocks: wait */
	lo = line_down(t->blocks[0]);
	hi = line_down(t->blocks[2 * t->nr_blocks - 1] + LINE_BYTES - 1);
	if ((hi - lo) / LINE_BYTES <= st->max_lines) {
		for (uintptr_t a = lo; a < hi; a += LINE_BYTES)
			if (line_in_blocks(t, a) && (rc = line_add(st, i, a)))
				return rc;
		t->phase = PH_WORDS;
		return 0;
	}
	rc = segs_split(&t->segs, &t->nr_segs, &cap, lo, hi, st->max_segs);
	if (rc)
		return rc;
	t->phase = PH_SURVEY;
	return 0;
}

/*
 * After `survey` counted intervals: the worst max_lines segments (that
 * counted anything) are kept and cut into max_segs / max_lines parts each;
 * once they are single lines, they are the target's chosen lines.
 */
static int target_refine(struct threads *st, uint32_t i)
{
	struct target *t = &st->targets[i];
	struct seg *next = NULL;
	uint32_t nr = 0, cap = 0, keep = 0, single = 1;
	int rc = 0;

	qsort(t->segs, t->nr_segs, sizeof(*t->segs), cmp_seg);
	while (keep < t->nr_segs && keep < st->max_lines &&
	       (t->segs[keep].coh > 0 || t->segs[keep].miss > 0))
		keep++;
	if (!keep) {
		/* nothing counted (a quiet phase): survey the same segments again */
		for (uint32_t k = 0; k < t->nr_segs; k++)
			t->segs[k].coh = t->segs[k].miss = 0;
		t->seg_rounds = 0;
		t->waiting = 1;
		return 0;
	}
	for (uint32_t k = 0; k < keep; k++)
		single &= t->segs[k].end - t->segs[k].start == LINE_BYTES;
	if (single) {
		for (uint32_t k = 0; k < keep && !rc; k++)
			if (line_in_blocks(t, t->segs[k].start))
				rc = line_add(st, i, t->segs[k].start);
		free(t->segs);
		t->segs = NULL;
		t->nr_segs = 0;
		t->phase = PH_WORDS;
		return rc;
	}
	for (uint32_t k = 0; k < keep && !rc; k++)
		rc = segs_split(&next, &nr, &cap, t->segs[k].start, t->segs[k].end,
				st->max_segs / keep);
	free(t->segs);
	t->segs = next;
	t->nr_segs = nr;
	t->seg_rounds = 0;
	return rc;
}

/* ---- experiments ---- */

static struct ameba_counter *counter_new(struct threads *st, int metric, int per_thread,
					 uint64_t tag, uint32_t range_off, uint32_t nr_ranges)
{
	struct ameba_counter *c;

	if (st->nr_counters == st->cap_counters) {
		uint32_t cap = st->cap_counters ? 2 * st->cap_counters : 256;
		struct ameba_counter *v = realloc(st->counters, cap * sizeof(*v));

		if (!v)
			return NULL;
		st->counters = v;
		st->cap_counters = cap;
	}
	c = &st->counters[st->nr_counters++];
	memset(c, 0, sizeof(*c));
	c->metric = metric;
	c->per_thread = per_thread;
	c->tag = tag;
	/* ranges are an offset until the plan is complete (the array may move) */
	c->ranges = (const uintptr_t *)(uintptr_t)range_off;
	c->nr_ranges = nr_ranges;
	return c;
}

static int range_push(struct threads *st, uintptr_t start, uintptr_t end)
{
	if (st->nr_ranges == st->cap_ranges) {
		uint32_t cap = st->cap_ranges ? 2 * st->cap_ranges : 1024;
		uintptr_t *v = realloc(st->ranges, 2 * (size_t)cap * sizeof(*v));

		if (!v)
			return AMEBA_ENOMEM;
		st->ranges = v;
		st->cap_ranges = cap;
	}
	st->ranges[2 * st->nr_ranges] = start;
	st->ranges[2 * st->nr_ranges + 1] = end;
	st->nr_ranges++;
	return 0;
}

/* Counters and ranges the plan has left. */
static int fits(const struct threads *st, uint32_t counters, uint32_t ranges, uint32_t used_ranges)
{
	return st->nr_counters + counters <= st->max_counters &&
	       used_ranges + ranges <= st->max_ranges;
}

static int threads_plan(void *state, struct ameba_experiment *exp)
{
	struct threads *st = state;
	const struct ameba_host *h = st->host;
	uint32_t used_ranges = 0;
	int rc;

	if (!st->resolved) {
		rc = targets_resolve(st);
		if (rc)
			return rc;
		/* object=NAME may appear later; seeds are there from the start */
		st->resolved = st->nr_targets > 0 || !st->object_name;
		if (st->resolved && !st->nr_targets)
			return 1;	/* nothing to refine */
		if (st->resolved) {
			/* half the budget for the surveys, shared by the targets */
			uint32_t lim = st->max_counters < st->max_ranges ? st->max_counters :
					st->max_ranges;

			st->max_segs = (lim / 2 - 32) / (2 * st->nr_targets);
			if (st->max_segs > 1024)
				st->max_segs = 1024;
			if (st->max_segs < 2 * st->max_lines)
				st->max_segs = 2 * st->max_lines;
		}
	}
	if (st->rounds && st->nr_word_rounds >= st->rounds)
		return 1;
	rc = threads_grow(st, h->nr_threads);
	if (rc)
		return rc;
	st->nr_counters = 0;
	st->nr_ranges = 0;

	/* the program's and each target's totals, per thread */
	for (uint32_t i = 0; i < st->nr_targets; i++) {
		struct target *t = &st->targets[i];

		if ((rc = target_blocks(st, t)))
			return rc;
		if (t->phase == PH_NEW && (rc = target_start(st, i)))
			return rc;
		t->range_off = st->nr_ranges;
		for (uint32_t b = 0; b < t->nr_blocks; b++)
			if ((rc = range_push(st, t->blocks[2 * b], t->blocks[2 * b + 1])))
				return rc;
	}
	for (uint32_t k = 0; k < st->nr_metrics; k++) {
		if (!counter_new(st, st->metrics[k], 1, tag_make(TAG_TOTAL, 0, k), 0, 0))
			return AMEBA_ENOMEM;
		for (uint32_t i = 0; i < st->nr_targets; i++) {
			struct target *t = &st->targets[i];

			if (!t->nr_blocks)
				continue;	/* a bin without live blocks */
			if (!fits(st, 1, t->nr_blocks, used_ranges))
				break;
			if (!counter_new(st, st->metrics[k], 1, tag_make(TAG_OBJ, i, k), t->range_off,
					 t->nr_blocks))
				return AMEBA_ENOMEM;
			used_ranges += t->nr_blocks;
		}
	}
	/* survey: two counters per segment; a target all or nothing */
	for (uint32_t i = 0; i < st->nr_targets; i++) {
		struct target *t = &st->targets[i];
		int coh = host_has(h, AMEBA_M_COH_MISS);

		t->surveyed = 0;
		if (t->phase != PH_SURVEY)
			continue;
		if (!fits(st, (1 + coh) * t->nr_segs, (1 + coh) * t->nr_segs, used_ranges)) {
			t->waiting = 1;
			continue;
		}
		for (uint32_t k = 0; k < t->nr_segs; k++) {
			if ((rc = range_push(st, t->segs[k].start, t->segs[k].end)))
				return rc;
			if (!counter_new(st, st->survey_metric, 0, tag_make(TAG_SURVEY_MISS, k, i),
					 st->nr_ranges - 1, 1) ||
			    (coh && !counter_new(st, AMEBA_M_COH_MISS, 0,
						 tag_make(TAG_SURVEY_COH, k, i), st->nr_ranges - 1, 1)))
				return AMEBA_ENOMEM;
		}
		used_ranges += (1 + coh) * t->nr_segs;
		t->surveyed = 1;
	}
	{
		/* words: each chosen line, in turns when they do not all fit */
		uint32_t per_line = st->nr_metrics + 2 * NR_WORDS;

		for (uint32_t i = 0; i < st->nr_lines; i++)
			st->lines[i].active = 0;
		for (uint32_t n = 0; n < st->nr_lines; n++) {
			uint32_t i = (st->line_cursor + n) % st->nr_lines;
			struct line *l = &st->lines[i];
			uint32_t r0;

			if (!fits(st, per_line, per_line, used_ranges))
				break;
			r0 = st->nr_ranges;
			if ((rc = range_push(st, l->addr, l->addr + LINE_BYTES)))
				return rc;
			for (uint32_t w = 0; w < NR_WORDS; w++)
				if ((rc = range_push(st, l->addr + w * WORD_BYTES,
						     l->addr + (w + 1) * WORD_BYTES)))
					return rc;
			for (uint32_t k = 0; k < st->nr_metrics; k++)
				if (!counter_new(st, st->metrics[k], 1, tag_make(TAG_LINE, i, k), r0, 1))
					return AMEBA_ENOMEM;
			for (uint32_t w = 0; w < NR_WORDS; w++) {
				if (!counter_new(st, AMEBA_M_WRITES, 1, tag_make(TAG_WORD_WR, i, w),
						 r0 + 1 + w, 1) ||
				    !counter_new(st, AMEBA_M_READS, 1, tag_make(TAG_WORD_RD, i, w),
						 r0 + 1 + w, 1))
					return AMEBA_ENOMEM;
			}
			used_ranges += per_line;
			l->active = 1;
		}
	}
	for (uint32_t i = 0; i < st->nr_counters; i++) {
		struct ameba_counter *c = &st->counters[i];

		c->ranges = c->nr_ranges ? st->ranges + 2 * (uintptr_t)c->ranges : NULL;
	}
	ameba_experiment_reset(exp);
	exp->nr_counters = st->nr_counters;
	exp->counters = st->counters;
	return 0;
}

static void add_pt(double *dst, const struct ameba_results *res, uint32_t i)
{
	if (!dst || !res->per_thread || !res->per_thread[i])
		return;
	for (uint32_t k = 0; k < res->nr_threads; k++)
		dst[ameba_results_thread(res, k)] += (double)res->per_thread[i][k];
}

static int threads_observe(void *state, const struct ameba_experiment *exp,
			   const struct ameba_results *res)
{
	struct threads *st = state;
	uint8_t measured[MAX_TARGETS] = { 0 };
	int rc = threads_grow(st, strategy_results_width(res));

	if (rc)
		return rc;
	for (uint32_t i = 0; i < exp->nr_counters && i < res->nr_counters; i++) {
		uint64_t tag = exp->counters[i].tag;
		int kind = (int)(tag >> 56);
		uint32_t idx = (uint32_t)(tag >> 8), slot = (uint32_t)(tag & 0xff);
		double v = (double)res->values[i];
		int m = exp->counters[i].metric;

		switch (kind) {
		case TAG_TOTAL:
			st->program[m] += v;
			add_pt(st->program_pt[m], res, i);
			break;
		case TAG_OBJ:
			st->targets[idx].values[m] += v;
			add_pt(st->targets[idx].pt[m], res, i);
			measured[idx] = 1;
			break;
		case TAG_LINE:
			st->lines[idx].values[m] += v;
			add_pt(st->lines[idx].pt[m], res, i);
			break;
		case TAG_WORD_WR:
			add_pt(st->lines[idx].wr[slot], res, i);
			break;
		case TAG_WORD_RD:
			add_pt(st->lines[idx].rd[slot], res, i);
			break;
		case TAG_SURVEY_COH:	/* idx: the segment, slot: the target */
			st->targets[slot].segs[idx].coh += v;
			break;
		case TAG_SURVEY_MISS:
			st->targets[slot].segs[idx].miss += v;
			break;
		}
	}
	for (uint32_t i = 0; i < st->nr_targets; i++)
		if (measured[i])
			st->targets[i].window_ns += res->elapsed_ns;
	{
		uint32_t nr_active = 0, surveying = 0;

		for (uint32_t i = 0; i < st->nr_lines; i++)
			if (st->lines[i].active) {
				st->lines[i].window_ns += res->elapsed_ns;
				nr_active++;
			}
		if (nr_active < st->nr_lines)
			st->line_cursor = (st->line_cursor + nr_active) % st->nr_lines;
		for (uint32_t i = 0; i < st->nr_targets; i++)
			surveying |= st->targets[i].phase != PH_WORDS && !st->targets[i].waiting;
		if (st->resolved && !surveying)
			st->nr_word_rounds++;
	}
	st->window_ns += res->elapsed_ns;
	for (uint32_t i = 0; i < st->nr_targets; i++) {
		struct target *t = &st->targets[i];

		if (t->phase == PH_SURVEY && t->surveyed && ++t->seg_rounds >= st->survey &&
		    (rc = target_refine(st, i)))
			return rc;
	}
	return 0;
}


/* ---- contexts ---- */

struct buf {
	char *p;
	size_t len, cap;
};

static int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return AMEBA_EINVAL;
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return 0;
		}
		{
			size_t cap = b->cap ? 2 * b->cap : 256;
			char *p;

			while (cap <= b->len + (size_t)n)
				cap *= 2;
			p = realloc(b->p, cap);
			if (!p)
				return AMEBA_ENOMEM;
			if (!b->p)
				p[0] = '\0';
			b->p = p;
			b->cap = cap;
		}
	}
}

static double val(const struct line *l, int m)
{
	return l->values[m];
}

/* The evidence lines of one cache line (see Notes). */
static int line_evidence(const struct threads *st, const struct line *l, struct buf *b)
{
	const struct target *t = &st->targets[l->target];
	long long off = (long long)l->addr - (long long)t->obj.start;
	int rc;

	rc = buf_printf(b, "line.%lld=%.0f,%.0f,%.0f\n", off, val(l, AMEBA_M_COH_MISS),
			val(l, AMEBA_M_COH_MISS_FALSE), val(l, AMEBA_M_WRITES));
	for (uint32_t th = 0; th < st->nr_threads_cap && !rc; th++)
		for (int w = 0; w < NR_WORDS && !rc; w++) {
			double wr = l->wr[w] ? l->wr[w][th] : 0, rd = l->rd[w] ? l->rd[w][th] : 0;

			if (wr > 0 || rd > 0)
				rc = buf_printf(b, "w.%u.%lld=%.0f,%.0f\n", th,
						off + (long long)w * WORD_BYTES, wr, rd);
		}
	return rc;
}

static int line_counted(const struct threads *st, const struct line *l)
{
	for (uint32_t k = 0; k < st->nr_metrics; k++)
		if (l->values[st->metrics[k]] > 0)
			return 1;
	return 0;
}

static void ctx_fill(const struct threads *st, struct ameba_context *c, const double *values,
		     double *const *pt)
{
	strategy_ctx_fill(c, st->metrics, st->nr_metrics, values, st->program, pt,
			  st->nr_threads_cap, st->thread_ids, st->window_ns, st->host->exact);
}

static int threads_contexts(void *state, const struct ameba_context **out, uint32_t *nr)
{
	struct threads *st = state;
	uint32_t n = 0;
	int rc = 0;

	free(st->ctxs);
	st->ctxs = strategy_ctxs_alloc(1 + st->nr_targets + st->nr_lines);
	if (!st->ctxs)
		return AMEBA_ENOMEM;
	ctx_fill(st, &st->ctxs[n], st->program, st->program_pt);
	st->ctxs[n++].kind = AMEBA_CTX_PROGRAM;
	for (uint32_t i = 0; i < st->nr_targets && !rc; i++) {
		struct target *t = &st->targets[i];
		struct ameba_context *c;
		struct buf b = { 0 };

		if (!t->window_ns)
			continue;
		c = &st->ctxs[n++];
		ctx_fill(st, c, t->values, t->pt);
		c->kind = AMEBA_CTX_OBJECT;
		c->object = &t->obj;
		c->window_ns = t->window_ns;
		if (t->window_ns < st->window_ns)	/* left out when over the budget */
			c->confidence *= (double)t->window_ns / (double)st->window_ns;
		for (uint32_t k = 0; k < st->nr_lines && !rc; k++) {
			struct line *l = &st->lines[k];
			struct buf lb = { 0 };

			if (l->target != i || !line_counted(st, l))
				continue;
			rc = line_evidence(st, l, &b);
			if (!rc)
				rc = line_evidence(st, l, &lb);
			free(l->extra);
			l->extra = lb.p;
		}
		free(t->extra);
		t->extra = b.p;
		c->extra = t->extra;
	}
	for (uint32_t k = 0; k < st->nr_lines && !rc; k++) {
		struct line *l = &st->lines[k];
		struct ameba_context *c;

		if (!line_counted(st, l))
			continue;
		c = &st->ctxs[n++];
		ctx_fill(st, c, l->values, l->pt);
		c->kind = AMEBA_CTX_LINE;
		c->object = &st->targets[l->target].obj;
		c->line = l->addr;
		c->window_ns = l->window_ns;
		c->extra = l->extra;
		if (l->window_ns < st->window_ns - l->chosen_ns) {
			struct buf b = { 0 };

			c->confidence *= (double)l->window_ns / (double)(st->window_ns - l->chosen_ns);
			/* say why (docs/writing-strategies.md) */
			rc = buf_printf(&b, "%smeasured=turns\n", l->extra ? l->extra : "");
			free(l->extra);
			l->extra = b.p;
			c->extra = l->extra;
		}
	}
	if (rc)
		return rc;
	*out = st->ctxs;
	*nr = n;
	return 0;
}

static void threads_progress(void *state, char *buf, size_t len)
{
	struct threads *st = state;

	uint32_t surveying = 0;

	for (uint32_t i = 0; i < st->nr_targets; i++)
		surveying += st->targets[i].phase != PH_WORDS;
	if (!st->nr_targets)
		snprintf(buf, len, "no object to refine yet");
	else if (surveying)
		snprintf(buf, len, "surveying the lines of %u of %u objects", surveying,
			 st->nr_targets);
	else
		snprintf(buf, len, "words of %u lines of %u objects, interval %u", st->nr_lines,
			 st->nr_targets, st->nr_word_rounds);
}

static void threads_destroy(void *state)
{
	struct threads *st = state;

	for (uint32_t i = 0; i < st->nr_targets; i++) {
		struct target *t = &st->targets[i];

		free((char *)t->obj.name);
		free((char *)t->obj.site);
		free(t->blocks);
		free(t->segs);
		free(t->extra);
		for (int m = 0; m < AMEBA_M_NR; m++)
			free(t->pt[m]);
	}
	for (uint32_t i = 0; i < st->nr_lines; i++) {
		struct line *l = &st->lines[i];

		for (int m = 0; m < AMEBA_M_NR; m++)
			free(l->pt[m]);
		for (int w = 0; w < NR_WORDS; w++) {
			free(l->wr[w]);
			free(l->rd[w]);
		}
		free(l->extra);
	}
	for (int m = 0; m < AMEBA_M_NR; m++)
		free(st->program_pt[m]);
	free(st->targets);
	free(st->lines);
	free(st->thread_ids);
	free(st->counters);
	free(st->ranges);
	free(st->ctxs);
	free(st->object_name);
	free(st);
}

static long long param_int(const struct ameba_params *p, const char *name, const char *def)
{
	const char *v = ameba_param_get(p, name);

	return atoll(v ? v : def);
}

static int threads_create(const struct ameba_host *host, const struct ameba_params *params,
			  void **state, char *msg)
{
	struct threads *st;
	const char *metric = ameba_param_get(params, "metric");
	const char *object = ameba_param_get(params, "object");
	long long top = param_int(params, "top", "3");
	long long max_lines = param_int(params, "max_lines", "16");
	long long survey = param_int(params, "survey", "1");
	long long rounds = param_int(params, "rounds", "0");
	int has = AMEBA_HOST_HAS(host, max_ranges);
	long long max_counters = strategy_limit(ameba_param_get(params, "max_counters"),
						has ? host->max_counters : 0, AMEBA_MAX_COUNTERS);
	long long max_ranges = strategy_limit(ameba_param_get(params, "max_ranges"),
					      has ? host->max_ranges : 0, AMEBA_MAX_RANGES);

	if (host->abi_version != AMEBA_PLUGIN_ABI_VERSION) {
		snprintf(msg, 256, "host speaks plugin ABI %u, threads.so was built for %d",
			 host->abi_version, AMEBA_PLUGIN_ABI_VERSION);
		return AMEBA_EABI;
	}
	if (top < 1 || top > MAX_TARGETS || max_lines < 1 || max_lines > 256 || survey < 1 ||
	    rounds < 0) {
		snprintf(msg, 256, "want top in 1..%d, max_lines in 1..256, survey >= 1, rounds >= 0 "
			 "(got %lld, %lld, %lld, %lld)", MAX_TARGETS, top, max_lines, survey, rounds);
		return AMEBA_EINVAL;
	}
	if (max_counters < 64 || max_ranges < 64) {
		snprintf(msg, 256, "max_counters and max_ranges must be >= 64 (got %lld, %lld)",
			 max_counters, max_ranges);
		return AMEBA_EINVAL;
	}
	if (!host_has(host, AMEBA_M_READS) || !host_has(host, AMEBA_M_WRITES)) {
		snprintf(msg, 256, "the backend does not count reads and writes; word-level "
			 "evidence needs both (use the sim or count backend)");
		return AMEBA_ENOTSUP;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return AMEBA_ENOMEM;
	st->targets = calloc(MAX_TARGETS, sizeof(*st->targets));
	st->object_name = object && *object ? strdup(object) : NULL;
	if (!st->targets || (object && *object && !st->object_name)) {
		free(st->targets);
		free(st);
		return AMEBA_ENOMEM;
	}
	st->host = host;
	st->top = (uint32_t)top;
	st->max_lines = (uint32_t)max_lines;
	st->survey = (uint32_t)survey;
	st->rounds = (uint32_t)rounds;
	st->max_counters = (uint32_t)max_counters;
	st->max_ranges = (uint32_t)max_ranges;
	st->primary = ameba_metric_by_name(metric ? metric : "mem_ref");
	if (st->primary < 0 || !host_has(host, st->primary)) {
		snprintf(msg, 256, "metric=%s: the backend does not measure it", metric ? metric : "?");
		threads_destroy(st);
		return AMEBA_ENOTSUP;
	}
	for (uint32_t i = 0; i < host->nr_metrics && st->nr_metrics < AMEBA_M_NR; i++)
		if (host->metrics[i] != AMEBA_M_SAMPLES)
			st->metrics[st->nr_metrics++] = host->metrics[i];
	/* lines are surveyed by misses when the backend has them */
	st->survey_metric = host_has(host, AMEBA_M_L1D_MISS) ? AMEBA_M_L1D_MISS : st->primary;
	if ((st->nr_metrics + 1) * (uint32_t)(1 + 1) + st->nr_metrics + 2 * NR_WORDS >
	    st->max_counters) {
		snprintf(msg, 256, "max_counters=%u cannot hold %u metrics x (program + object + "
			 "one line) plus %d word counters", st->max_counters, st->nr_metrics,
			 2 * NR_WORDS);
		threads_destroy(st);
		return AMEBA_EINVAL;
	}
	*state = st;
	return 0;
}

static const struct ameba_strategy_desc threads_desc = {
	.abi_version = AMEBA_PLUGIN_ABI_VERSION,
	.struct_size = sizeof(struct ameba_strategy_desc),
	.name = "threads",
	.summary = "refine found objects to per-thread, per-line and per-word figures (chain it: "
		   "objects,threads)",
	.params = threads_params,
	.nr_params = sizeof(threads_params) / sizeof(threads_params[0]),
	.create = threads_create,
	.plan = threads_plan,
	.observe = threads_observe,
	.contexts = threads_contexts,
	.progress = threads_progress,
	.destroy = threads_destroy,
};

AMEBA_API const struct ameba_strategy_desc *ameba_strategy_entry(void)
{
	return &threads_desc;
}
