/*
 * views.c - what the HTML report draws beyond the ranked findings, gathered
 * while the search runs: the report's `views` member (docs/report-schema.md,
 * "Views").
 *
 * Notes:
 *  - Series. After every experiment each counter that measures one object
 *    or bin whole (agent_counter_object) adds its value to that object's
 *    point of the interval, per metric of SERIES_METRICS the backend has;
 *    a counter over the whole address space (no ranges, bins or threads)
 *    is the interval's total. Exact wherever the strategy measures whole
 *    objects (objects: every unit in every interval; nway: the regions
 *    that became one object). An interval keeps its MAX_POINTS heaviest
 *    objects by the run's metric; past MAX_INTERVALS, neighbouring
 *    intervals are merged two by two, so a long run keeps its whole span
 *    at a coarser step.
 *  - Trace. While the nway strategy runs, its counters of the run's metric
 *    are kept per interval once the first span is seen (an address range
 *    that is not one object), with the one-object counters beside them, so
 *    that the view shows how the search split the address space. Other
 *    strategies measure objects (their merged blocks and cold groups are no
 *    search) and have no trace.
 *  - Samples. With `views_samples` (ameba run --html or --views) the agent
 *    adds a sample stream to one experiment in SAMPLE_EVERY whose strategy
 *    asked for none: the run's metric (heat strips: events per address
 *    bucket inside each object; a heap block of a site with several blocks
 *    counts at its offset inside its block) and, when the backend has it,
 *    coherence misses (line maps: which thread missed on which word of a
 *    line). The strategy does not see these samples. A sample stream
 *    takes the simulator off its fast path for that interval, hence the
 *    duty cycle and the opt-in. The period is set so that an interval
 *    yields about SAMPLES_WANTED samples (a thread's ring holds 2,048), from
 *    the metric's rate in the interval just measured (its program counter)
 *    or else in the last sampled one (samples and lost samples times their
 *    period); lost samples are counted in the report.
 *  - Thread matrix: the per-thread values of the final contexts of the
 *    report's objects (agent_views_thread_row, from the summary).
 *  - Everything is bounded: objects interned up to MAX_NAMES, heat and
 *    line tables up to MAX_HEAT objects of at most MAX_BUCKETS buckets and
 *    MAX_LINE_CELLS (line, word, thread) cells each. Memory is not
 *    guaranteed: a failed allocation loses that datum, never the run.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "provider.h"
#include "search.h"
#include "views.h"

#define MAX_INTERVALS 512
#define MAX_POINTS 32
#define MAX_NAMES 65536
#define MAX_TRACE 400
#define MAX_REGIONS 64
#define MAX_HEAT 4096
#define MAX_BUCKETS 256
#define MAX_LINE_OBJS 64
#define MAX_LINE_CELLS 8192
#define SAMPLE_EVERY 4
#define SAMPLES_WANTED 1500.0
#define MIN_PERIOD 31.0
#define WORD_BYTES 8
#define LINE_BYTES 64

static const int SERIES_METRICS[] = {
	AMEBA_M_MEM_REF, AMEBA_M_L1D_MISS, AMEBA_M_L2_MISS, AMEBA_M_LLC_MISS,
	AMEBA_M_COH_MISS, AMEBA_M_TLB_MISS, AMEBA_M_EST_STALL_CYCLES,
};
#define NR_SERIES_ALL (sizeof(SERIES_METRICS) / sizeof(SERIES_METRICS[0]) + 1)

struct v_point {
	uint32_t obj;
	uint32_t has;			/* bit k: val[k] measured */
	double val[NR_SERIES_ALL];
};

struct v_interval {
	double start_s, secs;
	uint32_t has_total;
	double total[NR_SERIES_ALL];
	uint32_t first, nr;		/* points */
};

struct v_region {
	uintptr_t lo, hi;
	double val;
	uint32_t obj;			/* UINT32_MAX: a span */
};

struct v_trace {
	uint32_t iter;
	double start_s;
	int has_total;
	double total;
	uint32_t first, nr;		/* regions */
};

struct v_heat {
	uint32_t obj;
	int per_block;			/* offsets inside a block of the site */
	uintptr_t start;		/* the object's start (per_block: the first block's) */
	uint64_t size;
	uint32_t bucket, nr;		/* bytes a bucket, buckets */
	double *counts;
	uint64_t samples;
};

struct v_cell {
	uint32_t line;			/* line index inside the object (or block) */
	uint16_t word;
	uint32_t thread;
	double n;
};

struct v_lines {
	uint32_t obj;
	int per_block;
	uintptr_t start;
	uint64_t size;
	struct v_cell *cells;
	uint32_t nr, cap;
	uint64_t samples;
};

struct v_row {
	uint32_t obj;
	uint32_t nr;
	uint32_t *ids;
	double *val;			/* [nr * nr_series] */
	uint32_t has;
};

struct agent_views {
	int metrics[NR_SERIES_ALL];
	uint32_t nr_series;
	int primary;			/* index of the run's metric in metrics, or -1 */

	char **names;
	int *kinds;
	uint32_t *at_iv, *at_pt;	/* series_add: interval (+1) and point of a name */
	uint32_t nr_names, cap_names;
	uint32_t *hash;			/* open addressing: name index + 1 */
	uint32_t hash_cap;

	struct v_interval *iv;
	uint32_t nr_iv;
	struct v_point *pt;
	uint32_t nr_pt, cap_pt;

	struct v_trace *tr;
	uint32_t nr_tr;
	struct v_region *rg;
	uint32_t nr_rg, cap_rg;
	uint32_t tr_dropped;

	/* samples */
	int sample_metric;		/* this interval's stream, -1: none of ours */
	uint64_t sample_period;
	double rate[AMEBA_M_NR];	/* events per second, 0: unknown */
	uint64_t taken[AMEBA_M_NR], lost[AMEBA_M_NR];
	struct v_heat *heat;
	uint32_t nr_heat;
	struct v_lines *lines;
	uint32_t nr_lines;

