/*
 * asl.c - the ASL front-end: a lexer, a recursive-descent parser and a Lua
 * code generator for properties written as in seed 004 §4:
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
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ameba/ameba.h"
#include "asl.h"

#define ASL_FLOAT_DEFAULT 0.05
#define ASL_MAX_NAME 64
#define ASL_MAX_DIFF 16
#define ASL_MAX_DEPTH 100		/* nesting of expressions */
#define ASL_MAX_FILE (1u << 20)

/* ---- tokens ---- */

enum tok_kind { T_EOF, T_IDENT, T_NUM, T_STR, T_PUNCT };

struct tok {
	int kind;
	const char *s;		/* into the text; for T_PUNCT a static string */
	size_t len;		/* of the source text */
	size_t off;
	int line, col;
	double num;
	int is_int;
};

/* Longest first: "..." before ".", "<=" before "<". */
static const char *const puncts[] = {
	"...", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "{", "}", "[", "]", ",", ";", ":",
	".", "+", "-", "*", "/", "<", ">", "=", "!",
};

struct pragma {
	size_t off;
	int line, col;
	char name[ASL_MAX_NAME];
	double val;
	int is_int;
};

/* ---- trees ---- */

enum node_kind { N_NUM, N_NAME, N_FIELD, N_INDEX, N_CALL, N_NEG, N_NOT, N_BIN, N_ELLIPSIS, N_STR };

struct node {
	int kind;
	const char *op;		/* N_BIN: the operator's punct or "and"/"or" */
	int line, col;
	double num;
	int is_int;
	char *name;		/* N_NAME, N_FIELD (the field), N_CALL (the callee), N_STR */
	struct node *a, *b;	/* operands; N_FIELD/N_INDEX: a = base, b = index */
	struct node **args;
	uint32_t nr_args;
};

enum ptype { P_PARPERF, P_SEQPERF, P_INT, P_FLOAT };

struct param {
	char *name;
	int type;
	int line, col;
	int has_def;
	double def;
};

struct def {
	char *name;
	int line, col;
	int is_fn;
	struct param *fparams;
	uint32_t nr_fparams;
	struct node *body;
};

enum clause_kind { C_CONDITION, C_CONFIDENCE, C_SEVERITY, C_ADVICE, C_EVIDENCE, C_NR };

static const char *const clause_names[C_NR] = { "condition", "confidence", "severity", "advice",
						"evidence" };

struct clause {
	int present;
	int line, col;
	struct node *expr;	/* condition, confidence, severity */
	struct node **parts;	/* advice, evidence: N_STR and expressions */
	uint32_t nr_parts;
	size_t src_start, src_end;
};

struct property {
	char *name;
	char *refines;
	int line, col;
	struct param *params;
	uint32_t nr_params;
	struct def *defs;
	uint32_t nr_defs;
	struct clause clauses[C_NR];
	int needs[AMEBA_M_NR];
	uint32_t nr_needs;
};

/* ---- the compiler's state ---- */

struct buf {
	char *s;
	size_t len, cap;
	int line;		/* 1 + newlines written */
};

struct asl {
	const char *path, *text;
	size_t len;
	struct tok *toks;
	uint32_t nr_toks, cap_toks, pos;
	struct pragma *pragmas;
	uint32_t nr_pragmas;
	void **allocs;		/* everything to free at the end */
	uint32_t nr_allocs, cap_allocs;
	char *msg;
	size_t msg_len;
	int rc;
	jmp_buf jb;
	struct buf out;
	int nr_loop_vars;
	struct tok *outer_toks;	/* the file's tokens while a text's {...} is parsed */
	struct property **props;
	uint32_t nr_props;
	int depth;		/* of the expression being parsed */
};

static void fail_rc(struct asl *a, int rc, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 5, 6), noreturn));

static void fail_rc(struct asl *a, int rc, int line, int col, const char *fmt, ...)
{
	size_t n;
	va_list ap;

	n = (size_t)snprintf(a->msg, a->msg_len, "%s:%d:%d: ", a->path, line, col);
	if (n < a->msg_len) {
		va_start(ap, fmt);
		vsnprintf(a->msg + n, a->msg_len - n, fmt, ap);
		va_end(ap);
	}
	a->rc = rc;
	longjmp(a->jb, 1);
}

#define fail(a, line, col, ...) fail_rc(a, AMEBA_EINVAL, line, col, __VA_ARGS__)

