/*
 * asl.c - the ASL front-end: the Lua code generator and the entry point
 * (asl_parse.c has the lexer and the parser), for properties written as in
 * seed 004 §4:
 *
 *   property NAME(ParPerf pp, float t) [refines OTHER] {
 *     let  defs...  in
 *       condition: EXPR;  confidence: EXPR;  severity: EXPR;
 *       [advice: "text {EXPR} text";]  [evidence: "...";]
 *   }
 *
 * docs/asl.md is the reference (grammar, field mapping, messages).
 *
 * Notes:
 *  - The whole file is tokenised first; the parser builds a tree per
 *    property; the generator type-checks while it writes Lua. Any error
 *    stops the compilation of the file with "path:LINE:COL: message" (a
 *    longjmp back to asl_compile, which frees every node).
 *  - Types are number, boolean and context. `condition` must be a boolean,
 *    `confidence` and `severity` numbers; arithmetic takes numbers and
 *    `and`/`or`/`not` booleans, so a mistake such as `x > t + (a < b)` is a
 *    load-time error, not a run-time one.
 *  - Name lookup, innermost first: the parameters of the function being
 *    defined, the definitions above (a definition sees only earlier ones:
 *    no recursion), then the property's parameters. In call position a
 *    name is a function defined under `let`, else a built-in (sum, max,
 *    min, mean, abs, sqrt). So seed 004's `max = max(...)` defines a value
 *    `max` and `max(max - mean, ...)` still calls the built-in.
 *  - `f(a),...,f(b)` (an ellipsis between two terms inside sum/max/min/
 *    mean) is a range: the two terms must be the same expression except at
 *    the index (every place where they differ must hold the same pair a, b).
 *    Ranges are over thread indices: a..b inclusive, clipped to the
 *    context's threads 0..nrThreads-1. Seed 004 writes
 *    `miss_rate(0),...,miss_rate(pp.nrThreads)`, whose last term would be
 *    one past the last thread; clipped, it covers exactly the threads and
 *    `sum(...)/pp.nrThreads` is their mean.
 *  - Thread indices are 0-based in ASL, Lua arrays 1-based: pp.f[i] reads
 *    ctx.t.f[i + 1], with a run-time check (an index outside the threads
 *    raises "pp.f[7]: no such thread index ...").
 *  - a / 0 is 0 (a thread that made no references has a miss rate of 0),
 *    so a property never produces NaN or infinity from a ratio.
 *  - The generated chunk keeps the ASL line numbers: helper code sits on
 *    line 1, and newlines are written before each definition and clause to
 *    bring it to its source line (each is one line of Lua). A run-time
 *    error thus names the .asl file and the line of the definition or
 *    clause.
 *  - `let` definitions are evaluated once per context, when any clause
 *    first needs them (the table of clause closures is cached for the
 *    context table the agent passes to condition/severity/...).
 *  - Parameters without a default get one from a `// default: t=0.02`
 *    comment above the property (for texts quoted unmodified), else
 *    0 (int) or 0.05 (float). `--property NAME:t=0.1` overrides either.
 */#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asl_int.h"

/* ---- code generation ---- */

enum ty { TY_NUM, TY_BOOL, TY_CTX };

static const char *const ty_names[] = { "a number", "true or false", "a context" };

struct subst {
	const struct node *n;
	int var;
};

struct env {
	struct property *pr;
	uint32_t nr_defs;		/* the definitions visible */
	const struct def *fn;		/* the function being defined, or NULL */
	struct subst subst[ASL_MAX_DIFF * 4];
	uint32_t nr_subst;
};

static void emit(struct asl *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void emit(struct asl *a, const char *fmt, ...)
{
	struct buf *b = &a->out;
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			fail_rc(a, AMEBA_ENOMEM, 0, 0, "out of memory");
		if (b->s && b->len + (size_t)n < b->cap)
			break;
		{
			size_t cap = (b->cap ? 2 * b->cap : 4096) + (size_t)n;
			char *s = realloc(b->s, cap);

			if (!s)
				fail_rc(a, AMEBA_ENOMEM, 0, 0, "out of memory");
			b->s = s;
			b->cap = cap;
		}
	}
	for (int i = 0; i < n; i++)
		b->line += b->s[b->len + (size_t)i] == '\n';
	b->len += (size_t)n;
}