	struct v_row *rows;
	uint32_t nr_rows;
};

/* ---- names ---- */

static const char *metric_name(int m)
{
	const struct ameba_metric_info *mi = ameba_metric_info(m);

	return mi ? mi->name : "?";
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static int hash_grow(struct agent_views *v)
{
	uint32_t cap = v->hash_cap ? v->hash_cap * 2 : 1024;
	uint32_t *h = calloc(cap, sizeof(*h));

	if (!h)
		return -1;
	for (uint32_t i = 0; i < v->nr_names; i++) {
		uint32_t k = name_hash(v->names[i]) & (cap - 1);

		while (h[k])
			k = (k + 1) & (cap - 1);
		h[k] = i + 1;
	}
	free(v->hash);
	v->hash = h;
	v->hash_cap = cap;
	return 0;
}

/* The index of name (added with kind when new), or UINT32_MAX. */
static uint32_t name_id(struct agent_views *v, const char *name, int kind)
{
	uint32_t k;

	if (!name)
		return UINT32_MAX;
	if (v->hash_cap) {
		for (k = name_hash(name) & (v->hash_cap - 1); v->hash[k]; k = (k + 1) & (v->hash_cap - 1))
			if (!strcmp(v->names[v->hash[k] - 1], name))
				return v->hash[k] - 1;
	}
	if (v->nr_names >= MAX_NAMES ||
	    ((v->nr_names + 1) * 2 > v->hash_cap && hash_grow(v)))
		return UINT32_MAX;
	if (v->nr_names == v->cap_names) {
		uint32_t cap = v->cap_names ? v->cap_names * 2 : 256;
		char **n = realloc(v->names, cap * sizeof(*n));
		uint32_t *n32;
		int *kd;

		if (!n)
			return UINT32_MAX;
		v->names = n;
		kd = realloc(v->kinds, cap * sizeof(*kd));
		if (!kd)
			return UINT32_MAX;
		v->kinds = kd;
		if (!(n32 = realloc(v->at_iv, cap * sizeof(*n32))))
			return UINT32_MAX;
		v->at_iv = n32;
		if (!(n32 = realloc(v->at_pt, cap * sizeof(*n32))))
			return UINT32_MAX;
		v->at_pt = n32;
		v->cap_names = cap;
	}
	if (!(v->names[v->nr_names] = strdup(name)))
		return UINT32_MAX;
	v->kinds[v->nr_names] = kind;
	v->at_iv[v->nr_names] = 0;
	for (k = name_hash(name) & (v->hash_cap - 1); v->hash[k]; k = (k + 1) & (v->hash_cap - 1))
		;
	v->hash[k] = v->nr_names + 1;
	return v->nr_names++;
}

/* The kind of the object counter i of exp measures (a bin's otherwise). */
static int counter_kind(const struct agent_search *s, const struct ameba_experiment *exp,
			uint32_t i)
{
	const struct ameba_counter *c = &exp->counters[i];
	const struct ameba_object *o = NULL;

	if (c->nr_ranges == 1 && !(exp->counter_bins && exp->counter_bins[i].nr))
		o = agent_object_at(s->world.objects, s->world.nr_objects, c->ranges[0]);
	return o ? o->kind : AMEBA_OBJ_BIN;
}

static int series_index(const struct agent_views *v, int metric)
{
	for (uint32_t k = 0; k < v->nr_series; k++)
		if (v->metrics[k] == metric)
			return (int)k;
	return -1;
}

static struct agent_views *views_get(struct agent_search *s)
{
	struct agent_views *v = s->views;

	if (v)
		return v;
	if (!(v = calloc(1, sizeof(*v))))
		return NULL;
	v->primary = -1;
	for (size_t i = 0; i < NR_SERIES_ALL - 1; i++)
		if (agent_world_has(&s->world, SERIES_METRICS[i]))
			v->metrics[v->nr_series++] = SERIES_METRICS[i];
	if (series_index(v, s->primary_metric) < 0 && agent_world_has(&s->world, s->primary_metric))
		v->metrics[v->nr_series++] = s->primary_metric;
	v->primary = series_index(v, s->primary_metric);
	v->sample_metric = -1;
	s->views = v;
	return v;
}

/* ---- series ---- */

static int pt_reserve(struct agent_views *v, uint32_t more)
{
	if (v->nr_pt + more <= v->cap_pt)
		return 0;
	uint32_t cap = v->cap_pt ? v->cap_pt : 1024;

	while (cap < v->nr_pt + more)
		cap *= 2;
	struct v_point *p = realloc(v->pt, cap * sizeof(*p));

	if (!p)
		return -1;
	v->pt = p;
	v->cap_pt = cap;
	return 0;
}

static int pt_cmp_primary;

static int pt_cmp(const void *a, const void *b)
{
	const struct v_point *x = a, *y = b;
	double vx = x->val[pt_cmp_primary], vy = y->val[pt_cmp_primary];

	return vx < vy ? 1 : vx > vy ? -1 : (x->obj > y->obj) - (x->obj < y->obj);
}

/* Merges intervals 2j and 2j+1 into j, points summed per object. */
static void series_coarsen(struct agent_views *v)
{
	uint32_t out = 0, nr_pt = 0;
	struct v_point *np = malloc((size_t)v->nr_pt * sizeof(*np));

	if (!np)
		return;
	for (uint32_t j = 0; j < v->nr_iv; j += 2) {
		struct v_interval m = v->iv[j];
		uint32_t first = nr_pt;

		m.first = first;
		m.nr = 0;
		for (uint32_t h = j; h < j + 2 && h < v->nr_iv; h++) {
			const struct v_interval *x = &v->iv[h];

			if (h > j) {
				m.secs += x->secs;
				for (uint32_t k = 0; k < v->nr_series; k++) {
					if (!(x->has_total & (1u << k)))
						continue;
					m.total[k] = (m.has_total & (1u << k) ? m.total[k] : 0) + x->total[k];
					m.has_total |= 1u << k;
				}
			}
			for (uint32_t p = x->first; p < x->first + x->nr; p++) {
				uint32_t q = first;

				while (q < nr_pt && np[q].obj != v->pt[p].obj)
					q++;
				if (q == nr_pt) {
					np[nr_pt] = v->pt[p];
					np[nr_pt].has = 0;
					memset(np[nr_pt].val, 0, sizeof(np[nr_pt].val));
					nr_pt++;
				}
				for (uint32_t k = 0; k < v->nr_series; k++)
					if (v->pt[p].has & (1u << k)) {
						np[q].val[k] += v->pt[p].val[k];
						np[q].has |= 1u << k;
					}
			}
		}
		m.nr = nr_pt - first;
		v->iv[out++] = m;
	}
	free(v->pt);
	v->pt = np;
	v->nr_pt = nr_pt;
	v->cap_pt = v->nr_pt ? v->nr_pt : 0;
	if (!v->cap_pt) {
		free(v->pt);
		v->pt = NULL;
	}
	v->nr_iv = out;
}

static void series_add(struct agent_search *s, struct agent_views *v,
		       const struct ameba_experiment *exp, const struct agent_exp_result *res,
		       double start_s, double tot_value)
{
	struct v_interval *iv;
	uint32_t first;

	if (!v->iv && !(v->iv = calloc(MAX_INTERVALS, sizeof(*v->iv))))
		return;
	if (v->nr_iv == MAX_INTERVALS)
		series_coarsen(v);
	if (v->nr_iv == MAX_INTERVALS)
		return;
	iv = &v->iv[v->nr_iv];
	memset(iv, 0, sizeof(*iv));
	iv->start_s = start_s;
	iv->secs = (double)res->r.elapsed_ns / 1e9;
	first = iv->first = v->nr_pt;
	if (v->primary >= 0 && !isnan(tot_value)) {
		iv->total[v->primary] = tot_value;
		iv->has_total |= 1u << v->primary;
	}
	for (uint32_t i = 0; i < exp->nr_counters && i < res->r.nr_counters; i++) {
		const struct ameba_counter *c = &exp->counters[i];
		int k = series_index(v, c->metric);
		const char *name;
		uint32_t id, p;

		if (k < 0)
			continue;
		if (!c->nr_ranges && !c->nr_threads && !(exp->counter_bins && exp->counter_bins[i].nr)) {
			iv->total[k] = (double)res->r.values[i];
			iv->has_total |= 1u << k;
			continue;
		}
		if (!(name = agent_counter_object(exp, i, &s->world)))
			continue;
		if ((id = name_id(v, name, counter_kind(s, exp, i))) == UINT32_MAX)
			continue;
		/* the object's point of this interval, if it has one: where
		 * the last counter of this object put it (a scan would cost
		 * counters^2, 16 M steps an interval at 4,096 counters) */
		p = id < v->cap_names && v->at_iv[id] == v->nr_iv + 1 ? v->at_pt[id] : v->nr_pt;
		if (p < first || p >= v->nr_pt || v->pt[p].obj != id)
			p = v->nr_pt;	/* a stamp from before a coarsening */
		if (p == v->nr_pt) {
			if (pt_reserve(v, 1))
				continue;
			memset(&v->pt[p], 0, sizeof(v->pt[p]));
			v->pt[p].obj = id;
			v->nr_pt++;
			v->at_iv[id] = v->nr_iv + 1;
			v->at_pt[id] = p;
		}
		v->pt[p].val[k] += (double)res->r.values[i];
		v->pt[p].has |= 1u << k;
	}
	iv->nr = v->nr_pt - first;
	if (iv->nr > MAX_POINTS && v->primary >= 0) {
		pt_cmp_primary = v->primary;
		qsort(&v->pt[first], iv->nr, sizeof(v->pt[0]), pt_cmp);
		iv->nr = MAX_POINTS;
		v->nr_pt = first + MAX_POINTS;
	}
	v->nr_iv++;
}

/* ---- trace ---- */

static int region_by_count(const void *a, const void *b)
{
	const struct v_region *x = a, *y = b;

	return (x->val < y->val) - (x->val > y->val);
}

static int region_by_addr(const void *a, const void *b)
{
	const struct v_region *x = a, *y = b;

	return (x->lo > y->lo) - (x->lo < y->lo);
}

static void trace_add(struct agent_search *s, struct agent_views *v,
		      const struct ameba_experiment *exp, const struct agent_exp_result *res,
		      double start_s, double tot_value)
{
	uint32_t first = v->nr_rg, spans = 0;
	const struct agent_strategy *st = s->stage && s->strat_b ? s->strat_b : s->strat;
	struct v_trace *t;

	/* an address search's regions; the objects strategy's merged blocks
	 * and cold groups are no search */
	if (!st || !st->name || strcmp(st->name, "nway"))
		return;

	for (uint32_t i = 0; i < exp->nr_counters && i < res->r.nr_counters; i++) {
		const struct ameba_counter *c = &exp->counters[i];
		const struct ameba_counter_bins *b = exp->counter_bins ? &exp->counter_bins[i] : NULL;
		const char *name;
		struct v_region r;

		if (c->metric != s->primary_metric || c->nr_threads || (!c->nr_ranges && !(b && b->nr)))
			continue;
		name = agent_counter_object(exp, i, &s->world);
		r.obj = name ? name_id(v, name, counter_kind(s, exp, i)) : UINT32_MAX;
		r.val = (double)res->r.values[i];
		if (c->nr_ranges) {
			r.lo = c->ranges[0];
			r.hi = c->ranges[2 * c->nr_ranges - 1];
		} else {
			r.lo = r.hi = 0;
			for (uint32_t j = 0; j < s->world.nr_bins; j++)
				if (b->nr == 1 && s->world.bins[j].name &&
				    !strcmp(s->world.bins[j].name, b->names[0])) {
					r.lo = s->world.bins[j].start;
					r.hi = s->world.bins[j].end;
				}
			if (r.lo >= r.hi)
				continue;
		}
		if (!name && c->nr_ranges == 1)
			spans++;	/* a span of the address space (nway's regions) */
		if (v->nr_rg == v->cap_rg) {
			uint32_t cap = v->cap_rg ? v->cap_rg * 2 : 1024;
			struct v_region *n = realloc(v->rg, cap * sizeof(*n));

			if (!n)
				break;
			v->rg = n;
			v->cap_rg = cap;
		}
		v->rg[v->nr_rg++] = r;
	}
	if ((!spans && !v->nr_tr) || v->nr_rg == first) {
		v->nr_rg = first;	/* no search here (yet) */
		return;
	}
	if (v->nr_tr == MAX_TRACE) {
		v->nr_rg = first;
		v->tr_dropped++;
		return;
	}
	if (!v->tr && !(v->tr = calloc(MAX_TRACE, sizeof(*v->tr)))) {
		v->nr_rg = first;
		return;
	}
	/* the heaviest MAX_REGIONS, then in address order */
	qsort(&v->rg[first], v->nr_rg - first, sizeof(v->rg[0]), region_by_count);
	if (v->nr_rg - first > MAX_REGIONS)
		v->nr_rg = first + MAX_REGIONS;
	qsort(&v->rg[first], v->nr_rg - first, sizeof(v->rg[0]), region_by_addr);
	t = &v->tr[v->nr_tr++];
	t->iter = s->nr_iterations + 1;
	t->start_s = start_s;
	t->has_total = !isnan(tot_value);
	t->total = isnan(tot_value) ? 0 : tot_value;
	t->first = first;
	t->nr = v->nr_rg - first;
}

/* ---- samples ---- */

/* Whether o counts per block: a heap or mmap block of a site with several
 * blocks (its offsets inside the block add up over the site). */
static int per_block(const struct agent_search *s, const struct ameba_object *o)
{
	if ((o->kind != AMEBA_OBJ_HEAP && o->kind != AMEBA_OBJ_MMAP) || !o->site)
		return 0;
	for (uint32_t j = 0; j < s->world.nr_bins; j++)
		if (s->world.bins[j].name && !strcmp(s->world.bins[j].name, o->site))
			return s->world.bins[j].nr_blocks > 1;
	return 0;
}

static struct v_heat *heat_of(const struct agent_search *s, struct agent_views *v, uint32_t id,
			      const struct ameba_object *o)
{
	struct v_heat *h;

	for (uint32_t i = 0; i < v->nr_heat; i++)
		if (v->heat[i].obj == id)
			return &v->heat[i];
	if (v->nr_heat == MAX_HEAT || !o->sz_bytes)
		return NULL;
	if (!v->heat && !(v->heat = calloc(MAX_HEAT, sizeof(*v->heat))))
		return NULL;
	h = &v->heat[v->nr_heat];
	h->obj = id;
	h->per_block = per_block(s, o);
	h->start = o->start;
	h->size = o->end > o->start ? o->end - o->start : o->sz_bytes;
	if (h->size <= 512)
		h->bucket = WORD_BYTES;
	else if (h->size <= (uint64_t)LINE_BYTES * MAX_BUCKETS)
		h->bucket = LINE_BYTES;
	else
		h->bucket = (uint32_t)((h->size + MAX_BUCKETS - 1) / MAX_BUCKETS + LINE_BYTES - 1) /
			    LINE_BYTES * LINE_BYTES;
	h->nr = (uint32_t)((h->size + h->bucket - 1) / h->bucket);
	if (!(h->counts = calloc(h->nr, sizeof(*h->counts))))
		return NULL;
	v->nr_heat++;
	return h;
}

static struct v_lines *lines_of(const struct agent_search *s, struct agent_views *v, uint32_t id,
				const struct ameba_object *o)
{
	struct v_lines *l;

	for (uint32_t i = 0; i < v->nr_lines; i++)
		if (v->lines[i].obj == id)
			return &v->lines[i];
	if (v->nr_lines == MAX_LINE_OBJS)
		return NULL;
	if (!v->lines && !(v->lines = calloc(MAX_LINE_OBJS, sizeof(*v->lines))))
		return NULL;
	l = &v->lines[v->nr_lines++];
	l->obj = id;
	l->per_block = per_block(s, o);
	l->start = o->start;
	l->size = o->end > o->start ? o->end - o->start : o->sz_bytes;
	return l;
}

static void lines_add(struct v_lines *l, uint64_t off, uint32_t thread, double n)
{
	uint32_t line = (uint32_t)(off / LINE_BYTES);
	uint16_t word = (uint16_t)(off % LINE_BYTES / WORD_BYTES);

	l->samples++;
	for (uint32_t i = 0; i < l->nr; i++)
		if (l->cells[i].line == line && l->cells[i].word == word &&
		    l->cells[i].thread == thread) {
			l->cells[i].n += n;
			return;
		}
	if (l->nr == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 64;
		struct v_cell *c;

		if (cap > MAX_LINE_CELLS || !(c = realloc(l->cells, cap * sizeof(*c))))
			return;
		l->cells = c;
		l->cap = cap;
	}
	l->cells[l->nr++] = (struct v_cell){ line, word, thread, n };
}

static void samples_add(struct agent_search *s, struct agent_views *v,
			const struct ameba_experiment *sent, const struct agent_exp_result *res)
{
	int m = sent->sample_metric;
	double period = (double)sent->sample_period;

	if (!sent->sample_period || m < 0 || m >= AMEBA_M_NR)
		return;
	if (s->opts.verbose)
		fprintf(stderr, "ameba: views: %s every %llu: %u samples, %llu lost in %.3f s\n",
			metric_name(m),
			(unsigned long long)sent->sample_period, res->r.nr_samples,
			(unsigned long long)res->r.nr_samples_lost, (double)res->r.elapsed_ns / 1e9);
	v->taken[m] += res->r.nr_samples;
	v->lost[m] += res->r.nr_samples_lost;
	if (res->r.elapsed_ns)
		v->rate[m] = ((double)res->r.nr_samples + (double)res->r.nr_samples_lost) * period /
			     ((double)res->r.elapsed_ns / 1e9);
	if (m != s->primary_metric && m != AMEBA_M_COH_MISS)
		return;
	for (uint32_t i = 0; i < res->r.nr_samples; i++) {
		const struct ameba_sample *smp = ameba_results_sample(&res->r, i);
		const struct ameba_object *o = agent_object_at(s->world.objects, s->world.nr_objects,
							       smp->addr);
		double n = period * (smp->weight ? smp->weight : 1);
		uint32_t id;
		uint64_t off;

		if (!o || !o->name || (id = name_id(v, o->name, o->kind)) == UINT32_MAX)
			continue;
		off = smp->addr - o->start;
		if (m == s->primary_metric) {
			struct v_heat *h = heat_of(s, v, id, o);

			if (h && off < h->size) {
				h->counts[off / h->bucket] += n;
				h->samples++;
			}
		}
		if (m == AMEBA_M_COH_MISS) {
			struct v_lines *l = lines_of(s, v, id, o);

			if (l && off < l->size)
				lines_add(l, off, smp->thread, n);
		}
	}
}

void agent_views_plan(struct agent_search *s, const struct ameba_experiment *exp,
		      struct ameba_experiment *sent, uint32_t interval_ms)
{
	struct agent_views *v = views_get(s);
	uint32_t slot = s->nr_iterations % SAMPLE_EVERY;
	int m = -1, k;
	double rate;

	if (!v)
		return;
	v->sample_metric = -1;
	if (!s->opts.views_samples || exp->sample_period)
		return;
	if (slot == 1)
		m = s->primary_metric;
	else if (slot == 3 && agent_world_has(&s->world, AMEBA_M_COH_MISS))
		m = AMEBA_M_COH_MISS;
	if (m < 0 || m >= AMEBA_M_NR || !agent_world_has(&s->world, m))
		return;
	/* the interval just measured predicts the next one best (a phase
	 * change since the last sampled interval would overflow the rings) */
	rate = v->rate[m];
	k = series_index(v, m);
	if (k >= 0 && v->nr_iv && (v->iv[v->nr_iv - 1].has_total & (1u << k)) &&
	    v->iv[v->nr_iv - 1].secs > 0 && v->iv[v->nr_iv - 1].total[k] >= SAMPLES_WANTED)
		rate = v->iv[v->nr_iv - 1].total[k] / v->iv[v->nr_iv - 1].secs;
	/* unknown rate: a prime, corrected after the first interval; never
	 * below MIN_PERIOD (a program still starting up shows a rate its
	 * threads then exceed a thousandfold) */
	sent->sample_period = rate > 0 ? (uint64_t)fmax(MIN_PERIOD, rate * interval_ms / 1e3 /
									 SAMPLES_WANTED)
				       : 997;
	sent->sample_period |= 1;
	sent->sample_metric = m;
	sent->sample_random = 1;
	v->sample_metric = m;
}

void agent_views_observe(struct agent_search *s, const struct ameba_experiment *exp,
			 const struct ameba_experiment *sent, struct agent_exp_result *res,
			 double start_s, double tot_value)
{
	struct agent_views *v = views_get(s);

	if (!v)
		return;
	series_add(s, v, exp, res, start_s, tot_value);
	trace_add(s, v, exp, res, start_s, tot_value);
	samples_add(s, v, sent, res);
	if (!exp->sample_period) {
		/* our stream, or none: the strategy asked for no samples */
		res->r.nr_samples = 0;
		res->r.samples = NULL;
		res->r.nr_samples_lost = 0;
	}
}

void agent_views_thread_row(struct agent_search *s, const char *name, const struct ameba_context *c)
{
	struct agent_views *v = views_get(s);
	struct v_row *r, *n;
	uint32_t id;

	if (!v || !c->nr_threads || !c->per_thread ||
	    (id = name_id(v, name, c->object ? c->object->kind : AMEBA_OBJ_OTHER)) == UINT32_MAX)
		return;
	if (!(n = realloc(v->rows, (v->nr_rows + 1) * sizeof(*n))))
		return;
	v->rows = n;
	r = &v->rows[v->nr_rows];
	memset(r, 0, sizeof(*r));
	r->obj = id;
	r->ids = malloc(c->nr_threads * sizeof(*r->ids));
	r->val = calloc((size_t)c->nr_threads * (v->nr_series ? v->nr_series : 1), sizeof(*r->val));
	if (!r->ids || !r->val) {
		free(r->ids);
		free(r->val);
		return;
	}
	r->nr = c->nr_threads;
	memcpy(r->ids, c->thread_ids, c->nr_threads * sizeof(*r->ids));
	for (uint32_t k = 0; k < v->nr_series; k++) {
		int m = v->metrics[k];

		if (m >= (int)c->nr_metrics || !c->has[m] || !c->per_thread[m])
			continue;
		r->has |= 1u << k;
		for (uint32_t t = 0; t < c->nr_threads; t++)
			r->val[t * v->nr_series + k] = c->per_thread[m][t];
	}
	v->nr_rows++;
}

void agent_views_free(struct agent_views *v)
{
	if (!v)
		return;
	for (uint32_t i = 0; i < v->nr_names; i++)
		free(v->names[i]);
	free(v->names);
	free(v->kinds);
	free(v->at_iv);
	free(v->at_pt);
	free(v->hash);
	free(v->iv);
	free(v->pt);
	free(v->tr);
	free(v->rg);
	for (uint32_t i = 0; i < v->nr_heat; i++)
		free(v->heat[i].counts);
	free(v->heat);
	for (uint32_t i = 0; i < v->nr_lines; i++)
		free(v->lines[i].cells);
	free(v->lines);
	for (uint32_t i = 0; i < v->nr_rows; i++) {
		free(v->rows[i].ids);
		free(v->rows[i].val);
	}
	free(v->rows);
	free(v);
}

/* ---- JSON ---- */

static double round3(double x)
{
	return round(x * 1e3) / 1e3;
}

static cJSON *hex(uintptr_t a)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)a);
	return cJSON_CreateString(buf);
}