static void *xalloc(struct asl *a, size_t sz)
{
	void *p;

	if (a->nr_allocs == a->cap_allocs) {
		uint32_t cap = a->cap_allocs ? 2 * a->cap_allocs : 64;
		void **v = realloc(a->allocs, cap * sizeof(*v));

		if (!v)
			fail_rc(a, AMEBA_ENOMEM, 0, 0, "out of memory");
		a->allocs = v;
		a->cap_allocs = cap;
	}
	p = calloc(1, sz ? sz : 1);
	if (!p)
		fail_rc(a, AMEBA_ENOMEM, 0, 0, "out of memory");
	a->allocs[a->nr_allocs++] = p;
	return p;
}

/* Grows an xalloc'ed array by one element. */
static void *xgrow(struct asl *a, void *arr, uint32_t nr, size_t elem)
{
	void *v = xalloc(a, (nr + 1) * elem);

	if (nr)
		memcpy(v, arr, nr * elem);
	return v;
}

static char *xstrndup(struct asl *a, const char *s, size_t n)
{
	char *d = xalloc(a, n + 1);

	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

/* ---- lexer ---- */

static void push_tok(struct asl *a, const struct tok *t)
{
	if (a->nr_toks == a->cap_toks) {
		uint32_t cap = a->cap_toks ? 2 * a->cap_toks : 256;
		struct tok *v = realloc(a->toks, cap * sizeof(*v));

		if (!v)
			fail_rc(a, AMEBA_ENOMEM, t->line, t->col, "out of memory");
		a->toks = v;
		a->cap_toks = cap;
	}
	a->toks[a->nr_toks++] = *t;
}

/* `// default: t=0.02, n=3` */
static void lex_pragma(struct asl *a, const char *s, const char *end, size_t off, int line,
		       int col)
{
	const char *p = s;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if ((size_t)(end - p) < 8 || strncmp(p, "default:", 8))
		return;
	p += 8;
	for (;;) {
		struct pragma pr = { .off = off, .line = line };
		const char *name;
		char num[64], *e;
		size_t n;

		while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
			p++;
		if (p >= end || *p == '\r')
			return;
		pr.col = col + (int)(p - s) + 2;
		name = p;
		while (p < end && (isalnum((unsigned char)*p) || *p == '_'))
			p++;
		n = (size_t)(p - name);
		if (!n || n >= ASL_MAX_NAME || p >= end || *p != '=')
			fail(a, line, pr.col, "malformed default: write // default: NAME=NUMBER[, NAME=NUMBER], "
			     "e.g. // default: t=0.25");
		memcpy(pr.name, name, n);
		p++;
		n = 0;
		while (p < end && n < sizeof(num) - 1 && (isalnum((unsigned char)*p) || *p == '.' ||
							  *p == '-' || *p == '+'))
			num[n++] = *p++;
		num[n] = '\0';
		errno = 0;
		pr.val = strtod(num, &e);
		if (!n || *e || errno || !isfinite(pr.val))
			fail(a, line, pr.col, "malformed default for %s: '%s' is not a number", pr.name, num);
		pr.is_int = !strpbrk(num, ".eE");
		a->pragmas = xgrow(a, a->pragmas, a->nr_pragmas, sizeof(*a->pragmas));
		a->pragmas[a->nr_pragmas++] = pr;
	}
}

/*
 * Tokenises text[start, end) starting at (line, col); appends to a->toks,
 * ending with a T_EOF token at the end position.
 */
static void lex(struct asl *a, size_t start, size_t end, int line, int col)
{
	const char *t = a->text;
	size_t i = start;

	while (i < end) {
		struct tok k = { .off = i, .line = line, .col = col };
		char c = t[i];

		if (c == '\n') {
			i++, line++, col = 1;
			continue;
		}
		if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
			i++, col++;
			continue;
		}
		if (c == '/' && i + 1 < end && t[i + 1] == '/') {
			size_t j = i + 2;

			while (j < end && t[j] != '\n')
				j++;
			lex_pragma(a, t + i + 2, t + j, i, line, col);
			col += (int)(j - i);
			i = j;
			continue;
		}
		if (c == '/' && i + 1 < end && t[i + 1] == '*') {
			size_t j = i + 2;

			col += 2;
			while (j < end && !(t[j] == '*' && j + 1 < end && t[j + 1] == '/')) {
				if (t[j] == '\n')
					line++, col = 1;
				else
					col++;
				j++;
			}
			if (j >= end)
				fail(a, k.line, k.col, "unterminated comment: '/*' has no '*/'");
			i = j + 2;
			col += 2;
			continue;
		}
		if (isalpha((unsigned char)c) || c == '_') {
			size_t j = i;

			while (j < end && (isalnum((unsigned char)t[j]) || t[j] == '_'))
				j++;
			k.kind = T_IDENT;
			k.s = t + i;
			k.len = j - i;
		} else if (isdigit((unsigned char)c) || (c == '.' && i + 1 < end &&
							 isdigit((unsigned char)t[i + 1]))) {
			size_t j = i;
			char num[64];

			while (j < end && isdigit((unsigned char)t[j]))
				j++;
			k.is_int = 1;
			/* "0...n" is not a number followed by ".." */
			if (j < end && t[j] == '.' && !(j + 1 < end && t[j + 1] == '.')) {
				k.is_int = 0;
				j++;
				while (j < end && isdigit((unsigned char)t[j]))
					j++;
			}
			if (j < end && (t[j] == 'e' || t[j] == 'E')) {
				size_t e = j + 1;

				if (e < end && (t[e] == '+' || t[e] == '-'))
					e++;
				if (e < end && isdigit((unsigned char)t[e])) {
					k.is_int = 0;
					j = e;
					while (j < end && isdigit((unsigned char)t[j]))
						j++;
				}
			}
			if (j < end && (isalpha((unsigned char)t[j]) || t[j] == '_'))
				fail(a, line, col, "malformed number '%.*s': a letter follows the digits",
				     (int)(j - i + 1), t + i);
			if (j - i >= sizeof(num))
				fail(a, line, col, "number too long (%zu characters)", j - i);
			memcpy(num, t + i, j - i);
			num[j - i] = '\0';
			k.kind = T_NUM;
			k.s = t + i;
			k.len = j - i;
			k.num = strtod(num, NULL);
			if (!isfinite(k.num) || (k.is_int && k.num > 9007199254740992.0))
				fail(a, line, col, "number %s is out of range", num);
		} else if (c == '"') {
			size_t j = i + 1;

			while (j < end && t[j] != '"' && t[j] != '\n') {
				if (t[j] == '\\' && j + 1 < end && t[j + 1] != '\n')
					j++;
				j++;
			}
			if (j >= end || t[j] != '"')
				fail(a, line, col, "unterminated string: a string ends with '\"' on the "
				     "line where it starts");
			k.kind = T_STR;
			k.s = t + i;
			k.len = j + 1 - i;
		} else {
			for (size_t p = 0; p < sizeof(puncts) / sizeof(puncts[0]); p++) {
				size_t n = strlen(puncts[p]);

				if (i + n <= end && !strncmp(t + i, puncts[p], n)) {
					k.kind = T_PUNCT;
					k.s = puncts[p];
					k.len = n;
					break;
				}
			}
			if (k.kind != T_PUNCT) {
				if (isprint((unsigned char)c))
					fail(a, line, col, "unexpected character '%c'", c);
				fail(a, line, col, "unexpected byte 0x%02x", (unsigned char)c);
			}
		}
		push_tok(a, &k);
		i += k.len;
		col += (int)k.len;
	}
	{
		struct tok k = { .kind = T_EOF, .off = end, .line = line, .col = col };

		push_tok(a, &k);
	}
}

