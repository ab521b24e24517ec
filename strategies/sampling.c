/*
 * sampling.c - the `sampling` strategy: overflow sampling of one metric,
 * every sample attributed to its object and allocation-site bin, estimates
 * scaled by the sampling period (Buck & Hollingsworth's miss-address
 * sampling, seed 002 section 2.1; Gibson's bins, seed 000).
 *
 * Notes:
 *  - Each interval keeps one sample stream armed (metric, period, random)
 *    and one total counter of the metric (no ranges, per thread). The
 *    stream is armed once and stays armed while the plan does not change
 *    (the agent re-arms only on a change).
 *  - The period: random=1 (default) draws every distance uniformly from
 *    [p/2, p/2 + p] (the monitor's rule), whose mean is floor(p/2) + p/2;
 *    random=0 uses exactly p. The default p = 10007 is a prime, so even the
 *    fixed period does not lock onto power-of-two loop strides (seed 002's
 *    tomcatv: 14.6 points of error at 50,000, 0.3 at the prime 50,111).
 *  - Attribution: a sample's data address is looked up by binary search in
 *    host->objects (sorted by start, non-overlapping). A heap or mmap block
 *    with an allocation site counts for its site (a unit per site, as in
 *    the `objects` strategy); any other object (global, stack, TLS) for
 *    itself. A site with one block is presented as that block, with more
 *    as its bin (AMEBA_OBJ_BIN). Samples that match no object in the table
 *    of this interval are kept and tried again after the next refresh;
 *    what still matches nothing is counted as unattributed.
 *  - The sample's own site (ameba_sample.site: the monitor resolved the
 *    block when it took the sample) comes first for heap and mmap blocks:
 *    a sample whose address is in no listed object, or in a listed block
 *    of another site (freed, its memory reused), counts for the site the
 *    monitor named. Without it, programs that allocate blocks faster than
 *    the agent lists them (tests/workloads many_blocks, million_live, cxx,
 *    thread_churn) lost most samples or gave them to stale blocks, 5-70
 *    points off the oracle. Such a sample updates no block of the unit
 *    (it has none in the table); the retry after the next refresh is left
 *    for globals, stacks and samples without a site.
 *  - Estimates: a ratio estimator. A unit with k of the K delivered samples
 *    gets k / K x the exact total of the sampled window (the total
 *    counter). The period-scaled k x mean period has the same mean but
 *    adds the noise of K itself (the sum of K random distances: a relative
 *    error of ~0.29 / sqrt(K) with random=1), and over the total it put a
 *    single-object program at 102.7% (bench/search_accuracy, imbalance,
 *    a few hundred samples); the ratio keeps every share within [0, 1]
 *    and needs no correction for lost samples. Only when the window has
 *    no total (a backend without the counter) is it k x mean period (x
 *    (delivered + lost) / delivered when the monitor dropped samples).
 *    Per-thread values come from each sample's thread, by the same scale.
 *    Only the sampled metric is estimated: has[] is set for it alone.
 *  - The program context carries the total counter's exact counts, summed
 *    over the intervals whose samples were delivered (the interval in which
 *    the target exits delivers none: the monitor is gone), so the share
 *    value / program compares like with like. The pure-sample share
 *    (unit samples / all samples, independent of the period) is in
 *    `extra` as share_samples, with the exact total of the whole window.
 *  - Confidence of a unit with k samples: 1 - 1/sqrt(k), the relative
 *    standard error of a Poisson count (k events of a rare-event process
 *    have standard deviation sqrt(k)), clamped to [0, 1]; k = 0 gives 0,
 *    k = 100 gives 0.90, k = 10,000 gives 0.99. When samples were lost it
 *    is further multiplied by the delivered fraction. The program context
 *    has confidence 1 on an exact backend (its counts are not sampled).
 *  - The strategy never finishes by itself unless rounds > 0.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ameba/plugin.h"
#include "strategy_util.h"

#define DEFAULT_PERIOD "10007"
#define MAX_PERIOD (1ull << 40)
#define PENDING_MAX (1u << 20)	/* unresolved samples kept for one retry */
#define MAX_THREAD_ID (1u << 20)	/* larger ids are not believed */
#define UNLISTED_BLOCK UINT64_MAX	/* object id of a block known only by its site */