/* The report's objects (in their order) first, then the heaviest others:
 * at most nr_out series object ids. */
static uint32_t series_pick(const struct agent_search *s, struct agent_views *v, uint32_t *out,
			    uint32_t max)
{
	uint32_t n = 0;
	double *sum;

	for (uint32_t i = 0; i < s->nr_objects && n < max; i++) {
		uint32_t id = name_id(v, s->objects[i].name, s->objects[i].kind);
		int seen = 0;

		for (uint32_t p = 0; p < v->nr_pt && !seen; p++)
			seen = v->pt[p].obj == id;
		if (id != UINT32_MAX && seen)
			out[n++] = id;
	}
	if (n >= max || v->primary < 0 || !(sum = calloc(v->nr_names, sizeof(*sum))))
		return n;
	for (uint32_t p = 0; p < v->nr_pt; p++)
		sum[v->pt[p].obj] += v->pt[p].val[v->primary];
	for (uint32_t i = 0; i < n; i++)
		sum[out[i]] = -1;
	while (n < max) {
		uint32_t best = UINT32_MAX;

		for (uint32_t j = 0; j < v->nr_names; j++)
			if (sum[j] > 0 && (best == UINT32_MAX || sum[j] > sum[best]))
				best = j;
		if (best == UINT32_MAX)
			break;
		out[n++] = best;
		sum[best] = -1;
	}
	free(sum);
	return n;
}

