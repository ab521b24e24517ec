/*
 * prop_c.c - C property plugins for the loader tests, one source built
 * several ways (-DVARIANT=...):
 *   good       a valid property "CWriteHeavy" (the current ABI)
 *   abi2       the same descriptor claiming the next plugin ABI version
 *   abi3       the same descriptor as a plugin built against ABI 3 says it
 *              (the last version whose contexts embedded the metric arrays)
 *   newer      struct_size larger than the agent's, with a non-zero tail
 *   newer_zero struct_size larger, tail all zero (accepted)
 *   older      struct_size that ends before evaluate() (refused: no evaluate)
 *   crash      "CCrashes": evaluate() writes through a null pointer on the
 *              first object context it is given (a buggy plugin)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ameba/plugin.h"

#define V_GOOD 1
#define V_ABI2 2
#define V_NEWER 3
#define V_NEWER_ZERO 4
#define V_OLDER 5
#define V_CRASH 6
#define V_ABI3 7

#ifndef VARIANT
#define VARIANT V_GOOD
#endif

static const int needs[] = { AMEBA_M_WRITES, AMEBA_M_MEM_REF };
static const struct ameba_param params[] = {
	{ "threshold", AMEBA_PARAM_DOUBLE, "0.4", "share of an object's accesses that write" },
};

/* Holds when at least `threshold` of the object's accesses are writes. */
static int evaluate(const struct ameba_context *ctx, const struct ameba_params *p,
		    struct ameba_verdict *out)
{
	const char *t = ameba_param_get(p, "threshold");
	double threshold = t ? strtod(t, NULL) : 0.4;
	double refs = ctx->values[AMEBA_M_MEM_REF], wr = ctx->values[AMEBA_M_WRITES];

#if VARIANT == V_CRASH
	volatile int *volatile nowhere = NULL;

	if (ctx->kind == AMEBA_CTX_OBJECT)
		*nowhere = 1;	/* SIGSEGV */
#endif
	out->holds = refs > 0 && wr / refs >= threshold;
	out->confidence = ctx->confidence;
	out->severity = ctx->program[AMEBA_M_MEM_REF] > 0 ? wr / ctx->program[AMEBA_M_MEM_REF] : 0;
	snprintf(out->evidence, sizeof(out->evidence), "%.0f%% of its accesses write",
		 refs > 0 ? 100 * wr / refs : 0);
	snprintf(out->advice, sizeof(out->advice), "keep per-thread copies and merge them");
	return 0;
}

/* its symptoms (the `explains` appended to the descriptor) */
static const char *const explains[] = { "ThreadWriteMissRate", NULL };

struct desc_plus {
	struct ameba_property_desc d;
	uint64_t tail[4];
};

static const struct desc_plus desc = {
	.d = {
#if VARIANT == V_ABI2
		.abi_version = AMEBA_PLUGIN_ABI_VERSION + 1,
#elif VARIANT == V_ABI3
		.abi_version = 3,
#else
		.abi_version = AMEBA_PLUGIN_ABI_VERSION,
#endif
#if VARIANT == V_NEWER || VARIANT == V_NEWER_ZERO
		.struct_size = sizeof(struct desc_plus),
#elif VARIANT == V_OLDER
		.struct_size = offsetof(struct ameba_property_desc, evaluate),
#else
		.struct_size = sizeof(struct ameba_property_desc),
#endif
#if VARIANT == V_CRASH
		.name = "CCrashes",
#else
		.name = "CWriteHeavy",
#endif
		.summary = "most accesses to the object write it",
		.ctx_kind = AMEBA_CTX_OBJECT,
		.needs = needs,
		.nr_needs = 2,
		.params = params,
		.nr_params = 1,
		.evaluate = evaluate,
		.explains = explains,
	},
#if VARIANT == V_NEWER
	.tail = { 0, 42, 0, 0 },
#endif
};

AMEBA_API const struct ameba_property_desc *ameba_property_entry(void)
{
	return &desc.d;
}