/* ---- parser ---- */

static const struct tok *peek(struct asl *a)
{
	return &a->toks[a->pos];
}

static const struct tok *next(struct asl *a)
{
	const struct tok *t = &a->toks[a->pos];

	if (t->kind != T_EOF)
		a->pos++;
	return t;
}

static int is_punct(const struct tok *t, const char *p)
{
	return t->kind == T_PUNCT && !strcmp(t->s, p);
}

static int is_word(const struct tok *t, const char *w)
{
	return t->kind == T_IDENT && t->len == strlen(w) && !strncmp(t->s, w, t->len);
}

/* How a token is named in messages: 'x', end of file, ... (static buffer per call site). */
static const char *describe(const struct tok *t, char *buf, size_t len)
{
	switch (t->kind) {
	case T_EOF:
		return "end of file";
	case T_STR:
		return "a string";
	case T_PUNCT:
		snprintf(buf, len, "'%s'", t->s);
		return buf;
	default:
		snprintf(buf, len, "'%.*s'", (int)(t->len > 40 ? 40 : t->len), t->s);
		return buf;
	}
}

static void expect(struct asl *a, const char *p, const char *where)
{
	const struct tok *t = peek(a);
	char d[64];

	if (!is_punct(t, p))
		fail(a, t->line, t->col, "expected '%s' %s, got %s", p, where, describe(t, d, sizeof(d)));
	next(a);
}