static void json_series(const struct agent_search *s, struct agent_views *v, cJSON *root)
{
	cJSON *st = cJSON_AddArrayToObject(root, "interval_start_s");
	cJSON *sl = cJSON_AddArrayToObject(root, "interval_s");
	cJSON *sm = cJSON_AddArrayToObject(root, "series_metrics");
	cJSON *tot = cJSON_AddObjectToObject(root, "series_total");
	cJSON *ser = cJSON_AddArrayToObject(root, "series");
	uint32_t ids[12], n = series_pick(s, v, ids, 12);

	for (uint32_t i = 0; i < v->nr_iv; i++) {
		cJSON_AddItemToArray(st, cJSON_CreateNumber(round3(v->iv[i].start_s)));
		cJSON_AddItemToArray(sl, cJSON_CreateNumber(round3(v->iv[i].secs)));
	}
	for (uint32_t k = 0; k < v->nr_series; k++) {
		cJSON *a = cJSON_AddArrayToObject(tot, metric_name(v->metrics[k]));

		cJSON_AddItemToArray(sm, cJSON_CreateString(metric_name(v->metrics[k])));
		for (uint32_t i = 0; i < v->nr_iv; i++)
			cJSON_AddItemToArray(a, v->iv[i].has_total & (1u << k) ?
						cJSON_CreateNumber(v->iv[i].total[k]) : cJSON_CreateNull());
	}
	for (uint32_t j = 0; j < n; j++) {
		cJSON *o = cJSON_CreateObject(), *vals;

		cJSON_AddItemToArray(ser, o);
		cJSON_AddStringToObject(o, "name", v->names[ids[j]]);
		cJSON_AddStringToObject(o, "kind", agent_obj_kind_name(v->kinds[ids[j]]));
		vals = cJSON_AddObjectToObject(o, "values");
		for (uint32_t k = 0; k < v->nr_series; k++) {
			cJSON *a = cJSON_AddArrayToObject(vals, metric_name(v->metrics[k]));

			for (uint32_t i = 0; i < v->nr_iv; i++) {
				const struct v_interval *iv = &v->iv[i];
				cJSON *x = NULL;

				for (uint32_t p = iv->first; p < iv->first + iv->nr; p++)
					if (v->pt[p].obj == ids[j] && (v->pt[p].has & (1u << k)))
						x = cJSON_CreateNumber(v->pt[p].val[k]);
				cJSON_AddItemToArray(a, x ? x : cJSON_CreateNull());
			}
		}
	}
}