static const struct ameba_param sampling_params[] = {
	{ "metric", AMEBA_PARAM_METRIC, "l1d_miss", "metric to sample (the run's --metric)" },
	{ "period", AMEBA_PARAM_INT, DEFAULT_PERIOD,
	  "events between samples (mean when random=1); a prime avoids aliasing" },
	{ "random", AMEBA_PARAM_INT, "1",
	  "1: each distance uniform in [period/2, 3*period/2]; 0: exactly period" },
	{ "rounds", AMEBA_PARAM_INT, "0", "intervals to sample, then stop (0: until the target exits)" },
	{ "interval", AMEBA_PARAM_INT, "0", "interval length in ms (0: the agent's --interval)" },
};

struct unit {
	char *key;			/* "s:<site>" or "o:<id>" */
	struct ameba_object obj;	/* own copy of the last block seen; strings owned */
	struct ameba_object shown;	/* what the context presents (block or bin) */
	char *bin_name;			/* owned name of the bin presentation */
	uint64_t nr_samples;
	uint64_t *pt;			/* samples per thread, [nr_threads_cap] */
	double *pt_est;			/* estimates per thread (contexts) */
	uint64_t last_block;		/* id of the last block sampled */
	uint32_t nr_blocks_seen;	/* distinct blocks sampled (saturates at 2) */
	char extra[256];
};

struct sampling {
	const struct ameba_host *host;
	int metric;
	uint64_t period;
	int random;
	double mean_period;
	uint32_t rounds, nr_rounds;
	uint32_t interval_ms;

	struct ameba_counter total;

	struct unit *units;
	uint32_t nr_units, cap_units;
	uint32_t *index;		/* open addressing: unit index + 1, 0 = empty */
	uint32_t index_cap;

	uint32_t nr_threads_cap;
	uint32_t *thread_ids;
	uint64_t *program_pt;		/* exact per-thread totals, sampled window */
	double *program_pt_est;
	double program;			/* exact total over the sampled window */
	double program_all;		/* exact total over every interval */
	uint64_t window_ns;

	uint64_t nr_samples;		/* delivered */
	uint64_t nr_attributed;
	uint64_t nr_unlisted;		/* of those, by the sample's site alone */
	uint64_t nr_unattributed;
	uint64_t nr_lost;

	struct ameba_sample *pending;	/* unresolved, retried after the next refresh */
	uint32_t nr_pending, cap_pending;

	struct ameba_context *ctxs;
	char program_extra[256];
};

/* ---- units (a small string-keyed table, as in objects.c) ---- */

/* Widens every per-thread array to nr threads. */
static int threads_grow(struct sampling *st, uint32_t nr)
{
	uint32_t *ids;
	uint64_t *p;

	if (nr <= st->nr_threads_cap)
		return 0;
	for (uint32_t u = 0; u < st->nr_units; u++) {
		p = realloc(st->units[u].pt, nr * sizeof(*p));
		if (!p)
			return AMEBA_ENOMEM;
		memset(p + st->nr_threads_cap, 0, (nr - st->nr_threads_cap) * sizeof(*p));
		st->units[u].pt = p;
	}
	p = realloc(st->program_pt, nr * sizeof(*p));
	if (!p)
		return AMEBA_ENOMEM;
	memset(p + st->nr_threads_cap, 0, (nr - st->nr_threads_cap) * sizeof(*p));
	st->program_pt = p;
	ids = realloc(st->thread_ids, nr * sizeof(*ids));
	if (!ids)
		return AMEBA_ENOMEM;
	st->thread_ids = ids;
	for (uint32_t t = 0; t < nr; t++)
		ids[t] = t;
	st->nr_threads_cap = nr;
	return 0;
}