static const char *const reserved[] = { "property", "refines", "let", "in", "and", "or", "not" };

static int is_reserved(const struct tok *t)
{
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (is_word(t, reserved[i]))
			return 1;
	return 0;
}

static char *expect_name(struct asl *a, const char *what)
{
	const struct tok *t = peek(a);
	char d[64];

	if (t->kind != T_IDENT || is_reserved(t))
		fail(a, t->line, t->col, "expected %s, got %s", what, describe(t, d, sizeof(d)));
	if (t->len >= ASL_MAX_NAME)
		fail(a, t->line, t->col, "name '%.*s...' is longer than %d characters", 20, t->s,
		     ASL_MAX_NAME - 1);
	next(a);
	return xstrndup(a, t->s, t->len);
}

static struct node *new_node(struct asl *a, int kind, const struct tok *at)
{
	struct node *n = xalloc(a, sizeof(*n));

	n->kind = kind;
	n->line = at->line;
	n->col = at->col;
	return n;
}

static struct node *parse_expr(struct asl *a);

static void add_arg(struct asl *a, struct node *call, struct node *arg)
{
	call->args = xgrow(a, call->args, call->nr_args, sizeof(*call->args));
	call->args[call->nr_args++] = arg;
}

static struct node *parse_primary(struct asl *a)
{
	const struct tok *t = peek(a);
	struct node *n;
	char d[64];

	if (t->kind == T_NUM) {
		next(a);
		n = new_node(a, N_NUM, t);
		n->num = t->num;
		n->is_int = t->is_int;
		return n;
	}
	if (is_punct(t, "(")) {
		next(a);
		n = parse_expr(a);
		expect(a, ")", "to close the '('");
		return n;
	}
	if (t->kind == T_IDENT && !is_reserved(t)) {
		n = new_node(a, N_NAME, t);
		n->name = expect_name(a, "a name");
		if (!is_punct(peek(a), "("))
			return n;
		n->kind = N_CALL;
		next(a);
		if (is_punct(peek(a), ")")) {
			next(a);
			return n;
		}
		for (;;) {
			const struct tok *at = peek(a);

			if (is_punct(at, "...")) {
				next(a);
				add_arg(a, n, new_node(a, N_ELLIPSIS, at));
			} else {
				add_arg(a, n, parse_expr(a));
			}
			at = peek(a);
			if (is_punct(at, ")")) {
				next(a);
				return n;
			}
			if (!is_punct(at, ","))
				fail(a, at->line, at->col, "expected ',' or ')' in the arguments of %s(), "
				     "got %s", n->name, describe(at, d, sizeof(d)));
			next(a);
		}
	}
	fail(a, t->line, t->col, "expected an expression, got %s", describe(t, d, sizeof(d)));
}

static struct node *parse_postfix(struct asl *a)
{
	struct node *n = parse_primary(a);

	for (;;) {
		const struct tok *t = peek(a);
		struct node *m;

		if (is_punct(t, ".")) {
			next(a);
			m = new_node(a, N_FIELD, t);
			m->a = n;
			m->name = expect_name(a, "a field name after '.'");
		} else if (is_punct(t, "[")) {
			next(a);
			m = new_node(a, N_INDEX, t);
			m->a = n;
			m->b = parse_expr(a);
			expect(a, "]", "to close the index");
		} else {
			return n;
		}
		n = m;
	}
}

static struct node *parse_unary(struct asl *a)
{
	const struct tok *t = peek(a);
	struct node *n;

	if (is_punct(t, "-")) {
		next(a);
		if (++a->depth > ASL_MAX_DEPTH)
			fail(a, t->line, t->col, "expression nested more than %d deep", ASL_MAX_DEPTH);
		n = new_node(a, N_NEG, t);
		n->a = parse_unary(a);
		a->depth--;
		return n;
	}
	return parse_postfix(a);
}

static struct node *binary(struct asl *a, const struct tok *t, const char *op, struct node *l,
			   struct node *r)
{
	struct node *n = new_node(a, N_BIN, t);

	n->op = op;
	n->a = l;
	n->b = r;
	return n;
}

static struct node *parse_mul(struct asl *a)
{
	struct node *n = parse_unary(a);

	while (is_punct(peek(a), "*") || is_punct(peek(a), "/")) {
		const struct tok *t = next(a);

		n = binary(a, t, t->s, n, parse_unary(a));
	}
	return n;
}