static void json_trace(const struct agent_search *s, const struct agent_views *v, cJSON *root)
{
	cJSON *t, *ivs;

	if (!v->nr_tr)
		return;
	t = cJSON_AddObjectToObject(root, "trace");
	cJSON_AddStringToObject(t, "metric", metric_name(s->primary_metric));
	if (v->tr_dropped)
		cJSON_AddNumberToObject(t, "intervals_left_out", v->tr_dropped);
	ivs = cJSON_AddArrayToObject(t, "intervals");
	for (uint32_t i = 0; i < v->nr_tr; i++) {
		const struct v_trace *tr = &v->tr[i];
		cJSON *o = cJSON_CreateObject(), *rs;

		cJSON_AddItemToArray(ivs, o);
		cJSON_AddNumberToObject(o, "i", tr->iter);
		cJSON_AddNumberToObject(o, "start_s", round3(tr->start_s));
		cJSON_AddItemToObject(o, "total", tr->has_total ? cJSON_CreateNumber(tr->total)
								: cJSON_CreateNull());
		rs = cJSON_AddArrayToObject(o, "regions");
		for (uint32_t r = tr->first; r < tr->first + tr->nr; r++) {
			const struct v_region *g = &v->rg[r];
			cJSON *a = cJSON_CreateArray();

			cJSON_AddItemToArray(rs, a);
			cJSON_AddItemToArray(a, hex(g->lo));
			cJSON_AddItemToArray(a, hex(g->hi));
			cJSON_AddItemToArray(a, cJSON_CreateNumber(g->val));
			cJSON_AddItemToArray(a, g->obj == UINT32_MAX ? cJSON_CreateNull() :
					     cJSON_CreateString(v->names[g->obj]));
		}
	}
}