/* Newlines up to the source line (the generated text stays at or after it). */
static void sync_line(struct asl *a, int line)
{
	while (a->out.line < line)
		emit(a, "\n");
}

/* A Lua string literal. */
static void emit_str(struct asl *a, const char *s)
{
	emit(a, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			emit(a, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			emit(a, "\\%03u", c);
		else
			emit(a, "%c", c);
	}
	emit(a, "\"");
}

static void emit_num(struct asl *a, double v, int is_int)
{
	char buf[64];

	if (is_int) {
		emit(a, "%.0f", v);
		return;
	}
	snprintf(buf, sizeof(buf), "%.17g", v);
	if (!strpbrk(buf, ".eEni"))
		strcat(buf, ".0");
	emit(a, "%s", buf);
}

static const struct param *find_param(const struct property *pr, const char *name)
{
	for (uint32_t i = 0; i < pr->nr_params; i++)
		if (!strcmp(pr->params[i].name, name))
			return &pr->params[i];
	return NULL;
}

static const struct def *find_def(const struct env *e, const char *name, uint32_t limit)
{
	for (uint32_t i = 0; i < limit; i++)
		if (!strcmp(e->pr->defs[i].name, name))
			return &e->pr->defs[i];
	return NULL;
}

static void need_metric(struct property *pr, int m)
{
	for (uint32_t i = 0; i < pr->nr_needs; i++)
		if (pr->needs[i] == m)
			return;
	if (pr->nr_needs < AMEBA_M_NR)
		pr->needs[pr->nr_needs++] = m;
}

/* ASL field names of seed 004 for the agent's metrics. */
static const struct {
	const char *asl, *metric;
} field_aliases[] = {
	{ "lc1_miss", "l1d_miss" },	  { "lc1_miss_rd", "l1d_miss_rd" },
	{ "lc1_miss_wr", "l1d_miss_wr" }, { "lc2_miss", "l2_miss" },
	{ "lc2_miss_rd", "l2_miss_rd" },  { "lc2_miss_wr", "l2_miss_wr" },
	{ "lc3_miss", "llc_miss" },	  { "lc3_miss_rd", "llc_miss_rd" },
	{ "lc3_miss_wr", "llc_miss_wr" },
};

static int field_metric(const char *field)
{
	for (size_t i = 0; i < sizeof(field_aliases) / sizeof(field_aliases[0]); i++)
		if (!strcmp(field_aliases[i].asl, field))
			return ameba_metric_by_name(field_aliases[i].metric);
	return ameba_metric_by_name(field);
}

static int gen(struct asl *a, struct env *e, const struct node *n);

/* Where an expression starts (binary nodes sit at their operator). */
static const struct node *leftmost(const struct node *n)
{
	while ((n->kind == N_BIN || n->kind == N_FIELD || n->kind == N_INDEX) && n->a)
		n = n->a;
	return n;
}

static void want(struct asl *a, const struct node *n, int got, int ty, const char *what)
{
	if (got != ty)
		fail(a, leftmost(n)->line, leftmost(n)->col, "%s must be %s, this is %s", what,
		     ty_names[ty], ty_names[got]);
}

static int gen_num(struct asl *a, struct env *e, const struct node *n, const char *what)
{
	want(a, n, gen(a, e, n), TY_NUM, what);
	return TY_NUM;
}

/* The context parameter a field access starts from, or a failure. */
static const struct param *ctx_of(struct asl *a, struct env *e, const struct node *base,
				  const char *field)
{
	const struct param *p = NULL;

	if (base->kind == N_NAME) {
		int shadowed = find_def(e, base->name, e->nr_defs) != NULL;

		for (uint32_t i = 0; e->fn && i < e->fn->nr_fparams; i++)
			shadowed |= !strcmp(e->fn->fparams[i].name, base->name);
		p = shadowed ? NULL : find_param(e->pr, base->name);
		if (p && (ASL_IS_CTX(p->type)))
			return p;
	}
	fail(a, base->line, base->col, "only a context parameter (ParPerf, SeqPerf, ConcPerf) has fields; "
	     "'.%s' follows %s", field, base->kind == N_NAME ? "a number" : "an expression");
}

static void unknown_field(struct asl *a, const struct node *n, const struct param *ctx)
{
	fail(a, n->line, n->col, "%s %s has no field '%s'; fields are nrThreads, parT, program, "
	     "confidence, samples, window_s, lc1_miss, lc2_miss, lc3_miss (and _rd/_wr) and every "
	     "metric name of `ameba list metrics`",
	     ctx->type == P_PARPERF ? "ParPerf" : ctx->type == P_CONCPERF ? "ConcPerf" : "SeqPerf",
	     ctx->name, n->name);
}

/* pp.f (not indexed): a total or a scalar field. */
static int gen_field(struct asl *a, struct env *e, const struct node *n)
{
	const struct param *ctx;
	int m;

	if (n->a->kind == N_FIELD && !strcmp(n->a->name, "program")) {
		ctx = ctx_of(a, e, n->a->a, "program");
		m = field_metric(n->name);
		if (m < 0)
			fail(a, n->line, n->col, "%s.program.%s: '%s' is not a metric; `ameba list "
			     "metrics` prints the names", ctx->name, n->name, n->name);
		need_metric(e->pr, m);
		emit(a, "ctx.program[\"%s\"]", ameba_metric_info(m)->name);
		return TY_NUM;
	}
	ctx = ctx_of(a, e, n->a, n->name);
	if (!strcmp(n->name, "nrThreads") || !strcmp(n->name, "nr_threads")) {
		emit(a, "ctx.nr_threads");
	} else if (!strcmp(n->name, "parT")) {
		need_metric(e->pr, AMEBA_M_EST_CYCLES);
		emit(a, "_share(ctx, \"est_cycles\")");
	} else if (!strcmp(n->name, "confidence") || !strcmp(n->name, "samples") ||
		   !strcmp(n->name, "window_s")) {
		emit(a, "ctx.%s", n->name);
	} else if (!strcmp(n->name, "program")) {
		fail(a, n->line, n->col, "%s.program is the program's totals: name a metric, e.g. "
		     "%s.program.l1d_miss", ctx->name, ctx->name);
	} else if ((m = field_metric(n->name)) >= 0) {
		need_metric(e->pr, m);
		emit(a, "ctx.v[\"%s\"]", ameba_metric_info(m)->name);
	} else {
		unknown_field(a, n, ctx);
	}
	return TY_NUM;
}

/* pp.f[i]: a per-thread value. */
static int gen_index(struct asl *a, struct env *e, const struct node *n)
{
	const struct node *f = n->a;
	const struct param *ctx;
	int m;

	if (f->kind != N_FIELD || (f->a->kind == N_FIELD && !strcmp(f->a->name, "program")))
		fail(a, n->line, n->col, "only the per-thread fields of a ParPerf context can be "
		     "indexed, e.g. pp.mem_ref[tid]");
	ctx = ctx_of(a, e, f->a, f->name);
	if (ctx->type == P_SEQPERF)
		fail(a, n->line, n->col, "%s.%s[...]: a SeqPerf context has no per-thread values; "
		     "declare the parameter as ParPerf", ctx->name, f->name);
	if (!strcmp(f->name, "parT")) {
		need_metric(e->pr, AMEBA_M_EST_CYCLES);
		emit(a, "_part(ctx, ");
		gen_num(a, e, n->b, "a thread index");
		emit(a, ", \"%s.parT\")", ctx->name);
		return TY_NUM;
	}
	m = field_metric(f->name);
	if (m < 0) {
		if (!strcmp(f->name, "nrThreads") || !strcmp(f->name, "nr_threads") ||
		    !strcmp(f->name, "confidence") || !strcmp(f->name, "samples") ||
		    !strcmp(f->name, "window_s") || !strcmp(f->name, "program"))
			fail(a, n->line, n->col, "%s.%s is a single value and cannot be indexed",
			     ctx->name, f->name);
		unknown_field(a, f, ctx);
	}
	need_metric(e->pr, m);
	emit(a, "_th(ctx, \"%s\", ", ameba_metric_info(m)->name);
	gen_num(a, e, n->b, "a thread index");
	emit(a, ", \"%s.%s\")", ctx->name, f->name);
	return TY_NUM;
}

/* Do x and y differ in their own kind, operator, number or name? */
static int shallow_differ(const struct node *x, const struct node *y)
{
	return x->kind != y->kind || x->nr_args != y->nr_args ||
	       ((x->op || y->op) && (!x->op || !y->op || strcmp(x->op, y->op))) ||
	       (x->kind == N_NUM && x->num != y->num) ||
	       ((x->name || y->name) && (!x->name || !y->name || strcmp(x->name, y->name)));
}

static int same_tree(const struct node *x, const struct node *y)
{
	if (!x || !y)
		return x == y;
	if (shallow_differ(x, y))
		return 0;
	if (!same_tree(x->a, y->a) || !same_tree(x->b, y->b))
		return 0;
	for (uint32_t i = 0; i < x->nr_args; i++)
		if (!same_tree(x->args[i], y->args[i]))
			return 0;
	return 1;
}

/* Collects the places where x and y differ (at most ASL_MAX_DIFF). */
static int tree_diff(const struct node *x, const struct node *y, const struct node **dx,
		     const struct node **dy, uint32_t *nr)
{
	if (!x || !y)
		return x == y;
	if (shallow_differ(x, y)) {
		if (*nr == ASL_MAX_DIFF)
			return 0;
		dx[*nr] = x;
		dy[(*nr)++] = y;
		return 1;
	}
	if (!tree_diff(x->a, y->a, dx, dy, nr) || !tree_diff(x->b, y->b, dx, dy, nr))
		return 0;
	for (uint32_t i = 0; i < x->nr_args; i++)
		if (!tree_diff(x->args[i], y->args[i], dx, dy, nr))
			return 0;
	return 1;
}

/* A range term: first ... last. */
static void gen_range(struct asl *a, struct env *e, const struct node *call,
		      const struct node *first, const struct node *dots, const struct node *last)
{
	const struct node *dx[ASL_MAX_DIFF], *dy[ASL_MAX_DIFF];
	uint32_t nr = 0, saved = e->nr_subst;
	int var;

	if (!tree_diff(first, last, dx, dy, &nr) || nr == 0)
		fail(a, dots->line, dots->col, "%s(...): the terms around '...' must be the same "
		     "expression but for the index, e.g. f(0),...,f(pp.nrThreads)%s", call->name,
		     nr ? "" : "; these two are identical");
	for (uint32_t i = 1; i < nr; i++)
		if (!same_tree(dx[i], dx[0]) || !same_tree(dy[i], dy[0]))
			fail(a, leftmost(dy[i])->line, leftmost(dy[i])->col, "%s(...): the terms "
			     "around '...' differ in more than the index; only the index may change "
			     "from the first term to the last, e.g. f(0),...,f(pp.nrThreads)",
			     call->name);
	var = ++a->nr_loop_vars;
	emit(a, "{");
	gen_num(a, e, dx[0], "the first index of a range");
	emit(a, ", ");
	gen_num(a, e, dy[0], "the last index of a range");
	emit(a, ", function(_i%d) return ", var);
	for (uint32_t i = 0; i < nr && e->nr_subst < sizeof(e->subst) / sizeof(e->subst[0]); i++)
		e->subst[e->nr_subst++] = (struct subst){ dx[i], var };
	gen_num(a, e, first, "a term of a range");
	e->nr_subst = saved;
	emit(a, " end}");
}

static const char *const builtins[] = { "sum", "max", "min", "mean", "abs", "sqrt",
					"severity_of" };

static int gen_call(struct asl *a, struct env *e, const struct node *n)
{
	const struct def *d = find_def(e, n->name, e->nr_defs);
	int is_agg = 0, known = 0;

	if (d && d->is_fn) {
		if (n->nr_args != d->nr_fparams)
			fail(a, n->line, n->col, "%s() takes %u argument%s (defined at line %d), "
			     "given %u", n->name, d->nr_fparams, d->nr_fparams == 1 ? "" : "s",
			     d->line, n->nr_args);
		emit(a, "f_%s(", n->name);
		for (uint32_t i = 0; i < n->nr_args; i++) {
			if (n->args[i]->kind == N_ELLIPSIS)
				fail(a, n->args[i]->line, n->args[i]->col, "'...' makes a range only "
				     "inside sum, max, min or mean");
			if (i)
				emit(a, ", ");
			gen_num(a, e, n->args[i], "an argument");
		}
		emit(a, ")");
		return TY_NUM;
	}
	if (e->fn && !strcmp(e->fn->name, n->name))
		fail(a, n->line, n->col, "%s() calls itself; a definition may use only the ones "
		     "above it", n->name);
	for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
		if (!strcmp(builtins[i], n->name)) {
			known = 1;
			is_agg = i < 4;
		}
	if (!known) {
		if (d)
			fail(a, n->line, n->col, "%s is a value (line %d), not a function", n->name,
			     d->line);
		if (find_def(e, n->name, e->pr->nr_defs))
			fail(a, n->line, n->col, "%s() is used before its definition; a definition "
			     "may use only the ones above it", n->name);
		fail(a, n->line, n->col, "unknown function %s(); the functions are sum, max, min, "
		     "mean, abs, sqrt, severity_of and those defined under let", n->name);
	}
	if (!is_agg) {
		if (n->nr_args != 1 || n->args[0]->kind == N_ELLIPSIS)
			fail(a, n->line, n->col, "%s() takes one argument", n->name);
		if (!strcmp(n->name, "severity_of")) {
			/* the cost model (ameba_severity_of): cycles saved / the
			 * program's est_cycles */
			need_metric(e->pr, AMEBA_M_EST_CYCLES);
			emit(a, "asl.severity(ctx, ");
			gen_num(a, e, n->args[0], "the argument");
			emit(a, ", 0)");
			return TY_NUM;
		}
		emit(a, "math.%s(", n->name);
		gen_num(a, e, n->args[0], "the argument");
		emit(a, ")");
		return TY_NUM;
	}
	if (!n->nr_args)
		fail(a, n->line, n->col, "%s() needs at least one argument", n->name);
	emit(a, "_agg(\"%s\", ctx, {", n->name);
	for (uint32_t i = 0; i < n->nr_args; i++) {
		const struct node *x = n->args[i];

		if (i)
			emit(a, ", ");
		if (x->kind == N_ELLIPSIS)
			fail(a, x->line, x->col, "'...' must stand between two terms: %s(f(0),...,f(n))",
			     n->name);
		if (i + 2 < n->nr_args && n->args[i + 1]->kind == N_ELLIPSIS) {
			if (n->args[i + 2]->kind == N_ELLIPSIS)
				fail(a, n->args[i + 2]->line, n->args[i + 2]->col, "two '...' in a row");
			gen_range(a, e, n, x, n->args[i + 1], n->args[i + 2]);
			i += 2;
			continue;
		}
		if (i + 1 < n->nr_args && n->args[i + 1]->kind == N_ELLIPSIS)
			fail(a, n->args[i + 1]->line, n->args[i + 1]->col, "'...' must be followed by "
			     "the last term of the range: %s(f(0),...,f(n))", n->name);
		gen_num(a, e, x, "an argument");
	}
	emit(a, "})");
	return TY_NUM;
}

static int gen_name(struct asl *a, struct env *e, const struct node *n)
{
	const struct def *d;
	const struct param *p;

	for (uint32_t i = 0; e->fn && i < e->fn->nr_fparams; i++)
		if (!strcmp(e->fn->fparams[i].name, n->name)) {
			emit(a, "a_%s", n->name);
			return TY_NUM;
		}
	d = find_def(e, n->name, e->nr_defs);
	if (d) {
		if (d->is_fn)
			fail(a, n->line, n->col, "%s is a function (line %d): call it, %s(...)",
			     n->name, d->line, n->name);
		emit(a, "v_%s", n->name);
		return TY_NUM;
	}
	p = find_param(e->pr, n->name);
	if (p) {
		if (ASL_IS_CTX(p->type))
			fail(a, n->line, n->col, "%s is a context: use one of its fields, e.g. "
			     "%s.mem_ref[tid] or %s.nrThreads", n->name, n->name, n->name);
		emit(a, "p[\"%s\"]", n->name);
		return TY_NUM;
	}
	if (find_def(e, n->name, e->pr->nr_defs))
		fail(a, n->line, n->col, "%s is used before its definition; a definition may use "
		     "only the ones above it", n->name);
	fail(a, n->line, n->col, "unknown name '%s'", n->name);
}

static int gen(struct asl *a, struct env *e, const struct node *n)
{
	int l, r;

	for (uint32_t i = 0; i < e->nr_subst; i++)
		if (e->subst[i].n == n) {
			emit(a, "_i%d", e->subst[i].var);
			return TY_NUM;
		}
	switch (n->kind) {
	case N_NUM:
		emit_num(a, n->num, n->is_int);
		return TY_NUM;
	case N_NAME:
		return gen_name(a, e, n);
	case N_FIELD:
		return gen_field(a, e, n);
	case N_INDEX:
		return gen_index(a, e, n);
	case N_CALL:
		return gen_call(a, e, n);
	case N_NEG:
		emit(a, "(-");
		gen_num(a, e, n->a, "the operand of unary '-'");
		emit(a, ")");
		return TY_NUM;
	case N_NOT:
		emit(a, "(not ");
		want(a, n->a, gen(a, e, n->a), TY_BOOL, "the operand of 'not'");
		emit(a, ")");
		return TY_BOOL;
	case N_ELLIPSIS:
		fail(a, n->line, n->col, "'...' makes a range only inside sum, max, min or mean");
	case N_BIN:
		break;
	default:
		fail(a, n->line, n->col, "internal error: node kind %d", n->kind);
	}
	if (!strcmp(n->op, "and") || !strcmp(n->op, "or")) {
		emit(a, "(");
		want(a, n->a, gen(a, e, n->a), TY_BOOL, n->op[0] == 'a' ? "an operand of 'and'" :
		     "an operand of 'or'");
		emit(a, " %s ", n->op);
		want(a, n->b, gen(a, e, n->b), TY_BOOL, n->op[0] == 'a' ? "an operand of 'and'" :
		     "an operand of 'or'");
		emit(a, ")");
		return TY_BOOL;
	}
	if (!strcmp(n->op, "/")) {
		emit(a, "_div(");
		gen_num(a, e, n->a, "an operand of '/'");
		emit(a, ", ");
		gen_num(a, e, n->b, "an operand of '/'");
		emit(a, ")");
		return TY_NUM;
	}
	if (!strcmp(n->op, "==") || !strcmp(n->op, "!=")) {
		emit(a, "(");
		l = gen(a, e, n->a);
		emit(a, " %s ", n->op[0] == '!' ? "~=" : "==");
		r = gen(a, e, n->b);
		emit(a, ")");
		if (l != r)
			fail(a, n->line, n->col, "'%s' compares %s with %s", n->op, ty_names[l],
			     ty_names[r]);
		return TY_BOOL;
	}
	{
		char what[48];
		int cmp = n->op[0] == '<' || n->op[0] == '>';

		snprintf(what, sizeof(what), "an operand of '%s'", n->op);
		emit(a, "(");
		gen_num(a, e, n->a, what);
		emit(a, " %s ", n->op);
		gen_num(a, e, n->b, what);
		emit(a, ")");
		return cmp ? TY_BOOL : TY_NUM;
	}
}

/*
 * Helpers of every generated chunk, all on line 1 (see Notes). Errors name
 * the ASL expression and are raised at the caller's line (level 2).
 */
static const char asl_prelude[] =
	"local function _idx(ctx, i, what) local k = math.tointeger(i) "
	"if k == nil or k < 0 or k >= ctx.nr_threads then error(string.format("
	"\"%s[%s]: no such thread index; the context has %d threads, indexed 0..%d\", "
	"what, tostring(i), ctx.nr_threads, ctx.nr_threads - 1), 3) end return k + 1 end "
	"local function _th(ctx, m, i, what) local k = _idx(ctx, i, what) local t = ctx.t[m] "
	"if t == nil then error(string.format(\"%s: metric %s has no per-thread values in this "
	"context\", what, m), 2) end return t[k] end "
	"local function _part(ctx, i, what) local k = _idx(ctx, i, what) local t = ctx.t.est_cycles "
	"local prog = ctx.program.est_cycles if t == nil then error(string.format(\"%s: "
	"est_cycles has no per-thread values in this context\", what), 2) end "
	"if not prog or prog <= 0 then return 0 end return t[k] / prog end "
	"local function _share(ctx, m) local prog = ctx.program[m] "
	"if not prog or prog <= 0 then return 0 end return ctx.v[m] / prog end "
	"local function _div(a, b) if b == 0 then return 0 end return a / b end "
	"local function _agg(op, ctx, terms) local acc, n = nil, 0 "
	"local function add(x) n = n + 1 if acc == nil then acc = x elseif op == \"max\" then "
	"if x > acc then acc = x end elseif op == \"min\" then if x < acc then acc = x end "
	"else acc = acc + x end end "
	"for _, t in ipairs(terms) do if type(t) == \"table\" then "
	"local lo, hi = math.tointeger(t[1]), math.tointeger(t[2]) "
	"if lo == nil or hi == nil then error(string.format(\"%s(...): the range %s...%s needs "
	"integer bounds\", op, tostring(t[1]), tostring(t[2])), 2) end "
	"if lo < 0 then lo = 0 end if hi > ctx.nr_threads - 1 then hi = ctx.nr_threads - 1 end "
	"for i = lo, hi do add(t[3](i)) end else add(t) end end "
	"if acc == nil then return 0 end if op == \"mean\" then return acc / n end return acc end "
	"local function _fmt(x) if type(x) == \"number\" then "
	"if x == math.floor(x) and math.abs(x) < 1e15 then return string.format(\"%d\", x) end "
	"return string.format(\"%.3g\", x) end return tostring(x) end "
	"local _c, _e ";

static void gen_text(struct asl *a, struct env *e, const struct clause *c)
{
	emit(a, "(\"\"");
	for (uint32_t i = 0; i < c->nr_parts; i++) {
		const struct node *n = c->parts[i];

		emit(a, " .. ");
		if (n->kind == N_STR) {
			emit_str(a, n->name);
			continue;
		}
		emit(a, "_fmt(");
		gen(a, e, n);
		emit(a, ")");
	}
	emit(a, ")");
}

/* "ASL: <the condition's text>", whitespace folded, at most ~120 bytes. */
static void emit_summary(struct asl *a, const struct property *pr)
{
	const struct clause *c = &pr->clauses[C_CONDITION];
	char s[160];
	size_t n = (size_t)snprintf(s, sizeof(s), "ASL: ");
	int space = 0;

	for (size_t i = c->src_start; i < c->src_end && n < 130; i++) {
		char ch = a->text[i];

		if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
			space = 1;
			continue;
		}
		if (space && n > 5)
			s[n++] = ' ';
		space = 0;
		s[n++] = ch;
	}
	if (n >= 130)
		n = (size_t)(stpcpy(s + n, "...") - s);
	s[n] = '\0';
	emit_str(a, s);
}