static struct node *parse_add(struct asl *a)
{
	struct node *n = parse_mul(a);

	while (is_punct(peek(a), "+") || is_punct(peek(a), "-")) {
		const struct tok *t = next(a);

		n = binary(a, t, t->s, n, parse_mul(a));
	}
	return n;
}

static int is_relop(const struct tok *t)
{
	static const char *const ops[] = { "<", "<=", ">", ">=", "==", "!=" };

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (is_punct(t, ops[i]))
			return 1;
	return 0;
}

static struct node *parse_cmp(struct asl *a)
{
	struct node *n = parse_add(a);
	const struct tok *t = peek(a);

	if (is_punct(t, "="))
		fail(a, t->line, t->col, "'=' in an expression: compare with '=='");
	if (!is_relop(t))
		return n;
	next(a);
	n = binary(a, t, t->s, n, parse_add(a));
	t = peek(a);
	if (is_relop(t))
		fail(a, t->line, t->col, "comparisons do not chain: write a < b and b < c");
	return n;
}

static struct node *parse_not(struct asl *a)
{
	const struct tok *t = peek(a);
	struct node *n;

	if (is_word(t, "not") || is_punct(t, "!")) {
		next(a);
		if (++a->depth > ASL_MAX_DEPTH)
			fail(a, t->line, t->col, "expression nested more than %d deep", ASL_MAX_DEPTH);
		n = new_node(a, N_NOT, t);
		n->a = parse_not(a);
		a->depth--;
		return n;
	}
	return parse_cmp(a);
}

static struct node *parse_and(struct asl *a)
{
	struct node *n = parse_not(a);

	while (is_word(peek(a), "and") || is_punct(peek(a), "&&")) {
		const struct tok *t = next(a);

		n = binary(a, t, "and", n, parse_not(a));
	}
	return n;
}

static struct node *parse_expr(struct asl *a)
{
	struct node *n;

	if (++a->depth > ASL_MAX_DEPTH)
		fail(a, peek(a)->line, peek(a)->col, "expression nested more than %d deep",
		     ASL_MAX_DEPTH);
	n = parse_and(a);
	while (is_word(peek(a), "or") || is_punct(peek(a), "||")) {
		const struct tok *t = next(a);

		n = binary(a, t, "or", n, parse_and(a));
	}
	a->depth--;
	return n;
}

static int parse_type(struct asl *a, int allow_ctx)
{
	static const char *const names[] = { [P_PARPERF] = "ParPerf", [P_SEQPERF] = "SeqPerf",
					     [P_INT] = "int", [P_FLOAT] = "float" };
	const struct tok *t = peek(a);
	char d[64];

	for (int i = allow_ctx ? 0 : P_INT; i <= P_FLOAT; i++)
		if (is_word(t, names[i])) {
			next(a);
			return i;
		}
	if (t->kind == T_IDENT && allow_ctx)
		fail(a, t->line, t->col, "unknown parameter type %s: expected ParPerf, SeqPerf, int or "
		     "float", describe(t, d, sizeof(d)));
	if (t->kind == T_IDENT && !allow_ctx &&
	    (is_word(t, "ParPerf") || is_word(t, "SeqPerf")))
		fail(a, t->line, t->col, "a function defined under let takes numbers (int or float), "
		     "not %s", describe(t, d, sizeof(d)));
	fail(a, t->line, t->col, "expected a parameter type (%s), got %s",
	     allow_ctx ? "ParPerf, SeqPerf, int or float" : "int or float",
	     describe(t, d, sizeof(d)));
}