/* The DWARF fields of a global, word by word, runs of one name merged. */
static void json_fields(struct agent_search *s, const char *name, uint64_t size, cJSON *o)
{
	cJSON *f = NULL, *last = NULL;
	char prev[256] = "", buf[256];
	uint64_t lim = size < 4096 ? size : 4096;

	for (uint64_t off = 0; off < lim; off += WORD_BYTES) {
		if (agent_fields_name(&s->fields, s->world.pid, name, off, buf, sizeof(buf)) || !buf[0])
			continue;
		if (last && !strcmp(buf, prev)) {
			cJSON *sz = cJSON_GetObjectItem(last, "size");

			cJSON_SetNumberValue(sz, sz->valuedouble + WORD_BYTES);
			continue;
		}
		if (!f)
			f = cJSON_AddArrayToObject(o, "fields");
		last = cJSON_CreateObject();
		cJSON_AddItemToArray(f, last);
		cJSON_AddNumberToObject(last, "offset", (double)off);
		cJSON_AddNumberToObject(last, "size", WORD_BYTES);
		cJSON_AddStringToObject(last, "name", buf);
		snprintf(prev, sizeof(prev), "%s", buf);
	}
}

static void json_heat(struct agent_search *s, const struct agent_views *v, cJSON *root)
{
	cJSON *a;
	uint32_t order[20], n = 0;
	double *tot;

	if (!v->nr_heat || !(tot = calloc(v->nr_heat, sizeof(*tot))))
		return;
	for (uint32_t i = 0; i < v->nr_heat; i++)
		for (uint32_t b = 0; b < v->heat[i].nr; b++)
			tot[i] += v->heat[i].counts[b];
	/* the heaviest 20 objects by estimated events */
	while (n < 20) {
		uint32_t best = UINT32_MAX;

		for (uint32_t i = 0; i < v->nr_heat; i++)
			if (tot[i] > 0 && (best == UINT32_MAX || tot[i] > tot[best]))
				best = i;
		if (best == UINT32_MAX)
			break;
		tot[best] = -1;
		order[n++] = best;
	}
	free(tot);
	a = cJSON_AddArrayToObject(root, "heat");
	for (uint32_t j = 0; j < n; j++) {
		const struct v_heat *h = &v->heat[order[j]];
		cJSON *o = cJSON_CreateObject(), *c;

		cJSON_AddItemToArray(a, o);
		cJSON_AddStringToObject(o, "name", v->names[h->obj]);
		cJSON_AddItemToObject(o, "addr", hex(h->start));
		cJSON_AddNumberToObject(o, "size", (double)h->size);
		cJSON_AddBoolToObject(o, "per_block", h->per_block);
		cJSON_AddStringToObject(o, "metric", metric_name(s->primary_metric));
		cJSON_AddNumberToObject(o, "bucket_bytes", h->bucket);
		cJSON_AddNumberToObject(o, "samples", (double)h->samples);
		c = cJSON_AddArrayToObject(o, "counts");
		for (uint32_t b = 0; b < h->nr; b++)
			cJSON_AddItemToArray(c, cJSON_CreateNumber(round(h->counts[b])));
		if (v->kinds[h->obj] == AMEBA_OBJ_GLOBAL)
			json_fields(s, v->names[h->obj], h->size, o);
	}
}