static void obj_free(struct ameba_object *o)
{
	free((char *)o->name);
	free((char *)o->site);
	o->name = o->site = NULL;
}

static int obj_copy(struct ameba_object *dst, const struct ameba_object *src)
{
	char *name = strdup(src->name ? src->name : "?");
	char *site = src->site ? strdup(src->site) : NULL;

	if (!name || (src->site && !site)) {
		free(name);
		free(site);
		return AMEBA_ENOMEM;
	}
	obj_free(dst);
	*dst = *src;
	dst->name = name;
	dst->site = site;
	return 0;
}

/* The unit of key, created (with a copy of o) when new; NULL without memory. */
static struct unit *unit_get(struct sampling *st, const char *key, const struct ameba_object *o)
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
	u->key = strdup(key);
	u->pt = st->nr_threads_cap ? calloc(st->nr_threads_cap, sizeof(*u->pt)) : NULL;
	if (!u->key || (st->nr_threads_cap && !u->pt) || obj_copy(&u->obj, o)) {
		free(u->key);
		free(u->pt);
		return NULL;
	}
	u->last_block = o->id;
	st->index[slot] = ++st->nr_units;
	return u;
}

static int is_site_kind(const struct ameba_object *o)
{
	return (o->kind == AMEBA_OBJ_HEAP || o->kind == AMEBA_OBJ_MMAP) && o->site;
}

/* The object holding addr (binary search by start), or NULL. */
static const struct ameba_object *object_at(const struct ameba_host *h, uintptr_t addr)
{
	uint32_t lo = 0, hi = h->nr_objects;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ameba_host_object(h, mid)->start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	if (addr >= ameba_host_object(h, lo - 1)->end || ameba_host_object(h, lo - 1)->kind == AMEBA_OBJ_OTHER)
		return NULL;
	return ameba_host_object(h, lo - 1);
}

/* Attributes one sample. 1: counted; 0: no object holds its address; < 0: error. */
static int attribute(struct sampling *st, const struct ameba_sample *s)
{
	const struct ameba_object *o = object_at(st->host, s->addr);
	struct ameba_object unlisted;
	char key[4200];
	struct unit *u;

	/*
	 * The monitor's site wins over the table: the listed object at the
	 * address may be missing (a block allocated since the last listing)
	 * or stale (freed, its memory reused by a block of another site).
	 */
	if (s->site && (!o || !is_site_kind(o) || strcmp(o->site, s->site))) {
		memset(&unlisted, 0, sizeof(unlisted));
		unlisted.id = UNLISTED_BLOCK;
		unlisted.kind = AMEBA_OBJ_HEAP;
		unlisted.name = s->site;
		unlisted.site = s->site;
		unlisted.start = s->addr;
		unlisted.end = s->addr + 1;
		unlisted.live = 1;
		o = &unlisted;
	}
	if (!o)
		return 0;
	if (is_site_kind(o))
		snprintf(key, sizeof(key), "s:%s", o->site);
	else
		snprintf(key, sizeof(key), "o:%llu", (unsigned long long)o->id);
	u = unit_get(st, key, o);
	if (!u)
		return AMEBA_ENOMEM;
	if (o->id == UNLISTED_BLOCK) {
		/* a block the table does not know: not counted as a distinct
		 * block, and the unit keeps the last listed block it saw */
		st->nr_unlisted++;
	} else if (u->nr_blocks_seen == 0 || u->last_block != o->id) {
		if (u->nr_blocks_seen < 2)
			u->nr_blocks_seen++;
		u->last_block = o->id;
		if (obj_copy(&u->obj, o))
			return AMEBA_ENOMEM;
	}
	if (s->thread < MAX_THREAD_ID && s->thread >= st->nr_threads_cap &&
	    threads_grow(st, s->thread + 1))
		return AMEBA_ENOMEM;
	u->nr_samples++;
	if (s->thread < st->nr_threads_cap)
		u->pt[s->thread]++;
	st->nr_attributed++;
	return 1;
}

