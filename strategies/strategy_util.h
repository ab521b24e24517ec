/*
 * strategy_util.h - small helpers shared by the built-in strategies (not
 * part of the plugin ABI: third-party strategies need only plugin.h).
 *
 * Notes:
 *  - Header-only (static inline): every strategy is its own .so, and the
 *    helpers are too small to deserve a library of their own.
 *  - The metric names come from ameba-common (ameba_metric_by_name), which
 *    every built-in strategy links in hidden.
 */
#ifndef AMEBA_STRATEGY_UTIL_H
#define AMEBA_STRATEGY_UTIL_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ameba/plugin.h"

/* Whether the host's backend measures metric m. */
/*
 * A budget parameter (max_counters, max_ranges): its value, or when it is
 * "host" (the default) the host's limit `host_value` (fallback when the
 * host is older and does not say). -1 when the value is not a number.
 */
static inline long long strategy_limit(const char *value, uint32_t host_value, long long fallback)
{
	char *end;
	long long v;

	if (!value || !strcmp(value, "host"))
		return host_value ? (long long)host_value : fallback;
	v = strtoll(value, &end, 10);
	return end != value && !*end ? v : -1;
}

static inline int strategy_host_has(const struct ameba_host *h, int m)
{
	for (uint32_t i = 0; i < h->nr_metrics; i++)
		if (h->metrics[i] == m)
			return 1;
	return 0;
}

/*
 * The metrics a strategy measures, from its `metrics` parameter: "all" (or
 * NULL) means every metric of the backend but `samples`; otherwise names
 * joined by '+'. The ordering metric primary is always included. Fills
 * out[AMEBA_M_NR] and *nr; returns 0, or AMEBA_EINVAL with msg (256 bytes)
 * naming the bad name and the fix.
 */
static inline int strategy_metrics_select(const struct ameba_host *host, const char *metrics,
					  int primary, int *out, uint32_t *nr, char *msg)
{
	int have = 0;

	*nr = 0;
	if (!metrics || !strcmp(metrics, "all")) {
		for (uint32_t i = 0; i < host->nr_metrics && *nr < AMEBA_M_NR; i++)
			if (host->metrics[i] != AMEBA_M_SAMPLES)
				out[(*nr)++] = host->metrics[i];
	} else {
		char buf[512], *tok, *save = NULL;

		snprintf(buf, sizeof(buf), "%s", metrics);
		for (tok = strtok_r(buf, "+", &save); tok; tok = strtok_r(NULL, "+", &save)) {
			int m = ameba_metric_by_name(tok);

			if (m < 0 || !strategy_host_has(host, m)) {
				snprintf(msg, 256, "metrics=%s: '%s' is %s; write all or names joined "
					 "by '+'", metrics, tok, m < 0 ? "not a metric" :
					 "not measured by this backend");
				return AMEBA_EINVAL;
			}
			if (*nr < AMEBA_M_NR)
				out[(*nr)++] = m;
		}
	}
	for (uint32_t i = 0; i < *nr; i++)
		have |= out[i] == primary;
	if (!have && *nr < AMEBA_M_NR)
		out[(*nr)++] = primary;
	return 0;
}

/* Grows the per-thread array *pt from old to nr entries, the new ones zero. */
static inline int strategy_grow_pt(double **pt, uint32_t old, uint32_t nr)
{
	double *v = realloc(*pt, nr * sizeof(*v));

	if (!v)
		return AMEBA_ENOMEM;
	memset(v + old, 0, (nr - old) * sizeof(*v));
	*pt = v;
	return 0;
}

/*
 * Per-thread figures of the threads that counted something, for a context
 * (ameba_context.thread_ids / per_thread): ids[0 .. nr) ascending and, for
 * each metric m asked for, v[m][k] the value of thread ids[k]. A program
 * that starts threads by the thousand keeps a row per thread that touched
 * the unit, not one per thread it ever had (ABI 3, ameba_results).
 */
struct strategy_ptab {
	uint32_t *ids;
	double *v[AMEBA_M_NR];
	uint32_t nr, cap;
};

/* The entry of thread id, inserted (zero) when new; -1 when out of memory. */
static inline long strategy_ptab_at(struct strategy_ptab *p, const int *metrics, uint32_t nr_metrics,
				    uint32_t id)
{
	uint32_t lo = 0, hi = p->nr;

	if (p->nr && p->ids[p->nr - 1] < id) {
		lo = p->nr;	/* ascending ids arrive in order: an append */
	} else {
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (p->ids[mid] < id)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < p->nr && p->ids[lo] == id)
			return lo;
	}
	if (p->nr == p->cap) {
		uint32_t cap = p->cap ? 2 * p->cap : 8;
		uint32_t *ids = realloc(p->ids, cap * sizeof(*ids));

		if (!ids)
			return -1;
		p->ids = ids;
		for (uint32_t k = 0; k < nr_metrics; k++) {
			double *v = realloc(p->v[metrics[k]], cap * sizeof(*v));

			if (!v)
				return -1;
			p->v[metrics[k]] = v;
		}
		p->cap = cap;
	}
	memmove(p->ids + lo + 1, p->ids + lo, (p->nr - lo) * sizeof(*p->ids));
	p->ids[lo] = id;
	for (uint32_t k = 0; k < nr_metrics; k++) {
		double *v = p->v[metrics[k]];

		memmove(v + lo + 1, v + lo, (p->nr - lo) * sizeof(*v));
		v[lo] = 0;
	}
	p->nr++;
	return lo;
}

/* Adds scale * row[k] of a result's per-thread row (threads: the result)
 * to metric m of p; 0 or AMEBA_ENOMEM. Zero entries add no thread. */