/* A parameter list after '(' up to and including ')'. */
static void parse_params(struct asl *a, struct param **out, uint32_t *nr, int allow_ctx,
			 const char *of)
{
	char d[64];

	if (is_punct(peek(a), ")")) {
		next(a);
		return;
	}
	for (;;) {
		struct param p = { 0 };
		const struct tok *t = peek(a);

		p.type = parse_type(a, allow_ctx);
		t = peek(a);
		p.line = t->line;
		p.col = t->col;
		p.name = expect_name(a, "a parameter name after its type");
		for (uint32_t i = 0; i < *nr; i++)
			if (!strcmp((*out)[i].name, p.name))
				fail(a, p.line, p.col, "parameter %s is declared twice in %s", p.name, of);
		if (is_punct(peek(a), "=")) {
			int neg = 0;

			t = next(a);
			if (!allow_ctx || p.type == P_PARPERF || p.type == P_SEQPERF)
				fail(a, t->line, t->col, "only int and float parameters of a property take "
				     "a default");
			if (is_punct(peek(a), "-")) {
				next(a);
				neg = 1;
			}
			t = peek(a);
			if (t->kind != T_NUM)
				fail(a, t->line, t->col, "expected a number as the default of %s, got %s",
				     p.name, describe(t, d, sizeof(d)));
			next(a);
			if (p.type == P_INT && !t->is_int)
				fail(a, t->line, t->col, "int parameter %s has a default that is not an "
				     "integer: %.*s", p.name, (int)t->len, t->s);
			p.has_def = 1;
			p.def = neg ? -t->num : t->num;
		}
		*out = xgrow(a, *out, *nr, sizeof(**out));
		(*out)[(*nr)++] = p;
		t = peek(a);
		if (is_punct(t, ")")) {
			next(a);
			return;
		}
		if (!is_punct(t, ","))
			fail(a, t->line, t->col, "expected ',' or ')' after parameter %s, got %s", p.name,
			     describe(t, d, sizeof(d)));
		next(a);
	}
}

/* Text of a string token without its quotes, escapes resolved; braces kept. */
static void parse_text(struct asl *a, struct clause *c, const struct tok *t)
{
	const char *s = t->s + 1, *end = t->s + t->len - 1;
	char *lit = xalloc(a, t->len + 1);
	size_t n = 0;

	while (s < end) {
		if (*s == '\\' && s + 1 < end) {
			char e = s[1];

			lit[n++] = e == 'n' ? '\n' : e == 't' ? '\t' : e;
			s += 2;
		} else if (*s == '{' && s + 1 < end && s[1] == '{') {
			lit[n++] = '{';
			s += 2;
		} else if (*s == '}' && s + 1 < end && s[1] == '}') {
			lit[n++] = '}';
			s += 2;
		} else if (*s == '}') {
			fail(a, t->line, t->col + (int)(s - t->s), "'}' without '{' in the text; write "
			     "'}}' for a brace");
		} else if (*s == '{') {
			const char *close = memchr(s, '}', (size_t)(end - s));
			uint32_t saved_nr = a->nr_toks, saved_cap = a->cap_toks, saved_pos = a->pos;
			struct node *str, *e;
			int col = t->col + (int)(s - t->s);

			if (!close)
				fail(a, t->line, col, "'{' without '}' in the text; write '{{' for a brace");
			if (n) {
				str = new_node(a, N_STR, t);
				str->name = xstrndup(a, lit, n);
				c->parts = xgrow(a, c->parts, c->nr_parts, sizeof(*c->parts));
				c->parts[c->nr_parts++] = str;
				n = 0;
			}
			/* lex and parse the {...} on their own */
			a->outer_toks = a->toks;
			a->toks = NULL;
			a->nr_toks = a->cap_toks = a->pos = 0;
			lex(a, (size_t)(s + 1 - a->text), (size_t)(close - a->text), t->line, col + 1);
			if (peek(a)->kind == T_EOF)
				fail(a, t->line, col, "empty '{}' in the text: put an expression inside");
			e = parse_expr(a);
			if (peek(a)->kind != T_EOF) {
				char d[64];

				fail(a, peek(a)->line, peek(a)->col, "expected '}' after the expression in "
				     "the text, got %s", describe(peek(a), d, sizeof(d)));
			}
			free(a->toks);
			a->toks = a->outer_toks;
			a->outer_toks = NULL;
			a->nr_toks = saved_nr;
			a->cap_toks = saved_cap;
			a->pos = saved_pos;
			c->parts = xgrow(a, c->parts, c->nr_parts, sizeof(*c->parts));
			c->parts[c->nr_parts++] = e;
			s = close + 1;
		} else {
			lit[n++] = *s++;
		}
	}
	if (n) {
		struct node *str = new_node(a, N_STR, t);

		str->name = xstrndup(a, lit, n);
		c->parts = xgrow(a, c->parts, c->nr_parts, sizeof(*c->parts));
		c->parts[c->nr_parts++] = str;
	}
}