static int pending_push(struct sampling *st, const struct ameba_sample *s)
{
	if (st->nr_pending >= PENDING_MAX) {
		st->nr_unattributed++;
		return 0;
	}
	if (st->nr_pending == st->cap_pending) {
		uint32_t cap = st->cap_pending ? 2 * st->cap_pending : 256;
		struct ameba_sample *p = realloc(st->pending, cap * sizeof(*p));

		if (!p)
			return AMEBA_ENOMEM;
		st->pending = p;
		st->cap_pending = cap;
	}
	st->pending[st->nr_pending++] = *s;
	return 0;
}

/* ---- the strategy ---- */

static int sampling_plan(void *state, struct ameba_experiment *exp)
{
	struct sampling *st = state;
	int rc;

	/* the table was refreshed: the samples of blocks that were new last
	 * interval can be placed now; the rest never will */
	for (uint32_t i = 0; i < st->nr_pending; i++) {
		rc = attribute(st, &st->pending[i]);
		if (rc < 0)
			return rc;
		if (rc == 0)
			st->nr_unattributed++;
	}
	st->nr_pending = 0;
	if (st->rounds && st->nr_rounds >= st->rounds)
		return 1;
	rc = threads_grow(st, st->host->nr_threads);
	if (rc)
		return rc;
	ameba_experiment_reset(exp);
	memset(&st->total, 0, sizeof(st->total));
	st->total.metric = st->metric;
	st->total.per_thread = 1;
	exp->nr_counters = 1;
	exp->counters = &st->total;
	exp->interval_ms = st->interval_ms;
	exp->sample_metric = st->metric;
	exp->sample_period = st->period;
	exp->sample_random = st->random;
	return 0;
}

static int sampling_observe(void *state, const struct ameba_experiment *exp,
			    const struct ameba_results *res)
{
	struct sampling *st = state;
	double v = res->nr_counters > 0 ? (double)res->values[0] : 0;
	/* the interval of the target's exit delivers no samples: keep its
	 * counts out of the sampled window */
	int sampled = !(res->target_exited && res->nr_samples == 0);
	int rc;

	(void)exp;
	rc = threads_grow(st, strategy_results_width(res));
	if (rc)
		return rc;
	st->program_all += v;
	if (sampled) {
		st->program += v;
		if (res->nr_counters > 0 && res->per_thread && res->per_thread[0])
			for (uint32_t k = 0; k < res->nr_threads; k++)
				st->program_pt[ameba_results_thread(res, k)] += res->per_thread[0][k];
	}
	st->nr_lost += res->nr_samples_lost;
	for (uint32_t i = 0; i < res->nr_samples; i++) {
		const struct ameba_sample *s = ameba_results_sample(res, i);

		if (s->metric != st->metric)
			continue;
		st->nr_samples++;
		rc = attribute(st, s);
		if (rc < 0)
			return rc;
		if (rc == 0 && (rc = pending_push(st, s)) < 0)
			return rc;
	}
	if (st->host->log && res->nr_samples_lost)
		st->host->log(st->host, "sampling: %llu samples lost in this interval (a thread's "
			      "ring was full); estimates are scaled up, confidence lowered",
			      (unsigned long long)res->nr_samples_lost);
	st->window_ns += res->elapsed_ns;
	st->nr_rounds++;
	return 0;
}

/* Samples delivered / (delivered + lost). */
static double delivered_fraction(const struct sampling *st)
{
	uint64_t all = st->nr_samples + st->nr_lost;

	return all ? (double)st->nr_samples / (double)all : 1.0;
}

/* 1 - relative standard error of a Poisson count of k, in [0, 1]. */
static double count_confidence(uint64_t k)
{
	double c = k ? 1.0 - 1.0 / sqrt((double)k) : 0.0;

	return c < 0 ? 0 : c > 1 ? 1 : c;
}

