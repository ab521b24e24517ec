/*
 * estimates.c - the 95% intervals of objects' counts in sampled simulation
 * (docs/simulator.md, "Sampled simulation").
 *
 * The monitor gives each sampled reading a half-width per counter. A
 * counter that measures one object - its where-set is the object's extent
 * (one range) or its site bin (one bin), all threads - adds its interval's
 * variance, (half-width / 1.96)^2, to the object's for the counter's
 * metric; the intervals of a run are independent, so the variance of the
 * object's total is the sum. Counters over spans, several objects or some
 * threads teach nothing here. The table is keyed by (object name, metric):
 * the report's object summaries carry the name. Beside it, the variance of
 * the program's counter (whole address space, all threads) of the same
 * metric in the readings that measured the object: the denominator of its
 * share, which is estimated from another counter (gemm, sampled: the
 * object within 0.01% of its exact count, the program's total 0.12% low,
 * so the share's interval of the object alone missed).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "provider.h"
#include "search.h"

struct ci_ent {
	char *name;		/* NULL: free slot */
	int metric;
	double var;
	int unknown;		/* some interval had no interval */
	double wvar;		/* the program's counter's, in the same readings */
};

struct agent_ci_tab {
	struct ci_ent *v;
	uint32_t nr, cap;	/* cap: a power of two */
};

static uint64_t key_hash(const char *name, int metric)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)metric;

	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = (h ^ *c) * 1099511628211ull;
	return h;
}

static struct ci_ent *find(struct agent_ci_tab *t, const char *name, int metric, int add)
{
	uint64_t h;

	if (add && 2 * (t->nr + 1) > t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : 256;
		struct ci_ent *v = calloc(cap, sizeof(*v)), *old = t->v;

		if (!v)
			return NULL;
		for (uint32_t i = 0; i < t->cap; i++) {
			if (!old[i].name)
				continue;
			h = key_hash(old[i].name, old[i].metric) & (cap - 1);
			while (v[h].name)
				h = (h + 1) & (cap - 1);
			v[h] = old[i];
		}
		free(old);
		t->v = v;
		t->cap = cap;
	}
	if (!t->cap)
		return NULL;
	h = key_hash(name, metric) & (t->cap - 1);
	while (t->v[h].name) {
		if (t->v[h].metric == metric && !strcmp(t->v[h].name, name))
			return &t->v[h];
		h = (h + 1) & (t->cap - 1);
	}
	if (!add || !(t->v[h].name = strdup(name)))
		return NULL;
	t->v[h].metric = metric;
	t->nr++;
	return &t->v[h];
}

/* The object counter i of exp measures whole, or NULL. */
static const char *counter_object(const struct ameba_experiment *exp, uint32_t i,
				  const struct agent_world *w)
{
	const struct ameba_counter *c = &exp->counters[i];
	const struct ameba_counter_bins *b = exp->counter_bins ? &exp->counter_bins[i] : NULL;
	const struct ameba_object *o;

	if (c->nr_threads)
		return NULL;
	if (b && b->nr)
		return b->nr == 1 ? b->names[0] : NULL;	/* its ranges: the bin's blocks */
	if (c->nr_ranges != 1)
		return NULL;
	o = agent_object_at(w->objects, w->nr_objects, c->ranges[0]);
	return o && o->start == c->ranges[0] && o->end == c->ranges[1] ? o->name : NULL;
}

/* Adds an interval (half < 0: unknown) to (name, metric); its entry, or
 * NULL without memory. */
static struct ci_ent *ci_add(struct agent_ci_tab **tp, const char *name, int metric, double half)
{
	struct ci_ent *e;

	if (!*tp && !(*tp = calloc(1, sizeof(**tp))))
		return NULL;
	if (!(e = find(*tp, name, metric, 1)))
		return NULL;
	if (half < 0)
		e->unknown = 1;
	else
		e->var += (half / 1.96) * (half / 1.96);
	return e;
}

int agent_ci_add(struct agent_ci_tab **tp, const char *name, int metric, double half)
{
	return ci_add(tp, name, metric, half) ? 0 : AMEBA_ENOMEM;
}

void agent_ci_note(struct agent_ci_tab **tp, const struct ameba_experiment *exp, const double *ci,
		   const uint64_t *values, const struct agent_world *w)
{
	int64_t prog[AMEBA_M_NR];

	if (!ci)
		return;
	/* each metric's counter over the whole program (all threads) */
	for (int m = 0; m < AMEBA_M_NR; m++)
		prog[m] = -1;
	for (uint32_t i = 0; i < exp->nr_counters; i++) {
		const struct ameba_counter *c = &exp->counters[i];

		if (c->metric >= 0 && c->metric < AMEBA_M_NR && prog[c->metric] < 0 &&
		    !c->nr_ranges && !c->nr_threads && !(exp->counter_bins && exp->counter_bins[i].nr))
			prog[c->metric] = i;
	}
	for (uint32_t i = 0; i < exp->nr_counters; i++) {
		const char *name = counter_object(exp, i, w);
		int metric = exp->counters[i].metric;
		struct ci_ent *e;

		/* an interval without a burst estimates 0 and adds nothing */
		if (!name || !(ci[i] > 0 || (ci[i] < 0 && values && values[i])))
			continue;
		e = ci_add(tp, name, metric, ci[i]);
		if (e && metric >= 0 && metric < AMEBA_M_NR && prog[metric] >= 0 && ci[prog[metric]] > 0)
			e->wvar += (ci[prog[metric]] / 1.96) * (ci[prog[metric]] / 1.96);
	}
}

double agent_ci_half(const struct agent_ci_tab *t, const char *name, int metric)
{
	const struct ci_ent *e = t && name ? find((struct agent_ci_tab *)t, name, metric, 0) : NULL;

	return e && !e->unknown ? 1.96 * sqrt(e->var) : -1;
}

double agent_ci_share_half(const struct agent_ci_tab *t, const char *name, int metric,
			   double value, double prog)
{
	const struct ci_ent *e = t && name ? find((struct agent_ci_tab *)t, name, metric, 0) : NULL;
	double sh = prog > 0 ? value / prog : 0;

	if (!e || e->unknown || !(prog > 0))
		return -1;
	return 1.96 * sqrt(e->var + sh * sh * e->wvar) / prog;
}

void agent_ci_free(struct agent_ci_tab *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->cap; i++)
		free(t->v[i].name);
	free(t->v);
	free(t);
}
