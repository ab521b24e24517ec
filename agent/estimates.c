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
		const char *name = agent_counter_object(exp, i, w);
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

/*
 * The relative error a sampled estimate of metric keeps however many
 * bursts it has: what the caches' state at a burst's start leaves after
 * the warm-up (docs/simulator.md, "Warm-up and the LLC": the root mean
 * square of the program totals' bias at the default 2 ms warm-up, five
 * programs: L1D 2.3%), and what the ordered mode's bursts lose of two
 * threads' contention (fs_loop's coherence misses per access 2-5% short of
 * the exact run's). The L2's is 10% on program totals but up to 6.5 times
 * on an object (gemm_blocked's B at SCALE 10: 59.9M L2 misses against
 * 9.2M; a slow simulation warms 10,000 accesses in 2 ms), and the LLC,
 * memory, TLB and first-reference counts, and the cycle estimates they
 * weigh, are off by up to tens of times where a program's data fits the
 * LLC: 100%. Accesses are counted, not simulated: none. Taken as a
 * standard deviation, independent of the bursts' own variance and from
 * object to object.
 */
static double bias_rel(int metric)
{
	switch (metric) {
	case AMEBA_M_MEM_REF:
	case AMEBA_M_READS:
	case AMEBA_M_WRITES:
	case AMEBA_M_SAMPLES:
		return 0;
	case AMEBA_M_L1D_MISS:
	case AMEBA_M_L1D_MISS_RD:
	case AMEBA_M_L1D_MISS_WR:
	case AMEBA_M_CONFLICT_MISS:
	case AMEBA_M_CAPACITY_MISS:
		return 0.023;
	case AMEBA_M_COH_MISS:
	case AMEBA_M_COH_MISS_TRUE:
	case AMEBA_M_COH_MISS_FALSE:
	case AMEBA_M_INVAL_SENT:
	case AMEBA_M_INVAL_RECV:
	case AMEBA_M_INTERVENTION:
		return 0.05;
	default:
		return 1.0;
	}
}

double agent_ci_half(const struct agent_ci_tab *t, const char *name, int metric, double value)
{
	const struct ci_ent *e = t && name ? find((struct agent_ci_tab *)t, name, metric, 0) : NULL;
	double b = bias_rel(metric) * value;

	return e && !e->unknown ? 1.96 * sqrt(e->var + b * b) : -1;
}

double agent_ci_share_half(const struct agent_ci_tab *t, const char *name, int metric,
			   double value, double prog)
{
	const struct ci_ent *e = t && name ? find((struct agent_ci_tab *)t, name, metric, 0) : NULL;
	double sh = prog > 0 ? value / prog : 0, b;

	if (!e || e->unknown || !(prog > 0))
		return -1;
	/* each object's count off by its own relative error of standard
	 * deviation beta: its share by at most beta sqrt(2) s (1 - s) (the
	 * others' errors weigh s_j each in the denominator) */
	sh = sh > 1 ? 1 : sh;
	b = bias_rel(metric) * 1.4142135623730951 * sh * (1 - sh);
	return 1.96 * sqrt(e->var / (prog * prog) + sh * sh * e->wvar / (prog * prog) + b * b);
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