/* The presentation of a unit: its block, or its site's bin. */
static int unit_describe(struct sampling *st, struct unit *u)
{
	const struct ameba_host *h = st->host;
	const struct ameba_object *bin = NULL;
	char *name;

	if (u->key[0] == 's')
		for (uint32_t b = 0; b < h->nr_bins; b++)
			if (ameba_host_bin(h, b)->name && !strcmp(ameba_host_bin(h, b)->name, u->obj.site)) {
				bin = ameba_host_bin(h, b);
				break;
			}
	/* a site sampled only in unlisted blocks (nr_blocks_seen 0) is a bin */
	if (u->key[0] == 'o' || (u->nr_blocks_seen == 1 && (!bin || bin->nr_blocks <= 1))) {
		u->shown = u->obj;
		return 0;
	}
	name = strdup(u->obj.site);
	if (!name)
		return AMEBA_ENOMEM;
	free(u->bin_name);
	u->bin_name = name;
	memset(&u->shown, 0, sizeof(u->shown));
	u->shown.kind = AMEBA_OBJ_BIN;
	u->shown.name = name;
	u->shown.site = name;
	u->shown.live = 1;
	if (bin) {
		u->shown.id = bin->id;
		u->shown.start = bin->start;
		u->shown.end = bin->end;
		u->shown.sz_bytes = bin->sz_bytes;
		u->shown.nr_blocks = bin->nr_blocks;
	} else {
		u->shown.start = u->obj.start;
		u->shown.end = u->obj.end;
		u->shown.sz_bytes = u->obj.sz_bytes;
		u->shown.nr_blocks = u->nr_blocks_seen ? u->nr_blocks_seen : 1;
	}
	return 0;
}

static int cmp_samples(const void *a, const void *b, void *arg)
{
	const struct sampling *st = arg;
	uint64_t x = st->units[*(const uint32_t *)a].nr_samples;
	uint64_t y = st->units[*(const uint32_t *)b].nr_samples;

	if (x != y)
		return x < y ? 1 : -1;
	return strcmp(st->units[*(const uint32_t *)a].key, st->units[*(const uint32_t *)b].key);
}

