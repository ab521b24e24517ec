/*
 * asl_parse.c - the ASL front-end's lexer and recursive-descent parser:
 * ASL text to one tree per property (asl_int.h). asl.c generates the Lua.
 *
 * Notes:
 *  - The whole file is tokenised first (one token of lookahead is all the
 *    grammar needs, but an array keeps the parser simple and lets
 *    `// default:` comments be matched to the properties below them by
 *    offset).
 *  - Errors say where ("path:line:col", counted in bytes from 1), what was
 *    found and what was expected, and unwind with a longjmp; every node is
 *    allocated with asl_alloc() and freed by asl_compile() at the end.
 *  - Binary nodes are positioned at their operator, other nodes at their
 *    first token; the generator reports type errors at the start of the
 *    expression (leftmost()).
 *  - Expressions nest at most ASL_MAX_DEPTH deep: the parser recurses.
 *  - Strings stay on one line. In advice/evidence texts, `{expr}` is lexed
 *    and parsed on its own, at its own line and column; `{{`, `}}` are
 *    literal braces.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asl_int.h"

const char *const asl_clause_names[C_NR] = { "condition", "confidence", "severity", "advice",
					     "evidence" };

/* Longest first: "..." before ".", "<=" before "<". */
static const char *const puncts[] = {
	"...", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "{", "}", "[", "]", ",", ";", ":",
	".", "+", "-", "*", "/", "<", ">", "=", "!",
};

void asl_fail_rc(struct asl *a, int rc, int line, int col, const char *fmt, ...)
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

void *asl_alloc(struct asl *a, size_t sz)
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
void *asl_grow(struct asl *a, void *arr, uint32_t nr, size_t elem)
{
	void *v = asl_alloc(a, (nr + 1) * elem);

	if (nr)
		memcpy(v, arr, nr * elem);
	return v;
}

static char *xstrndup(struct asl *a, const char *s, size_t n)
{
	char *d = asl_alloc(a, n + 1);

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
		a->pragmas = asl_grow(a, a->pragmas, a->nr_pragmas, sizeof(*a->pragmas));
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
	struct node *n = asl_alloc(a, sizeof(*n));

	n->kind = kind;
	n->line = at->line;
	n->col = at->col;
	return n;
}

static struct node *parse_expr(struct asl *a);

static void add_arg(struct asl *a, struct node *call, struct node *arg)
{
	call->args = asl_grow(a, call->args, call->nr_args, sizeof(*call->args));
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
					     [P_CONCPERF] = "ConcPerf", [P_INT] = "int",
					     [P_FLOAT] = "float" };
	const struct tok *t = peek(a);
	char d[64];

	for (int i = allow_ctx ? 0 : P_INT; i <= P_FLOAT; i++)
		if (is_word(t, names[i])) {
			next(a);
			return i;
		}
	if (t->kind == T_IDENT && allow_ctx)
		fail(a, t->line, t->col, "unknown parameter type %s: expected ParPerf, SeqPerf, "
		     "ConcPerf, int or float", describe(t, d, sizeof(d)));
	if (t->kind == T_IDENT && !allow_ctx &&
	    (is_word(t, "ParPerf") || is_word(t, "SeqPerf") || is_word(t, "ConcPerf")))
		fail(a, t->line, t->col, "a function defined under let takes numbers (int or float), "
		     "not %s", describe(t, d, sizeof(d)));
	fail(a, t->line, t->col, "expected a parameter type (%s), got %s",
	     allow_ctx ? "ParPerf, SeqPerf, ConcPerf, int or float" : "int or float",
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
			if (!allow_ctx || ASL_IS_CTX(p.type))
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
		*out = asl_grow(a, *out, *nr, sizeof(**out));
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
	char *lit = asl_alloc(a, t->len + 1);
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
				c->parts = asl_grow(a, c->parts, c->nr_parts, sizeof(*c->parts));
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
			c->parts = asl_grow(a, c->parts, c->nr_parts, sizeof(*c->parts));
			c->parts[c->nr_parts++] = e;
			s = close + 1;
		} else {
			lit[n++] = *s++;
		}
	}
	if (n) {
		struct node *str = new_node(a, N_STR, t);

		str->name = xstrndup(a, lit, n);
		c->parts = asl_grow(a, c->parts, c->nr_parts, sizeof(*c->parts));
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
	pr->defs = asl_grow(a, pr->defs, pr->nr_defs, sizeof(*pr->defs));
	pr->defs[pr->nr_defs++] = d;
}

static void parse_clause(struct asl *a, struct property *pr)
{
	const struct tok *t = peek(a);
	struct clause *c = NULL;
	char d[64];
	int k;

	for (k = 0; k < C_NR; k++)
		if (is_word(t, asl_clause_names[k]))
			break;
	if (k == C_NR)
		fail(a, t->line, t->col, "expected a clause (condition, confidence, severity, advice or "
		     "evidence) or '}', got %s", describe(t, d, sizeof(d)));
	c = &pr->clauses[k];
	if (c->present)
		fail(a, t->line, t->col, "%s: is given twice (first at line %d)", asl_clause_names[k],
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
			     "{expression}\"; got %s", asl_clause_names[k], asl_clause_names[k],
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
		fail(a, t->line, t->col, "expected ';' after the %s clause, got %s", asl_clause_names[k],
		     describe(t, d, sizeof(d)));
	next(a);
}

static void apply_pragmas(struct asl *a, struct property *pr, size_t off)
{
	for (uint32_t i = 0; i < pr->nr_params; i++) {
		struct param *p = &pr->params[i];

		if (ASL_IS_CTX(p->type) || p->has_def)
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
	struct property *pr = asl_alloc(a, sizeof(*pr));
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
		if (ASL_IS_CTX(pr->params[i].type))
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
			     asl_clause_names[k]);
	return pr;
}

void asl_parse(struct asl *a)
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
		a->props = asl_grow(a, a->props, a->nr_props, sizeof(*a->props));
		a->props[a->nr_props++] = pr;
	}
	if (!a->nr_props)
		fail(a, peek(a)->line, peek(a)->col, "no property in the file: expected 'property "
		     "NAME(ParPerf pp, float t) { ... }'");
}