static void gen_property(struct asl *a, struct property *pr, const char *base)
{
	struct env e = { .pr = pr };

	a->out.line = 1;
	a->nr_loop_vars = 0;
	emit(a, "--[[ property %s of %s, compiled from ASL by ameba ]] ", pr->name,
	     strstr(base, "]]") ? "an ASL file" : base);
	emit(a, "%s", asl_prelude);
	emit(a, "local function _let(ctx, p) local _r = {} ");
	for (uint32_t i = 0; i < pr->nr_defs; i++) {
		const struct def *d = &pr->defs[i];

		sync_line(a, d->line);
		e.nr_defs = i;
		if (d->is_fn) {
			e.fn = d;
			emit(a, "local function f_%s(", d->name);
			for (uint32_t k = 0; k < d->nr_fparams; k++)
				emit(a, "%sa_%s", k ? ", " : "", d->fparams[k].name);
			emit(a, ") return ");
			gen_num(a, &e, d->body, "the body of a definition");
			emit(a, " end ");
			e.fn = NULL;
		} else {
			emit(a, "local v_%s = ", d->name);
			gen_num(a, &e, d->body, "a definition");
			emit(a, " ");
		}
	}
	e.nr_defs = pr->nr_defs;
	for (int k = 0; k < C_NR; k++) {
		const struct clause *c = &pr->clauses[k];

		if (!c->present)
			continue;
		sync_line(a, c->line);
		emit(a, "_r.%s = function() return ", asl_clause_names[k]);
		if (k == C_ADVICE || k == C_EVIDENCE)
			gen_text(a, &e, c);
		else
			want(a, c->expr, gen(a, &e, c->expr), k == C_CONDITION ? TY_BOOL : TY_NUM,
			     k == C_CONDITION ? "the condition" : k == C_CONFIDENCE ?
			     "the confidence" : "the severity");
		emit(a, " end ");
	}
	if (!pr->clauses[C_EVIDENCE].present) {
		/* default evidence: the values of the definitions and parameters */
		uint32_t k = 0;

		emit(a, "_r.evidence = function() return \"\"");
		for (uint32_t i = 0; i < pr->nr_defs; i++)
			if (!pr->defs[i].is_fn)
				emit(a, " .. \"%s%s=\" .. _fmt(v_%s)", k++ ? ", " : "", pr->defs[i].name,
				     pr->defs[i].name);
		for (uint32_t i = 0; i < pr->nr_params; i++)
			if (pr->params[i].type == P_INT || pr->params[i].type == P_FLOAT)
				emit(a, " .. \"%s%s=\" .. _fmt(p[\"%s\"])", k++ ? ", " : "",
				     pr->params[i].name, pr->params[i].name);
		emit(a, " end ");
	}
	emit(a, "return _r end ");
	{
		int conc = 0;

		for (uint32_t i = 0; i < pr->nr_params; i++)
			conc |= pr->params[i].type == P_CONCPERF;
		/* ConcPerf: the let definitions and clauses see the view of the
		 * context over its concurrent users (with at least p.min_refs
		 * accesses each when the property has that parameter) */
		emit(a, "local function _env(ctx, p) if _c ~= ctx then _e = _let(%s, p) _c = ctx end "
		     "return _e end ", conc ? "asl.users_view(ctx, p.min_refs)" : "ctx");
	}
	emit(a, "return { name = ");
	emit_str(a, pr->name);
	emit(a, ", summary = ");
	emit_summary(a, pr);
	emit(a, ", context = \"object\"");
	if (pr->refines) {
		emit(a, ", refines = ");
		emit_str(a, pr->refines);
	}
	emit(a, ", needs = {");
	for (uint32_t i = 0; i < pr->nr_needs; i++)
		emit(a, "%s\"%s\"", i ? ", " : " ", ameba_metric_info(pr->needs[i])->name);
	emit(a, " }, params = {");
	for (uint32_t i = 0, k = 0; i < pr->nr_params; i++) {
		const struct param *p = &pr->params[i];

		if (ASL_IS_CTX(p->type))
			continue;
		emit(a, "%s[\"%s\"] = ", k++ ? ", " : " ", p->name);
		emit_num(a, p->def, p->type == P_INT);
	}
	emit(a, " }");
	for (int k = 0; k < C_NR; k++)
		if (pr->clauses[k].present || k == C_EVIDENCE)
			emit(a, ", %s = function(ctx, p) return _env(ctx, p).%s() end", asl_clause_names[k],
			     asl_clause_names[k]);
	emit(a, " }\n");
}