static void json_one_line(struct agent_search *s, const struct agent_views *v,
			  const struct v_lines *l, uint32_t line, cJSON *lines)
{
	cJSON *o = cJSON_CreateObject(), *ws = NULL;
	char buf[256];

	cJSON_AddItemToArray(lines, o);
	cJSON_AddNumberToObject(o, "offset", (double)line * LINE_BYTES);
	cJSON_AddItemToObject(o, "addr", hex(l->start + (uintptr_t)line * LINE_BYTES));
	ws = cJSON_AddArrayToObject(o, "words");
	for (uint16_t w = 0; w < LINE_BYTES / WORD_BYTES; w++) {
		cJSON *wo = NULL, *th = NULL;

		for (uint32_t i = 0; i < l->nr; i++) {
			const struct v_cell *c = &l->cells[i];
			cJSON *p;

			if (c->line != line || c->word != w)
				continue;
			if (!wo) {
				uint64_t off = (uint64_t)line * LINE_BYTES + (uint64_t)w * WORD_BYTES;

				wo = cJSON_CreateObject();
				cJSON_AddItemToArray(ws, wo);
				cJSON_AddNumberToObject(wo, "offset", (double)w * WORD_BYTES);
				if (v->kinds[l->obj] == AMEBA_OBJ_GLOBAL && !l->per_block &&
				    !agent_fields_name(&s->fields, s->world.pid, v->names[l->obj], off,
						       buf, sizeof(buf)) && buf[0])
					cJSON_AddStringToObject(wo, "field", buf);
				else
					cJSON_AddNullToObject(wo, "field");
				th = cJSON_AddArrayToObject(wo, "threads");
			}
			p = cJSON_CreateArray();
			cJSON_AddItemToArray(p, cJSON_CreateNumber(c->thread));
			cJSON_AddItemToArray(p, cJSON_CreateNumber(round(c->n)));
			cJSON_AddItemToArray(th, p);
		}
	}
}