static void parse_def(struct asl *a, struct property *pr)
{
	struct def d = { 0 };
	const struct tok *t = peek(a);

	d.line = t->line;
	d.col = t->col;
	d.name = expect_name(a, "a definition (name = expression;) or 'in'");
	for (uint32_t i = 0; i < pr->nr_defs; i++)
		if (!strcmp(pr->defs[i].name, d.name))
			fail(a, d.line, d.col, "%s is defined twice (first at line %d)", d.name,
			     pr->defs[i].line);
	for (uint32_t i = 0; i < pr->nr_params; i++)
		if (!strcmp(pr->params[i].name, d.name))
			fail(a, d.line, d.col, "%s is already a parameter of %s; give the definition "
			     "another name", d.name, pr->name);
	if (is_punct(peek(a), "(")) {
		next(a);
		d.is_fn = 1;
		parse_params(a, &d.fparams, &d.nr_fparams, 0, d.name);
	}
	expect(a, "=", d.is_fn ? "after the function's parameters" : "after the defined name");
	d.body = parse_expr(a);
	{
		char where[ASL_MAX_NAME + 40];

		snprintf(where, sizeof(where), "after the definition of %s", d.name);
		expect(a, ";", where);
	}
	pr->defs = xgrow(a, pr->defs, pr->nr_defs, sizeof(*pr->defs));
	pr->defs[pr->nr_defs++] = d;
}

static void parse_clause(struct asl *a, struct property *pr)
{
	const struct tok *t = peek(a);
	struct clause *c = NULL;
	char d[64];
	int k;

	for (k = 0; k < C_NR; k++)
		if (is_word(t, clause_names[k]))
			break;
	if (k == C_NR)
		fail(a, t->line, t->col, "expected a clause (condition, confidence, severity, advice or "
		     "evidence) or '}', got %s", describe(t, d, sizeof(d)));
	c = &pr->clauses[k];
	if (c->present)
		fail(a, t->line, t->col, "%s: is given twice (first at line %d)", clause_names[k],
		     c->line);
	c->present = 1;
	c->line = t->line;
	c->col = t->col;
	next(a);
	expect(a, ":", k == C_ADVICE || k == C_EVIDENCE ? "after the clause name" :
	       "after the clause name, e.g. condition: x > t;");
	c->src_start = peek(a)->off;
	if (k == C_ADVICE || k == C_EVIDENCE) {
		t = peek(a);
		if (t->kind != T_STR)
			fail(a, t->line, t->col, "expected a string after %s:, e.g. %s: \"text with "
			     "{expression}\"; got %s", clause_names[k], clause_names[k],
			     describe(t, d, sizeof(d)));
		while (peek(a)->kind == T_STR)
			parse_text(a, c, next(a));
	} else {
		c->expr = parse_expr(a);
	}
	c->src_end = a->toks[a->pos ? a->pos - 1 : 0].off + a->toks[a->pos ? a->pos - 1 : 0].len;
	t = peek(a);
	if (is_punct(t, "}"))
		return;
	if (!is_punct(t, ";"))
		fail(a, t->line, t->col, "expected ';' after the %s clause, got %s", clause_names[k],
		     describe(t, d, sizeof(d)));
	next(a);
}

static void apply_pragmas(struct asl *a, struct property *pr, size_t off)
{
	for (uint32_t i = 0; i < pr->nr_params; i++) {
		struct param *p = &pr->params[i];

		if (p->type == P_PARPERF || p->type == P_SEQPERF || p->has_def)
			continue;
		p->def = p->type == P_INT ? 0 : ASL_FLOAT_DEFAULT;
		/* the last `// default:` above the property wins */
		for (uint32_t k = 0; k < a->nr_pragmas; k++) {
			const struct pragma *g = &a->pragmas[k];

			if (g->off > off || strcmp(g->name, p->name))
				continue;
			if (p->type == P_INT && !g->is_int)
				fail(a, g->line, g->col, "default for int parameter %s of %s is not an "
				     "integer", p->name, pr->name);
			p->def = g->val;
		}
		p->has_def = 1;
	}
}

static struct property *parse_property(struct asl *a)
{
	struct property *pr = xalloc(a, sizeof(*pr));
	const struct tok *t = peek(a), *kw = t;
	uint32_t nr_ctx = 0;
	char d[64];

