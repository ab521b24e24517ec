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
 */
#include <stdlib.h>
#include <string.h>

#include "search.h"

static void finding_free(struct agent_finding *f)
{
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
	int found = 0, rc;

	rc = agent_property_eval(pl, p, ctx, primary, &v);
	if (rc != 0 || !v.v.holds)
		return 0;
	for (uint32_t i = 0; i < pl->nr_props; i++) {
		struct agent_property *c = &pl->props[i];

		if (c->parent != p || c->disabled || !c->selected)
			continue;
		rc = eval_tree(pl, c, p->name, ctx, primary, out);
		if (rc < 0)
			return rc;
		found |= rc;
	}
	if (found)
		return 1;
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