static int sampling_contexts(void *state, const struct ameba_context **out, uint32_t *nr)
{
	struct sampling *st = state;
	/* the ratio estimator; k x period only without a total (Notes) */
	double scale = st->program > 0 && st->nr_samples ?
		st->program / (double)st->nr_samples :
		st->mean_period / delivered_fraction(st);
	double *pe;
	uint32_t *order, n = 0, k = 0;
	struct ameba_context *c;
	struct ameba_context_data *d;
	int rc = 0;

	free(st->ctxs);
	st->ctxs = strategy_ctxs_alloc(st->nr_units + 1);
	order = malloc((st->nr_units + 1) * sizeof(*order));
	pe = realloc(st->program_pt_est, (st->nr_threads_cap + 1) * sizeof(*pe));
	if (!st->ctxs || !order || !pe) {
		free(order);
		if (pe)
			st->program_pt_est = pe;
		return AMEBA_ENOMEM;
	}
	st->program_pt_est = pe;

	c = &st->ctxs[n++];
	d = strategy_ctx_data(c);
	c->kind = AMEBA_CTX_PROGRAM;
	d->has[st->metric] = 1;
	d->values[st->metric] = st->program;
	d->program[st->metric] = st->program;
	for (uint32_t t = 0; t < st->nr_threads_cap; t++)
		pe[t] = (double)st->program_pt[t];
	d->per_thread[st->metric] = pe;
	c->nr_threads = st->nr_threads_cap;
	c->thread_ids = st->thread_ids;
	c->confidence = st->host->exact ? 1.0 : 0.5;
	c->nr_samples = st->nr_samples;
	c->window_ns = st->window_ns;
	snprintf(st->program_extra, sizeof(st->program_extra),
		 "samples=%llu\nattributed=%llu\nunattributed=%llu\nby_site=%llu\nlost=%llu\n"
		 "period_mean=%.1f\nrandom=%d\ntotal_window=%.0f",
		 (unsigned long long)st->nr_samples, (unsigned long long)st->nr_attributed,
		 (unsigned long long)(st->nr_unattributed + st->nr_pending),
		 (unsigned long long)st->nr_unlisted,
		 (unsigned long long)st->nr_lost, st->mean_period, st->random, st->program_all);
	c->extra = st->program_extra;

	for (uint32_t u = 0; u < st->nr_units; u++)
		if (st->units[u].nr_samples)
			order[k++] = u;
	qsort_r(order, k, sizeof(*order), cmp_samples, st);
	for (uint32_t i = 0; i < k; i++) {
		struct unit *u = &st->units[order[i]];
		double *ppt = realloc(u->pt_est, (st->nr_threads_cap + 1) * sizeof(*ppt));

		if (!ppt) {
			rc = AMEBA_ENOMEM;
			break;
		}
		u->pt_est = ppt;
		for (uint32_t t = 0; t < st->nr_threads_cap; t++)
			ppt[t] = (double)u->pt[t] * scale;
		rc = unit_describe(st, u);
		if (rc)
			break;
		c = &st->ctxs[n++];
		d = strategy_ctx_data(c);
		c->kind = AMEBA_CTX_OBJECT;
		c->object = &u->shown;
		d->has[st->metric] = 1;
		d->values[st->metric] = (double)u->nr_samples * scale;
		d->program[st->metric] = st->program;
		d->per_thread[st->metric] = ppt;
		c->nr_threads = st->nr_threads_cap;
		c->thread_ids = st->thread_ids;
		c->confidence = count_confidence(u->nr_samples) * delivered_fraction(st);
		c->nr_samples = u->nr_samples;
		c->window_ns = st->window_ns;
		snprintf(u->extra, sizeof(u->extra),
			 "measured=sampled\nsamples=%llu\nshare_samples=%.6f\nrse=%.4f\nlost=%llu",
			 (unsigned long long)u->nr_samples,
			 st->nr_samples ? (double)u->nr_samples / (double)st->nr_samples : 0.0,
			 1.0 / sqrt((double)u->nr_samples), (unsigned long long)st->nr_lost);
		c->extra = u->extra;
	}
	free(order);
	if (rc)
		return rc;
	*out = st->ctxs;
	*nr = n;
	return 0;
}

static void sampling_progress(void *state, char *buf, size_t len)
{
	struct sampling *st = state;
	const struct unit *best = NULL;
	int o;

	for (uint32_t u = 0; u < st->nr_units; u++)
		if (!best || st->units[u].nr_samples > best->nr_samples)
			best = &st->units[u];
	o = snprintf(buf, len, "%llu samples of %s (period %s%llu)",
		     (unsigned long long)st->nr_samples, ameba_metric_info(st->metric)->name,
		     st->random ? "~" : "", (unsigned long long)st->period);
	if (o < 0 || (size_t)o >= len)
		return;
	if (best && best->nr_samples && st->nr_samples)
		o += snprintf(buf + o, len - (size_t)o, ", top %s %.1f%%", best->obj.site ?
			      best->obj.site : best->obj.name,
			      100.0 * (double)best->nr_samples / (double)st->nr_samples);
	if (st->nr_lost && o > 0 && (size_t)o < len)
		snprintf(buf + o, len - (size_t)o, ", %llu lost (ring full): estimates scaled, "
			 "confidence x%.2f", (unsigned long long)st->nr_lost, delivered_fraction(st));
}

static void sampling_destroy(void *state)
{
	struct sampling *st = state;

	for (uint32_t u = 0; u < st->nr_units; u++) {
		free(st->units[u].key);
		obj_free(&st->units[u].obj);
		free(st->units[u].bin_name);
		free(st->units[u].pt);
		free(st->units[u].pt_est);
	}
	free(st->units);
	free(st->index);
	free(st->thread_ids);
	free(st->program_pt);
	free(st->program_pt_est);
	free(st->pending);
	free(st->ctxs);
	free(st);
}