	if (!is_word(t, "property"))
		fail(a, t->line, t->col, "expected 'property', got %s", describe(t, d, sizeof(d)));
	next(a);
	pr->line = t->line;
	pr->col = t->col;
	pr->name = expect_name(a, "the property's name after 'property'");
	expect(a, "(", "after the property's name");
	parse_params(a, &pr->params, &pr->nr_params, 1, pr->name);
	for (uint32_t i = 0; i < pr->nr_params; i++)
		if (pr->params[i].type == P_PARPERF || pr->params[i].type == P_SEQPERF)
			if (++nr_ctx > 1)
				fail(a, pr->params[i].line, pr->params[i].col, "%s has a second context "
				     "parameter %s; a property is evaluated on one context", pr->name,
				     pr->params[i].name);
	apply_pragmas(a, pr, kw->off);
	if (is_word(peek(a), "refines")) {
		next(a);
		pr->refines = expect_name(a, "the name of the refined property after 'refines'");
	}
	expect(a, "{", "to open the property's body");
	if (is_word(peek(a), "let")) {
		next(a);
		while (!is_word(peek(a), "in")) {
			t = peek(a);
			if (t->kind != T_IDENT)
				fail(a, t->line, t->col, "expected a definition or 'in', got %s",
				     describe(t, d, sizeof(d)));
			parse_def(a, pr);
		}
		next(a);
	}
	while (!is_punct(peek(a), "}")) {
		t = peek(a);
		if (t->kind == T_EOF)
			fail(a, t->line, t->col, "expected '}' to close property %s (opened at line %d), "
			     "got end of file", pr->name, pr->line);
		parse_clause(a, pr);
	}
	t = next(a);
	for (int k = C_CONDITION; k <= C_SEVERITY; k++)
		if (k != C_CONFIDENCE && !pr->clauses[k].present)
			fail(a, t->line, t->col, "property %s has no %s: clause", pr->name,
			     clause_names[k]);
	return pr;
}

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
		if (p && (p->type == P_PARPERF || p->type == P_SEQPERF))
			return p;
	}
	fail(a, base->line, base->col, "only a context parameter (ParPerf, SeqPerf) has fields; "
	     "'.%s' follows %s", field, base->kind == N_NAME ? "a number" : "an expression");
}

static void unknown_field(struct asl *a, const struct node *n, const struct param *ctx)
{
	fail(a, n->line, n->col, "%s %s has no field '%s'; fields are nrThreads, parT, program, "
	     "confidence, samples, window_s, lc1_miss, lc2_miss, lc3_miss (and _rd/_wr) and every "
	     "metric name of `ameba list metrics`",
	     ctx->type == P_PARPERF ? "ParPerf" : "SeqPerf", ctx->name, n->name);
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

static const char *const builtins[] = { "sum", "max", "min", "mean", "abs", "sqrt" };

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
		     "mean, abs, sqrt and those defined under let", n->name);
	}
	if (!is_agg) {
		if (n->nr_args != 1 || n->args[0]->kind == N_ELLIPSIS)
			fail(a, n->line, n->col, "%s() takes one argument", n->name);
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
		if (p->type == P_PARPERF || p->type == P_SEQPERF)
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
		emit(a, "_r.%s = function() return ", clause_names[k]);
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
	emit(a, "local function _env(ctx, p) if _c ~= ctx then _e = _let(ctx, p) _c = ctx end "
	     "return _e end ");
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

		if (p->type == P_PARPERF || p->type == P_SEQPERF)
			continue;
		emit(a, "%s[\"%s\"] = ", k++ ? ", " : " ", p->name);
		emit_num(a, p->def, p->type == P_INT);
	}
	emit(a, " }");
	for (int k = 0; k < C_NR; k++)
		if (pr->clauses[k].present || k == C_EVIDENCE)
			emit(a, ", %s = function(ctx, p) return _env(ctx, p).%s() end", clause_names[k],
			     clause_names[k]);
	emit(a, " }\n");
}

/* ---- the entry point ---- */

static void compile(struct asl *a, struct asl_unit *out, const char *base)
{
	if (a->len > ASL_MAX_FILE)
		fail(a, 1, 1, "the file is %zu bytes; an ASL file may have at most %u", a->len,
		     ASL_MAX_FILE);
	if (memchr(a->text, '\0', a->len))
		fail(a, 1, 1, "the file holds a NUL byte: an ASL property file is text");
	lex(a, 0, a->len, 1, 1);
	while (peek(a)->kind != T_EOF) {
		struct property *pr = parse_property(a);

		for (uint32_t i = 0; i < a->nr_props; i++)
			if (!strcmp(a->props[i]->name, pr->name))
				fail(a, pr->line, pr->col, "property %s is defined twice in this file "
				     "(first at line %d)", pr->name, a->props[i]->line);
		a->props = xgrow(a, a->props, a->nr_props, sizeof(*a->props));
		a->props[a->nr_props++] = pr;
	}
	if (!a->nr_props)
		fail(a, peek(a)->line, peek(a)->col, "no property in the file: expected 'property "
		     "NAME(ParPerf pp, float t) { ... }'");
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