static inline int strategy_ptab_add(struct strategy_ptab *p, const int *metrics, uint32_t nr_metrics,
				    int m, const struct ameba_results *res, const uint64_t *row,
				    double scale)
{
	for (uint32_t k = 0; k < res->nr_threads; k++) {
		long e;

		if (!row[k])
			continue;
		e = strategy_ptab_at(p, metrics, nr_metrics, ameba_results_thread(res, k));
		if (e < 0)
			return AMEBA_ENOMEM;
		p->v[m][e] += scale * (double)row[k];
	}
	return 0;
}

static inline void strategy_ptab_free(struct strategy_ptab *p)
{
	free(p->ids);
	for (int m = 0; m < AMEBA_M_NR; m++)
		free(p->v[m]);
	memset(p, 0, sizeof(*p));
}

/* One more than the highest thread id of a result's per-thread rows: the
 * width of an array indexed by thread id that takes them. */
static inline uint32_t strategy_results_width(const struct ameba_results *res)
{
	uint32_t w = 0;

	for (uint32_t k = 0; k < res->nr_threads; k++)
		if (ameba_results_thread(res, k) + 1 > w)
			w = ameba_results_thread(res, k) + 1;
	return w;
}

/* FNV-1a of a unit's key (site label or object id). */
static inline uint64_t strategy_hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

/*
 * Rebuilds the open-addressing index of nr_units units (an array of stride
 * bytes whose `char *key` sits at key_off) at twice its capacity (256 at
 * first). Slots hold unit number + 1; 0 is empty. 0 or AMEBA_ENOMEM.
 */
static inline int strategy_index_grow(uint32_t **index, uint32_t *index_cap, const void *units,
				      size_t stride, size_t key_off, uint32_t nr_units)
{
	uint32_t cap = *index_cap ? 2 * *index_cap : 256;
	uint32_t *idx = calloc(cap, sizeof(*idx));

	if (!idx)
		return AMEBA_ENOMEM;
	for (uint32_t u = 0; u < nr_units; u++) {
		const char *key = *(char *const *)((const char *)units + u * stride + key_off);
		uint64_t h = strategy_hash_str(key);

		while (idx[h & (cap - 1)])
			h++;
		idx[h & (cap - 1)] = u + 1;
	}
	free(*index);
	*index = idx;
	*index_cap = cap;
	return 0;
}

/*
 * The get half of a get-or-insert over such an index: the number of the
 * unit whose key is key, growing the index first when it is half full.
 * -1 when there is none, with *slot the index slot where a new unit goes
 * (the caller appends it and sets (*index)[*slot] = its number + 1);
 * AMEBA_ENOMEM (< -1) when the index could not grow.
 */
static inline int64_t strategy_index_find(uint32_t **index, uint32_t *index_cap,
					  const void *units, size_t stride, size_t key_off,
					  uint32_t nr_units, const char *key, uint32_t *slot)
{
	if ((nr_units + 1) * 2 > *index_cap &&
	    strategy_index_grow(index, index_cap, units, stride, key_off, nr_units))
		return AMEBA_ENOMEM;
	for (uint64_t h = strategy_hash_str(key);; h++) {
		uint32_t i = (uint32_t)(h & (*index_cap - 1)), v = (*index)[i];

		if (!v) {
			*slot = i;
			return -1;
		}
		if (!strcmp(*(char *const *)((const char *)units + (v - 1) * stride + key_off), key))
			return v - 1;
	}
}

/*
 * Contexts and their metric vectors (plugin.h: a context points at them)
 * in one calloc'ed block, freed with free(): n contexts, each made empty
 * with its own struct ameba_context_data after the contexts.
 */
static inline struct ameba_context *strategy_ctxs_alloc(uint32_t n)
{
	struct ameba_context *v = calloc((size_t)n + 1, sizeof(*v) + sizeof(struct ameba_context_data));
	struct ameba_context_data *d = (struct ameba_context_data *)(void *)(v + n + 1);

	for (uint32_t i = 0; v && i <= n; i++)
		ameba_context_init(&v[i], &d[i]);
	return v;
}

/* The writable vectors of a context strategy_ctxs_alloc() made (its `has`
 * is the start of its data). */
static inline struct ameba_context_data *strategy_ctx_data(const struct ameba_context *c)
{
	return (struct ameba_context_data *)(uintptr_t)c->has;
}

/* Empties a context strategy_ctxs_alloc() made, keeping its vectors. */
static inline struct ameba_context_data *strategy_ctx_reset(struct ameba_context *c)
{
	struct ameba_context_data *d = strategy_ctx_data(c);

	ameba_context_init(c, d);
	return d;
}

/*
 * Fills a context (of strategy_ctxs_alloc()) with the selected metrics:
 * values[m] and the program's figure program[m], per-thread rows pt[m]
 * over the strategy's thread table, the window, and confidence 1 for exact
 * counts (0.5 otherwise). The caller sets the context's kind and object
 * afterwards.
 */
static inline void strategy_ctx_fill(struct ameba_context *c, const int *metrics,
				     uint32_t nr_metrics, const double *values,
				     const double *program, double *const *pt,
				     uint32_t nr_threads, const uint32_t *thread_ids,
				     uint64_t window_ns, int exact)
{
	struct ameba_context_data *d = strategy_ctx_reset(c);

	for (uint32_t k = 0; k < nr_metrics; k++) {
		int m = metrics[k];

		d->has[m] = 1;
		d->values[m] = values[m];
		d->program[m] = program[m];
		d->per_thread[m] = pt[m];
	}
	c->nr_threads = nr_threads;
	c->thread_ids = thread_ids;
	c->window_ns = window_ns;
	c->confidence = exact ? 1.0 : 0.5;
}

#endif /* AMEBA_STRATEGY_UTIL_H */
