/*
 * eval.c - properties on contexts: the refines hierarchy and the ranking.
 *
 * Notes:
 *  - The hierarchy is walked from its roots (properties that refine
 *    nothing, or whose parent is not loaded). A property is evaluated on a
 *    context only where its parent holds, as AMEBA refines towards more
 *    specific properties; when a child holds, the child's finding replaces
 *    the parent's (the parent's name goes to refined_from).
 *  - A property that fails is disabled by agent_property_eval(); the ones it
 *    refines to are then evaluated as roots from the next context on.
 *  - A refinement with `evaluate_where = METRIC` is evaluated also where its
 *    parent does not hold, on every context where METRIC is non-zero (the
 *    coherence properties on every object with coherence misses: a few
 *    thousand false-sharing misses are a finding on an object below
 *    HotObject's threshold); its finding then has no refined_from.
 */
#include <stdlib.h>
#include <string.h>

#include "search.h"

static void finding_free(struct agent_finding *f)
{
	for (uint32_t i = 0; i < f->nr_absorbed; i++)
		finding_free(&f->absorbed[i]);
	free(f->absorbed);
	free(f->overlaps);
	free(f->property);
	free(f->refined_from);
	free(f->object.name);
	free(f->object.site);
	free(f->region);
	free(f->threads);
	free(f->evidence);
	free(f->advice);
}