static int host_has(const struct ameba_host *h, int m)
{
	for (uint32_t i = 0; i < h->nr_metrics; i++)
		if (h->metrics[i] == m)
			return 1;
	return 0;
}

/* Parses a non-negative integer parameter; -1 when it is not one. */
static long long param_int(const struct ameba_params *params, const char *name, const char *def)
{
	const char *s = ameba_param_get(params, name);
	char *end;
	long long v;

	if (!s)
		s = def;
	v = strtoll(s, &end, 10);
	return *s && !*end && v >= 0 ? v : -1;
}

static int sampling_create(const struct ameba_host *host, const struct ameba_params *params,
			   void **state, char *msg)
{
	struct sampling *st;
	const char *metric = ameba_param_get(params, "metric");
	long long period = param_int(params, "period", DEFAULT_PERIOD);
	long long random = param_int(params, "random", "1");
	long long rounds = param_int(params, "rounds", "0");
	long long interval = param_int(params, "interval", "0");
	int m;

	if (host->abi_version != AMEBA_PLUGIN_ABI_VERSION) {
		snprintf(msg, 256, "host speaks plugin ABI %u, sampling.so was built for %d",
			 host->abi_version, AMEBA_PLUGIN_ABI_VERSION);
		return AMEBA_EABI;
	}
	if (period < 2 || (unsigned long long)period > MAX_PERIOD) {
		snprintf(msg, 256, "period=%s: want an integer from 2 to 2^40 (e.g. the prime 10007)",
			 ameba_param_get(params, "period") ?: DEFAULT_PERIOD);
		return AMEBA_EINVAL;
	}
	if (random != 0 && random != 1) {
		snprintf(msg, 256, "random=%s: want 1 (randomised around the period) or 0 (exact)",
			 ameba_param_get(params, "random") ?: "?");
		return AMEBA_EINVAL;
	}
	if (rounds < 0 || rounds > UINT32_MAX || interval < 0 || interval > 3600000) {
		snprintf(msg, 256, "rounds=%s, interval=%s: want rounds >= 0 and an interval of 0 "
			 "(the agent's) to 3600000 ms", ameba_param_get(params, "rounds") ?: "0",
			 ameba_param_get(params, "interval") ?: "0");
		return AMEBA_EINVAL;
	}
	m = ameba_metric_by_name(metric ? metric : "l1d_miss");
	if (m < 0 || !host_has(host, m) || m == AMEBA_M_SAMPLES) {
		snprintf(msg, 256, "metric=%s: %s; `ameba list metrics` shows the backend's",
			 metric ? metric : "l1d_miss", m < 0 ? "no such metric" :
			 "the backend cannot sample it");
		return AMEBA_ENOTSUP;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return AMEBA_ENOMEM;
	st->host = host;
	st->metric = m;
	st->period = (uint64_t)period;
	st->random = (int)random;
	st->mean_period = random ? (double)(st->period / 2) + (double)st->period / 2.0 :
			  (double)st->period;
	st->rounds = (uint32_t)rounds;
	st->interval_ms = (uint32_t)interval;
	*state = st;
	return 0;
}

static const struct ameba_strategy_desc sampling_desc = {
	.abi_version = AMEBA_PLUGIN_ABI_VERSION,
	.struct_size = sizeof(struct ameba_strategy_desc),
	.name = "sampling",
	.summary = "overflow sampling of a metric, samples attributed to objects and sites "
		   "(estimates)",
	.params = sampling_params,
	.nr_params = sizeof(sampling_params) / sizeof(sampling_params[0]),
	.create = sampling_create,
	.plan = sampling_plan,
	.observe = sampling_observe,
	.contexts = sampling_contexts,
	.progress = sampling_progress,
	.destroy = sampling_destroy,
};

AMEBA_API const struct ameba_strategy_desc *ameba_strategy_entry(void)
{
	return &sampling_desc;
}