static void json_lines(struct agent_search *s, const struct agent_views *v, cJSON *root)
{
	cJSON *a = NULL;

	for (uint32_t i = 0; i < v->nr_lines; i++) {
		const struct v_lines *l = &v->lines[i];
		cJSON *o, *ls;
		uint32_t picked[8], n = 0, nr_sums = 0;
		struct { uint32_t line; double n; } *sums;

		if (!l->nr || !(sums = malloc(l->nr * sizeof(*sums))))
			continue;
		/* each line's events, then the 8 lines with most */
		for (uint32_t c = 0; c < l->nr; c++) {
			uint32_t k = 0;

			while (k < nr_sums && sums[k].line != l->cells[c].line)
				k++;
			if (k == nr_sums) {
				sums[nr_sums].line = l->cells[c].line;
				sums[nr_sums++].n = 0;
			}
			sums[k].n += l->cells[c].n;
		}
		while (n < 8) {
			uint32_t best = UINT32_MAX;

			for (uint32_t k = 0; k < nr_sums; k++)
				if (sums[k].n > 0 && (best == UINT32_MAX || sums[k].n > sums[best].n))
					best = k;
			if (best == UINT32_MAX)
				break;
			picked[n++] = sums[best].line;
			sums[best].n = -1;
		}
		free(sums);
		if (!a)
			a = cJSON_AddArrayToObject(root, "lines");
		o = cJSON_CreateObject();
		cJSON_AddItemToArray(a, o);
		cJSON_AddStringToObject(o, "name", v->names[l->obj]);
		cJSON_AddItemToObject(o, "addr", hex(l->start));
		cJSON_AddBoolToObject(o, "per_block", l->per_block);
		cJSON_AddStringToObject(o, "metric", metric_name(AMEBA_M_COH_MISS));
		cJSON_AddNumberToObject(o, "word_bytes", WORD_BYTES);
		cJSON_AddNumberToObject(o, "samples", (double)l->samples);
		ls = cJSON_AddArrayToObject(o, "lines");
		for (uint32_t k = 0; k < n; k++)
			json_one_line(s, v, l, picked[k], ls);
	}
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static void json_matrix(const struct agent_views *v, cJSON *root)
{
	uint32_t *ids = NULL, nr = 0;
	cJSON *m, *ms, *ts, *os;

	if (!v->nr_rows)
		return;
	for (uint32_t r = 0; r < v->nr_rows; r++) {
		uint32_t *n = realloc(ids, (nr + v->rows[r].nr) * sizeof(*n));

		if (!n) {
			free(ids);
			return;
		}
		ids = n;
		memcpy(ids + nr, v->rows[r].ids, v->rows[r].nr * sizeof(*ids));
		nr += v->rows[r].nr;
	}
	qsort(ids, nr, sizeof(*ids), u32_cmp);
	{
		uint32_t u = 0;

		for (uint32_t i = 0; i < nr; i++)
			if (!u || ids[u - 1] != ids[i])
				ids[u++] = ids[i];
		nr = u;
	}
	if (nr > 512)
		nr = 512;	/* the first 512 threads by id; the view draws 64 */
	m = cJSON_AddObjectToObject(root, "thread_matrix");
	ms = cJSON_AddArrayToObject(m, "metrics");
	for (uint32_t k = 0; k < v->nr_series; k++)
		cJSON_AddItemToArray(ms, cJSON_CreateString(metric_name(v->metrics[k])));
	ts = cJSON_AddArrayToObject(m, "threads");
	for (uint32_t i = 0; i < nr; i++)
		cJSON_AddItemToArray(ts, cJSON_CreateNumber(ids[i]));
	os = cJSON_AddArrayToObject(m, "objects");
	for (uint32_t r = 0; r < v->nr_rows; r++) {
		const struct v_row *row = &v->rows[r];
		cJSON *o = cJSON_CreateObject(), *vals;

		cJSON_AddItemToArray(os, o);
		cJSON_AddStringToObject(o, "name", v->names[row->obj]);
		vals = cJSON_AddObjectToObject(o, "values");
		for (uint32_t k = 0; k < v->nr_series; k++) {
			cJSON *a;

			if (!(row->has & (1u << k)))
				continue;
			a = cJSON_AddArrayToObject(vals, metric_name(v->metrics[k]));
			for (uint32_t i = 0; i < nr; i++) {
				double x = 0;

				for (uint32_t t = 0; t < row->nr; t++)
					if (row->ids[t] == ids[i])
						x = row->val[t * v->nr_series + k];
				cJSON_AddItemToArray(a, cJSON_CreateNumber(x));
			}
		}
	}
	free(ids);
}

cJSON *agent_views_json(struct agent_search *s)
{
	struct agent_views *v = s->views;
	cJSON *root;

	if (!v)
		return NULL;
	root = cJSON_CreateObject();
	if (!root)
		return NULL;
	json_series(s, v, root);
	json_trace(s, v, root);
	if (s->opts.views_samples) {
		cJSON *sm = cJSON_AddObjectToObject(root, "samples");

		cJSON_AddStringToObject(sm, "metric", metric_name(s->primary_metric));
		cJSON_AddNumberToObject(sm, "taken", (double)v->taken[s->primary_metric]);
		cJSON_AddNumberToObject(sm, "lost", (double)v->lost[s->primary_metric]);
		cJSON_AddNumberToObject(sm, "every", SAMPLE_EVERY);
		if (agent_world_has(&s->world, AMEBA_M_COH_MISS) && s->primary_metric != AMEBA_M_COH_MISS) {
			cJSON_AddNumberToObject(sm, "coh_miss_taken", (double)v->taken[AMEBA_M_COH_MISS]);
			cJSON_AddNumberToObject(sm, "coh_miss_lost", (double)v->lost[AMEBA_M_COH_MISS]);
		}
	}
	json_heat(s, v, root);
	json_lines(s, v, root);
	json_matrix(v, root);
	return root;
}