void agent_findings_free(struct agent_findings *f)
{
	for (uint32_t i = 0; i < f->nr; i++)
		finding_free(&f->v[i]);
	free(f->v);
	memset(f, 0, sizeof(*f));
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int finding_add(struct agent_findings *out, const struct agent_property *p,
		       const char *refined_from, const struct ameba_context *ctx,
		       const struct agent_verdict *v)
{
	struct agent_finding *f;

	if (out->nr == out->cap) {
		uint32_t cap = out->cap ? 2 * out->cap : 16;
		struct agent_finding *nv = realloc(out->v, cap * sizeof(*nv));

		if (!nv)
			return AMEBA_ENOMEM;
		out->v = nv;
		out->cap = cap;
	}
	f = &out->v[out->nr];
	memset(f, 0, sizeof(*f));
	f->property = strdup(p->name);
	f->refined_from = dup_or_null(refined_from);
	f->severity = v->v.severity;
	f->severity_own = v->v.severity;
	f->stall_budget = -1;
	if (ctx->has[AMEBA_M_EST_STALL_CYCLES] && ctx->program[AMEBA_M_EST_CYCLES] > 0)
		f->stall_budget = ameba_severity_of(ctx->values[AMEBA_M_EST_STALL_CYCLES],
						    ctx->program[AMEBA_M_EST_CYCLES]);
	f->confidence = v->v.confidence;
	f->ctx_kind = ctx->kind;
	if (ctx->object) {
		f->has_object = 1;
		f->object.name = strdup(ctx->object->name ? ctx->object->name : "?");
		f->object.kind = ctx->object->kind;
		f->object.site = dup_or_null(ctx->object->site);
		f->object.sz_bytes = ctx->object->sz_bytes;
		f->object.addr = ctx->object->start;
		f->object.nr_blocks = ctx->object->nr_blocks;
	}
	f->region = dup_or_null(ctx->region);
	f->line = ctx->line;
	f->nr_threads = v->nr_threads;
	if (v->nr_threads) {
		f->threads = malloc(v->nr_threads * sizeof(*f->threads));
		if (f->threads)
			memcpy(f->threads, v->threads, v->nr_threads * sizeof(*f->threads));
	}
	f->evidence = strdup(v->v.evidence);
	f->advice = strdup(v->v.advice);
	if (!f->property || !f->evidence || !f->advice || (v->nr_threads && !f->threads) ||
	    (ctx->object && !f->object.name)) {
		finding_free(f);
		return AMEBA_ENOMEM;
	}
	out->nr++;
	return 0;
}

/*
 * Evaluates p and, where it holds, its refinements on ctx. Returns 1 when a
 * finding was added for p or below, 0 when none, or AMEBA_ENOMEM.
 */
static int eval_tree(struct agent_plugins *pl, struct agent_property *p, const char *held_parent,
		     const struct ameba_context *ctx, int primary, struct agent_findings *out)
{
	struct agent_verdict v;
	int found = 0, holds, rc;

	rc = agent_property_eval(pl, p, ctx, primary, &v);
	holds = rc == 0 && v.v.holds;
	for (uint32_t i = 0; i < pl->nr_props; i++) {
		struct agent_property *c = &pl->props[i];

		if (c->parent != p || c->disabled || !c->selected)
			continue;
		if (holds)
			rc = eval_tree(pl, c, p->name, ctx, primary, out);
		else if (c->has_where && ctx->has[c->where_metric] &&
			 ctx->values[c->where_metric] > 0)
			rc = eval_tree(pl, c, NULL, ctx, primary, out);	/* evaluate_where */
		else
			continue;
		if (rc < 0)
			return rc;
		found |= rc;
	}
	if (!holds || found)
		return found;
	rc = finding_add(out, p, held_parent, ctx, &v);
	return rc ? rc : 1;
}

/* A root: no parent, or a parent that cannot speak (not selected, disabled). */
static int is_root(const struct agent_property *p)
{
	return !p->parent || !p->parent->selected || p->parent->disabled;
}

int agent_evaluate(struct agent_plugins *pl, const struct ameba_context *ctxs, uint32_t nr,
		   int primary_metric, struct agent_findings *out)
{
	for (uint32_t c = 0; c < nr; c++) {
		for (uint32_t i = 0; i < pl->nr_props; i++) {
			struct agent_property *p = &pl->props[i];
			int rc;

			if (!p->selected || p->disabled || !is_root(p))
				continue;
			rc = eval_tree(pl, p, NULL, &ctxs[c], primary_metric, out);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

static int cmp_finding(const void *a, const void *b)
{
	const struct agent_finding *x = a, *y = b;
	int r;

	if (x->severity != y->severity)
		return x->severity < y->severity ? 1 : -1;
	if (x->confidence != y->confidence)
		return x->confidence < y->confidence ? 1 : -1;
	r = strcmp(x->property, y->property);
	if (r)
		return r;
	r = strcmp(x->object.name ? x->object.name : "", y->object.name ? y->object.name : "");
	if (r)
		return r;
	return (x->object.addr > y->object.addr) - (x->object.addr < y->object.addr);
}

void agent_findings_sort(struct agent_findings *f)
{
	if (f->nr)
		qsort(f->v, f->nr, sizeof(*f->v), cmp_finding);
}

/* ---- one finding per root cause ---- */

static int str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* The same context: the same object (name and address), line or region. */
static int same_context(const struct agent_finding *a, const struct agent_finding *b)
{
	if (a->ctx_kind != b->ctx_kind || a->has_object != b->has_object || a->line != b->line ||
	    !str_eq(a->region, b->region))
		return 0;
	return !a->has_object ||
	       (str_eq(a->object.name, b->object.name) && a->object.addr == b->object.addr);
}

/* a is b or one of the properties b refines */
static int is_ancestor(const struct agent_property *a, const struct agent_property *b)
{
	for (unsigned hops = 0; b && hops < 64; b = b->parent, hops++)
		if (a == b)
			return 1;
	return 0;
}

/*
 * cause explains the property `name`, or a property `name` refines below
 * the cause's own ancestors: FalseSharing explains ThreadMissRate, hence
 * ThreadWriteMissRate, but never, through their common root HotObject,
 * TLBThrashing.
 */
static int explains(const struct agent_plugins *pl, const struct agent_property *cause,
		    const char *name)
{
	const struct agent_property *q = agent_plugins_property((struct agent_plugins *)pl, name);
	unsigned hops = 0;

	for (; q && hops < 64 && !is_ancestor(q, cause); q = q->parent, hops++)
		for (uint32_t i = 0; i < cause->nr_explains; i++)
			if (!strcmp(cause->explains[i], q->name))
				return 1;
	return 0;
}

/* A thread in common, or no thread named by one of them. */
static int threads_meet(const struct agent_finding *a, const struct agent_finding *b)
{
	if (!a->nr_threads || !b->nr_threads)
		return 1;
	for (uint32_t i = 0; i < a->nr_threads; i++)
		for (uint32_t j = 0; j < b->nr_threads; j++)
			if (a->threads[i] == b->threads[j])
				return 1;
	return 0;
}

static int absorb(struct agent_finding *root, struct agent_finding *s)
{
	struct agent_finding *v = realloc(root->absorbed, (root->nr_absorbed + 1) * sizeof(*v));

	if (!v)
		return AMEBA_ENOMEM;
	root->absorbed = v;
	v[root->nr_absorbed++] = *s;
	memset(s, 0, sizeof(*s));
	return 0;
}

static int note_overlap(struct agent_finding *f, const char *by, double keep)
{
	if (!f->overlaps) {
		f->overlaps = strdup(by);
		if (!f->overlaps)
			return AMEBA_ENOMEM;
	}
	f->severity = keep > 0 ? keep : 0;
	return 0;
}

int agent_findings_rank(const struct agent_plugins *pl, struct agent_findings *f)
{
	uint8_t *gone;
	uint32_t n = 0;
	int rc = 0;

	agent_findings_sort(f);
	if (!f->nr)
		return 0;
	gone = calloc(f->nr, 1);
	if (!gone)
		return AMEBA_ENOMEM;
	/*
	 * Causes absorb their symptoms, highest rank first. A symptom whose
	 * severity exceeds the cause's is more than the cause explains: it
	 * stays with the difference only (the cause's cycles are counted once).
	 */
	for (uint32_t i = 0; i < f->nr && !rc; i++) {
		const struct agent_property *cause;

		if (gone[i])
			continue;
		cause = agent_plugins_property((struct agent_plugins *)pl, f->v[i].property);
		if (!cause || !cause->nr_explains)
			continue;
		for (uint32_t j = 0; j < f->nr && !rc; j++) {
			struct agent_finding *s = &f->v[j];

			if (j == i || gone[j] || !same_context(&f->v[i], s) ||
			    !explains(pl, cause, s->property) || !threads_meet(&f->v[i], s))
				continue;
			if (s->severity <= f->v[i].severity) {
				rc = absorb(&f->v[i], s);
				gone[j] = 1;
			} else {
				rc = note_overlap(s, f->v[i].property, s->severity - f->v[i].severity);
			}
		}
	}
	/*
	 * No context's findings may add up to more than its stall cycles (the
	 * most that removing every problem on it could save), in rank order.
	 */
	for (uint32_t i = 0; i < f->nr; i++)
		if (!gone[i])
			f->v[n++] = f->v[i];
	f->nr = n;
	free(gone);
	agent_findings_sort(f);
	for (uint32_t i = 0; i < f->nr && !rc; i++) {
		double used = 0;

		if (f->v[i].stall_budget < 0)
			continue;
		for (uint32_t j = 0; j < i; j++)
			if (same_context(&f->v[i], &f->v[j]))
				used += f->v[j].severity;
		if (used + f->v[i].severity > f->v[i].stall_budget) {
			uint32_t k = 0;

			while (k < i && !same_context(&f->v[i], &f->v[k]))
				k++;
			if (k < i)
				rc = note_overlap(&f->v[i], f->v[k].property,
						  f->v[i].stall_budget - used);
			else	/* alone over the budget: its estimate exceeds the stalls */
				f->v[i].severity = f->v[i].stall_budget;
		}
	}
	agent_findings_sort(f);
	return rc;
}
