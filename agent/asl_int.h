/*
 * asl_int.h - the ASL front-end's internals, shared by its parser
 * (asl_parse.c: tokens, trees, properties) and its code generator (asl.c).
 */
#ifndef AMEBA_AGENT_ASL_INT_H
#define AMEBA_AGENT_ASL_INT_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

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

/* `// default: NAME=VALUE` in a comment, at offset off of the text */
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

/*
 * Context types: ParPerf (seed 004: totals and per-thread arrays), SeqPerf
 * (totals only), ConcPerf (a ParPerf over the context's concurrent users
 * only: asl.users_view, docs/asl.md). Then the number types.
 */
enum ptype { P_PARPERF, P_SEQPERF, P_CONCPERF, P_INT, P_FLOAT };
#define ASL_IS_CTX(t) ((t) == P_PARPERF || (t) == P_SEQPERF || (t) == P_CONCPERF)

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

extern const char *const asl_clause_names[C_NR];

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

/* Reports "path:line:col: message" (rc: AMEBA_EINVAL, or AMEBA_ENOMEM) and
 * unwinds to asl_compile(). */
void asl_fail_rc(struct asl *a, int rc, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 5, 6), noreturn));
#define fail_rc asl_fail_rc
#define fail(a, line, col, ...) asl_fail_rc(a, AMEBA_EINVAL, line, col, __VA_ARGS__)

/* Allocations freed all at once when the compilation ends. */
void *asl_alloc(struct asl *a, size_t sz);
void *asl_grow(struct asl *a, void *arr, uint32_t nr, size_t elem);

/* Tokenises and parses the whole file into a->props (asl_parse.c). */
void asl_parse(struct asl *a);

#endif