/* ---- the entry point ---- */

static void compile(struct asl *a, struct asl_unit *out, const char *base)
{
	asl_parse(a);
	out->props = calloc(a->nr_props, sizeof(*out->props));
	if (!out->props)
		fail_rc(a, AMEBA_ENOMEM, 0, 0, "out of memory");
	for (uint32_t i = 0; i < a->nr_props; i++) {
		struct asl_prop *o = &out->props[out->nr_props];
		const struct property *pr = a->props[i];

		gen_property(a, a->props[i], base);
		o->name = strdup(pr->name);
		o->lua = a->out.s;
		o->lua_len = a->out.len;
		o->line = pr->line;
		memset(&a->out, 0, sizeof(a->out));
		out->nr_props++;
		if (!o->name)
			fail_rc(a, AMEBA_ENOMEM, 0, 0, "out of memory");
	}
}

int asl_compile(const char *path, const char *text, size_t len, struct asl_unit *out, char *msg,
		size_t msg_len)
{
	struct asl *a = calloc(1, sizeof(*a));
	const char *base = strrchr(path, '/');
	int rc;

	memset(out, 0, sizeof(*out));
	if (!a)
		return AMEBA_ENOMEM;
	a->path = path;
	a->text = text;
	a->len = len;
	a->msg = msg;
	a->msg_len = msg_len;
	if (!setjmp(a->jb))
		compile(a, out, base ? base + 1 : path);
	rc = a->rc;
	if (rc) {
		if (rc == AMEBA_ENOMEM)
			snprintf(msg, msg_len, "%s: out of memory while compiling", path);
		asl_unit_free(out);
	}
	free(a->out.s);
	for (uint32_t i = 0; i < a->nr_allocs; i++)
		free(a->allocs[i]);
	free(a->allocs);
	free(a->toks);
	free(a->outer_toks);
	free(a);
	return rc;
}

void asl_unit_free(struct asl_unit *u)
{
	for (uint32_t i = 0; i < u->nr_props; i++) {
		free(u->props[i].name);
		free(u->props[i].lua);
	}
	free(u->props);
	memset(u, 0, sizeof(*u));
}
