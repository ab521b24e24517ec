/*
 * test_asl.c - unit tests of the ASL front-end (agent/asl.c): ASL text is
 * written to a file, loaded by agent_plugins_add_file() (compiled to Lua,
 * loaded into the sandbox) and evaluated by agent_property_eval() on
 * hand-made contexts; the values are computed by hand in the comments.
 * Malformed texts must be refused with the exact "file:line:col: message".
 *
 * usage: test_asl SRC_DIR   (the source tree, for the shipped .asl files)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "asl.h"
#include "check.h"
#include "plugins.h"
#include "search.h"

static const char *src_dir;
static char tmp_dir[256];

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		perror(path);
		exit(2);
	}
	fputs(text, f);
	fclose(f);
}

/* ---- a hand-made object context of up to 8 threads ---- */

struct hand_ctx {
	struct ameba_context c;
	struct ameba_context_data d;	/* c's metric vectors */
	struct ameba_object obj;
	uint32_t ids[8];
	double pt[AMEBA_M_NR][8];
};

static void hand_init(struct hand_ctx *h, uint32_t nr_threads)
{
	memset(h, 0, sizeof(*h));
	ameba_context_init(&h->c, &h->d);
	h->obj.name = "cells";
	h->obj.site = "alloc_cells@imbalance.c:47";
	h->obj.kind = AMEBA_OBJ_HEAP;
	h->obj.sz_bytes = 1 << 24;
	h->obj.nr_blocks = 1;
	h->obj.live = 1;
	h->c.kind = AMEBA_CTX_OBJECT;
	h->c.object = &h->obj;
	h->c.nr_threads = nr_threads;
	h->c.thread_ids = h->ids;
	h->c.confidence = 1;
	for (uint32_t t = 0; t < nr_threads; t++)
		h->ids[t] = t;
}

/* Metric m measured: per-thread values, the context's total, the program's. */
static void hand_set(struct hand_ctx *h, int m, const double *pt, double program)
{
	h->d.has[m] = 1;
	h->d.per_thread[m] = h->pt[m];
	h->d.values[m] = 0;
	for (uint32_t t = 0; t < h->c.nr_threads; t++) {
		h->pt[m][t] = pt[t];
		h->d.values[m] += pt[t];
	}
	h->d.program[m] = program;
}

static int warned(const struct agent_plugins *pl, const char *a, const char *b)
{
	for (uint32_t i = 0; i < pl->nr_warnings; i++)
		if (strstr(pl->warnings[i], a) && (!b || strstr(pl->warnings[i], b)))
			return 1;
	return 0;
}

/* Loads one file and links with --property NAME[:k=v] selections. */
static void load_selected(struct agent_plugins *pl, const char *path, const char *const *specs,
			  uint32_t nr)
{
	char err[256];

	agent_plugins_init(pl);
	pl->quiet = 1;
	CHECK(agent_plugins_add_file(pl, path, 1) == 0);
	CHECK(agent_plugins_link(pl, specs, nr, err, sizeof(err)) == 0);
}

/* ---- seed 004's property as printed ---- */

static void test_seed004(void)
{
	char path[512], err[256];
	struct agent_plugins pl;
	struct agent_property *p;
	struct agent_verdict v;
	struct hand_ctx h;
	/* T0: 125 of 1000 miss (0.125); T1-T3: 125 of 2000 (0.0625) */
	static const double refs[4] = { 1000, 2000, 2000, 2000 };
	static const double miss[4] = { 125, 125, 125, 125 };
	static const double cycles[4] = { 3000, 1000, 1000, 1000 };
	static const double even[4] = { 125, 250, 250, 250 };

	snprintf(path, sizeof(path), "%s/properties/examples/seed004_unbalanced_l1.asl", src_dir);
	agent_plugins_init(&pl);
	pl.quiet = 1;
	CHECK(agent_plugins_add_file(&pl, path, 1) == 0);
	CHECK_EQ_U64(pl.nr_warnings, 0);
	CHECK(agent_plugins_link(&pl, NULL, 0, err, sizeof(err)) == 0);
	p = agent_plugins_property(&pl, "UnbalancedLC1DataMissRateInThreads");
	CHECK(p != NULL);
	if (!p) {
		agent_plugins_destroy(&pl);
		return;
	}
	CHECK(p->lang == AGENT_PROP_LUA && p->ctx_kind == AMEBA_CTX_OBJECT && !p->refines);
	CHECK_STR(p->summary, "ASL: max(max-mean, mean-min) > t");
	CHECK_EQ_U64(p->nr_needs, 3);
	CHECK(p->needs[0] == AMEBA_M_L1D_MISS && p->needs[1] == AMEBA_M_MEM_REF &&
	      p->needs[2] == AMEBA_M_EST_CYCLES);
	CHECK(p->nr_params == 1 && !strcmp(p->params[0].name, "t") &&
	      p->params[0].type == AMEBA_PARAM_DOUBLE && !strcmp(p->params[0].def, "0.02"));

	/*
	 * rates 0.125, 0.0625 x 3: the range 0..nrThreads is clipped to the
	 * four threads, mean = 0.3125 / 4 = 0.078125; max - mean = 0.046875 >
	 * t = 0.02. severity = 0.046875 * parT[0] = 0.046875 * 3000 / 12000.
	 */
	hand_init(&h, 4);
	hand_set(&h, AMEBA_M_MEM_REF, refs, 7000);
	hand_set(&h, AMEBA_M_L1D_MISS, miss, 500);
	hand_set(&h, AMEBA_M_EST_CYCLES, cycles, 12000);
	CHECK(agent_property_eval(&pl, p, &h.c, AMEBA_M_L1D_MISS, &v) == 0);
	CHECK(v.v.holds == 1);
	CHECK_NEAR(v.v.severity, 0.046875 * 0.25);
	CHECK_NEAR(v.v.confidence, 1.0);
	CHECK_STR(v.v.evidence, "mean=0.0781, max=0.125, min=0.0625, t=0.02");
	/* default threads: those with >= 1% of the busiest's l1d_miss (the first need) */
	CHECK_EQ_U64(v.nr_threads, 4);

	/* a thread with no references has a miss rate of 0 (a / 0 is 0):
	 * 0.125, 0.0625 x 2, 0: mean 0.0625, max - mean = 0.0625 */
	{
		static const double refs0[4] = { 1000, 2000, 2000, 0 };
		static const double miss0[4] = { 125, 125, 125, 0 };

		hand_set(&h, AMEBA_M_MEM_REF, refs0, 5000);
		hand_set(&h, AMEBA_M_L1D_MISS, miss0, 375);
		CHECK(agent_property_eval(&pl, p, &h.c, AMEBA_M_L1D_MISS, &v) == 0);
		CHECK(v.v.holds == 1);
		CHECK_NEAR(v.v.severity, 0.0625 * 0.25);
		CHECK_STR(v.v.evidence, "mean=0.0625, max=0.125, min=0, t=0.02");
	}

	/* balanced rates (0.125 each): no deviation, the condition is false */
	hand_set(&h, AMEBA_M_MEM_REF, refs, 7000);
	hand_set(&h, AMEBA_M_L1D_MISS, even, 625);
	CHECK(agent_property_eval(&pl, p, &h.c, AMEBA_M_L1D_MISS, &v) == 0);
	CHECK(v.v.holds == 0);

	/* t from --property NAME:t=0.05: 0.046875 is under it; 0.04 is not */
	{
		static const char *const specs[] = { "UnbalancedLC1DataMissRateInThreads:t=0.05",
						     "UnbalancedLC1DataMissRateInThreads:t=0.04" };

		hand_set(&h, AMEBA_M_L1D_MISS, miss, 500);
		for (int i = 0; i < 2; i++) {
			struct agent_plugins pl2;
			struct agent_property *q;

			load_selected(&pl2, path, &specs[i], 1);
			q = agent_plugins_property(&pl2, "UnbalancedLC1DataMissRateInThreads");
			CHECK(q && agent_property_eval(&pl2, q, &h.c, AMEBA_M_L1D_MISS, &v) == 0);
			CHECK(v.v.holds == i);
			if (i)
				CHECK_STR(v.v.evidence, "mean=0.0781, max=0.125, min=0.0625, t=0.04");
			agent_plugins_destroy(&pl2);
		}
	}

	/* the count backend (no l1d_miss, no est_cycles): not evaluated */
	hand_init(&h, 4);
	hand_set(&h, AMEBA_M_MEM_REF, refs, 7000);
	CHECK(agent_property_eval(&pl, p, &h.c, AMEBA_M_MEM_REF, &v) == 1);
	CHECK(!p->disabled);
	agent_plugins_destroy(&pl);
}

/*
 * The default, corrected seed-004 rule (properties/seed004_unbalanced_l1.asl,
 * ConcPerf): only the object's concurrent users are compared. The verbatim
 * example fires on the first three contexts; the corrected rule does not.
 */
static void test_seed004_corrected(void)
{
	char path[512], verbatim[512], err[256];
	struct agent_plugins pl, plv;
	struct agent_property *p, *pv;
	struct agent_verdict v;
	struct hand_ctx h;
	static const double refs[4] = { 1000, 2000, 2000, 2000 };
	static const double miss[4] = { 125, 125, 125, 125 };
	static const double walk_refs[4] = { 8000, 0, 0, 0 };
	static const double walk_miss[4] = { 1000, 0, 0, 0 };
	static const double cyc[4] = { 3000, 1000, 1000, 1000 };
	/* main touches it 10 times (under 5% of the mean); T3 misses 20% */
	static const double skew_refs[4] = { 10, 2000, 2000, 2000 };
	static const double skew_miss[4] = { 1, 125, 125, 400 };
	static const double skew_stall[4] = { 100, 12500, 12500, 40000 };
	/* phases: T1, T2 (earlier, 0.0625 and 0.2) and T3, T4 (now, balanced) */
	static const double ph_refs[5] = { 0, 2000, 2000, 4000, 4000 };
	static const double ph_miss[5] = { 0, 125, 400, 250, 250 };
	static const double ph_cyc[5] = { 0, 1000, 1000, 1000, 1000 };
	static const struct agent_thread_life lives[5] = {
		{ 1, 1, 9 }, { 1, 1, 3 }, { 1, 1, 3 }, { 4, 4, 9 }, { 4, 4, 9 },
	};

	snprintf(path, sizeof(path), "%s/properties/seed004_unbalanced_l1.asl", src_dir);
	snprintf(verbatim, sizeof(verbatim), "%s/properties/examples/seed004_unbalanced_l1.asl",
		 src_dir);
	agent_plugins_init(&pl);
	pl.quiet = 1;
	CHECK(agent_plugins_add_file(&pl, path, 1) == 0);
	CHECK_EQ_U64(pl.nr_warnings, 0);
	CHECK(agent_plugins_link(&pl, NULL, 0, err, sizeof(err)) == 0);
	load_selected(&plv, verbatim, NULL, 0);
	p = agent_plugins_property(&pl, "UnbalancedLC1DataMissRateInThreads");
	pv = agent_plugins_property(&plv, "UnbalancedLC1DataMissRateInThreads");
	CHECK(p != NULL && pv != NULL);
	if (!p || !pv)
		goto out;

	/* main initialised the table (0.125), three balanced workers (0.0625) */
	hand_init(&h, 4);
	hand_set(&h, AMEBA_M_MEM_REF, refs, 7000);
	hand_set(&h, AMEBA_M_L1D_MISS, miss, 500);
	hand_set(&h, AMEBA_M_EST_CYCLES, cyc, 12000);
	hand_set(&h, AMEBA_M_EST_STALL_CYCLES, cyc, 12000);
	CHECK(agent_property_eval(&plv, pv, &h.c, AMEBA_M_L1D_MISS, &v) == 0 && v.v.holds);
	CHECK(agent_property_eval(&pl, p, &h.c, AMEBA_M_L1D_MISS, &v) == 0);
	CHECK(v.v.holds == 0);

	/* a single-threaded walk in a 4-thread program */
	hand_set(&h, AMEBA_M_MEM_REF, walk_refs, 8000);
	hand_set(&h, AMEBA_M_L1D_MISS, walk_miss, 1000);
	CHECK(agent_property_eval(&plv, pv, &h.c, AMEBA_M_L1D_MISS, &v) == 0 && v.v.holds);
	CHECK(agent_property_eval(&pl, p, &h.c, AMEBA_M_L1D_MISS, &v) == 0);
	CHECK(v.v.holds == 0);

	/*
	 * two phases of two workers each; the current ones (T3, T4: 4000
	 * accesses each, the busiest) are balanced; T1 and T2 ended (last seen
	 * alive in snapshot 3) before T3 and T4 started (first seen in 4)
	 */
	hand_init(&h, 5);
	hand_set(&h, AMEBA_M_MEM_REF, ph_refs, 12000);
	hand_set(&h, AMEBA_M_L1D_MISS, ph_miss, 1025);
	hand_set(&h, AMEBA_M_EST_CYCLES, ph_cyc, 4000);
	hand_set(&h, AMEBA_M_EST_STALL_CYCLES, ph_cyc, 4000);
	pl.lives = plv.lives = lives;
	pl.nr_lives = plv.nr_lives = 5;
	pl.max_alive = plv.max_alive = 2;
	CHECK(agent_property_eval(&plv, pv, &h.c, AMEBA_M_L1D_MISS, &v) == 0 && v.v.holds);
	CHECK(agent_property_eval(&pl, p, &h.c, AMEBA_M_L1D_MISS, &v) == 0);
	CHECK(v.v.holds == 0);
	/* without the lifetimes the four workers are compared: T2 misses 20% */
	pl.lives = NULL;
	pl.nr_lives = 0;
	CHECK(agent_property_eval(&pl, p, &h.c, AMEBA_M_L1D_MISS, &v) == 0);
	CHECK(v.v.holds == 1);

	/*
	 * a real imbalance: T3 misses 20% of its accesses, T1 and T2 6.25%;
	 * main (10 accesses, under 5% of the mean 1502.5) is not a user. mean
	 * rate 0.108333, max - mean 0.091667; severity: 0.091667 x 2000 mean
	 * accesses x 100 stall cycles per miss (65,100 / 651) over 10^6 cycles
	 */
	hand_init(&h, 4);
	hand_set(&h, AMEBA_M_MEM_REF, skew_refs, 7000);
	hand_set(&h, AMEBA_M_L1D_MISS, skew_miss, 700);
	hand_set(&h, AMEBA_M_EST_CYCLES, cyc, 1000000);
	hand_set(&h, AMEBA_M_EST_STALL_CYCLES, skew_stall, 200000);
	CHECK(agent_property_eval(&pl, p, &h.c, AMEBA_M_L1D_MISS, &v) == 0);
	CHECK(v.v.holds == 1);
	CHECK_NEAR(v.v.severity, (0.2 - 0.325 / 3) * 2000 * 100 / 1e6);
	CHECK_STR(v.v.evidence, "3 concurrent users: mean=0.108, max=0.2, min=0.0625, t=0.02");
out:
	agent_plugins_destroy(&plv);
	agent_plugins_destroy(&pl);
}

/* ---- valid inputs: compiled, loaded and evaluated ---- */

/*
 * The context of every row: 4 threads,
 *   mem_ref    100  200  300  400   (1000; program 2000)
 *   l1d_miss    10   20   30   80   (140;  program 200)
 *   est_cycles 1000 2000 3000 4000  (10000; program 20000)
 */
static void row_ctx(struct hand_ctx *h)
{
	static const double refs[4] = { 100, 200, 300, 400 };
	static const double miss[4] = { 10, 20, 30, 80 };
	static const double cyc[4] = { 1000, 2000, 3000, 4000 };

	hand_init(h, 4);
	hand_set(h, AMEBA_M_MEM_REF, refs, 2000);
	hand_set(h, AMEBA_M_L1D_MISS, miss, 200);
	hand_set(h, AMEBA_M_EST_CYCLES, cyc, 20000);
}

#define P0 "property P(ParPerf pp, float t) {\n"
#define PC "  condition: 1 > 0;\n"

static void test_valid(void)
{
	static const struct {
		int line;
		const char *text;
		int holds;
		double severity;
		const char *evidence, *advice;	/* NULL: not checked */
	} rows[] = {
		/* precedence: 1 + 6 - 2 - (-1) = 6 */
		{ __LINE__, P0 PC "  severity: (1 + 2 * 3 - 4 / 2 - -1) / 10;\n}\n", 1, 0.6 },
		{ __LINE__, P0 PC "  severity: (1 + 2) * 3 / 10 - 0.5 * 2 / 2;\n}\n", 1, 0.4 },
		/* totals and the program's totals: 140 / 200 */
		{ __LINE__, P0 PC "  severity: pp.l1d_miss / pp.program.lc1_miss;\n}\n", 1, 0.7 },
		/* per-thread values, 0-based: 80 / 400 */
		{ __LINE__, P0 PC "  severity: pp.lc1_miss[3] / pp.mem_ref[3];\n}\n", 1, 0.2 },
		/* an inclusive range: threads 0 and 1, 300 / 1000 */
		{ __LINE__, P0 PC "  severity: sum(pp.mem_ref[0],...,pp.mem_ref[1]) / 1000;\n}\n", 1,
		  0.3 },
		/* up to the count: clipped to the 4 threads, 1000 / 10000 */
		{ __LINE__, P0 PC "  severity: sum(pp.mem_ref[0],...,pp.mem_ref[pp.nrThreads]) / 10000;\n}\n",
		  1, 0.1 },
		/* a negative first index is clipped too */
		{ __LINE__, P0 PC "  severity: sum(pp.mem_ref[0 - 2],...,pp.mem_ref[0]) / 1000;\n}\n", 1,
		  0.1 },
		/* the index in two places: rates 0.1 0.1 0.1 0.2, mean 0.125 */
		{ __LINE__, P0 PC "  severity: mean(pp.l1d_miss[0] / pp.mem_ref[0],...,"
			    "pp.l1d_miss[3] / pp.mem_ref[3]);\n}\n", 1, 0.125 },
		{ __LINE__, P0 PC "  severity: max(0.2, 0.3) - min(0.1, 0.05);\n}\n", 1, 0.25 },
		/* terms around a range: 1 + 300 + 2 */
		{ __LINE__, P0 PC "  severity: sum(1, pp.mem_ref[0],...,pp.mem_ref[1], 2) / 1000;\n}\n",
		  1, 0.303 },
		/* functions of two parameters: 300 * 0.001 */
		{ __LINE__, P0 "  let f(int i, float s) = pp.mem_ref[i] * s;\n  in\n" PC
			    "  severity: f(2, 0.001);\n}\n", 1, 0.3 },
		/* nested ranges: g(i) = misses of threads 0..i: 10 + 30 + 60 + 140 */
		{ __LINE__, P0 "  let g(int i) = sum(pp.l1d_miss[0],...,pp.l1d_miss[i]);\n"
			    "      all = sum(g(0),...,g(pp.nrThreads - 1));\n  in\n" PC
			    "  severity: all / 1000;\n}\n", 1, 0.24 },
		/* a / 0 is 0 */
		{ __LINE__, P0 PC "  severity: 1 / (pp.nrThreads - 4) + 0.5;\n}\n", 1, 0.5 },
		/* parT: thread 2's share of the program's cycles, and the context's */
		{ __LINE__, P0 PC "  severity: pp.parT[2] + pp.parT;\n}\n", 1, 0.15 + 0.5 },
		/* the cost model: cycles saved / the program's est_cycles, half
		 * the context's cycles of a context with half the program's */
		{ __LINE__, P0 PC "  severity: severity_of(pp.est_cycles / 2);\n}\n", 1, 0.25 },
		{ __LINE__, P0 PC "  severity: severity_of(0 - pp.est_cycles);\n}\n", 1, 0 },
		{ __LINE__, P0 PC "  severity: sqrt(abs(-0.25)) + pp.nrThreads / 100;\n}\n", 1, 0.54 },
		/* booleans, both spellings */
		{ __LINE__, P0 "  condition: not (1 > 2) and (2 >= 2 || 0 == 1) && !(1 != 1);\n"
			    "  severity: 0.5;\n}\n", 1, 0.5 },
		{ __LINE__, P0 "  condition: 1 > 2 or 3 <= 2;\n  severity: 0.5;\n}\n", 0, 0 },
		{ __LINE__, P0 "  condition: (1 < 2) == (3 < 4);\n  severity: 0.5;\n}\n", 1, 0.5 },
		/* parameter defaults: in the list, from a comment, built in */
		{ __LINE__, "property P(ParPerf pp, float t = 0.3, int n = 2) {\n" PC
			    "  severity: t + n / 10;\n}\n", 1, 0.5 },
		{ __LINE__, "// default: t=0.4\n" P0 PC "  severity: t;\n}\n", 1, 0.4 },
		{ __LINE__, "// default: t=0.4\n// default: t=0.35, n=-1\n"
			    "property P(ParPerf pp, float t, int n) {\n" PC
			    "  severity: t + n / 10;\n}\n", 1, 0.25 },
		{ __LINE__, P0 PC "  severity: t;\n}\n", 1, 0.05 },
		/* a value named like a built-in still calls the built-in, as in seed 004 */
		{ __LINE__, P0 "  let max = max(0.1, 0.2);\n      min = min(max, 0.15);\n  in\n" PC
			    "  severity: max(max, min) + min;\n}\n", 1, 0.35, "max=0.2, min=0.15, t=0.05" },
		/* comments, no let, no confidence, advice and evidence with {expr} */
		{ __LINE__, "/* a\n block */ property P(ParPerf pp) { // trailing\n" PC
			    "  severity: 0.5;\n"
			    "  evidence: \"thread {3} misses {pp.lc1_miss[3] / pp.mem_ref[3]} \" "
			    "\"of {pp.mem_ref[3]} refs\";\n"
			    "  advice: \"pad {{the}} array\\n\" }\n", 1, 0.5,
		  "thread 3 misses 0.2 of 400 refs", "pad {the} array\n" },
	};
	char path[512];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct agent_plugins pl;
		struct agent_property *p;
		struct agent_verdict v;
		struct hand_ctx h;
		char err[256];
		int rc;

		snprintf(path, sizeof(path), "%s/valid%zu.asl", tmp_dir, i);
		write_file(path, rows[i].text);
		agent_plugins_init(&pl);
		pl.quiet = 1;
		rc = agent_plugins_add_file(&pl, path, 1);
		if (rc && pl.nr_warnings)
			fprintf(stderr, "row %d: %s\n", rows[i].line, pl.warnings[0]);
		CHECK_AT(rows[i].line, rc == 0);
		CHECK_AT(rows[i].line, agent_plugins_link(&pl, NULL, 0, err, sizeof(err)) == 0);
		p = agent_plugins_property(&pl, "P");
		CHECK_AT(rows[i].line, p != NULL);
		if (!p) {
			agent_plugins_destroy(&pl);
			continue;
		}
		row_ctx(&h);
		rc = agent_property_eval(&pl, p, &h.c, AMEBA_M_L1D_MISS, &v);
		if (rc)
			fprintf(stderr, "row %d: eval %d: %s\n", rows[i].line, rc,
				p->error ? p->error : "");
		CHECK_AT(rows[i].line, rc == 0);
		CHECK_AT(rows[i].line, v.v.holds == rows[i].holds);
		if (rows[i].holds) {
			if (fabs(v.v.severity - rows[i].severity) > 1e-9)
				fprintf(stderr, "row %d: severity %.12g, want %.12g\n", rows[i].line,
					v.v.severity, rows[i].severity);
			CHECK_AT(rows[i].line, fabs(v.v.severity - rows[i].severity) <= 1e-9);
		}
		if (rows[i].evidence) {
			if (strcmp(v.v.evidence, rows[i].evidence))
				fprintf(stderr, "row %d: evidence \"%s\"\n", rows[i].line, v.v.evidence);
			CHECK_AT(rows[i].line, !strcmp(v.v.evidence, rows[i].evidence));
		}
		if (rows[i].advice) {
			if (strcmp(v.v.advice, rows[i].advice))
				fprintf(stderr, "row %d: advice \"%s\"\n", rows[i].line, v.v.advice);
			CHECK_AT(rows[i].line, !strcmp(v.v.advice, rows[i].advice));
		}
		agent_plugins_destroy(&pl);
	}
}

/* Two properties in one file, one refining the other; confidence; selections. */
static void test_refines(void)
{
	static const char text[] =
		"property Wide(ParPerf pp, float t = 0.05) {\n"
		"  condition: pp.l1d_miss / pp.mem_ref > t;\n"
		"  confidence: 0.5;\n"
		"  severity: pp.l1d_miss / pp.program.l1d_miss;\n"
		"}\n"
		"property Narrow(ParPerf pp, float t = 0.15) refines Wide {\n"
		"  let rate(int i) = pp.l1d_miss[i] / pp.mem_ref[i];\n"
		"  in\n"
		"  condition: max(rate(0),...,rate(pp.nrThreads)) > t;\n"
		"  severity: max(rate(0),...,rate(pp.nrThreads));\n"
		"  advice: \"{pp.nrThreads} threads\";\n"
		"}\n";
	struct agent_plugins pl;
	struct agent_findings f = { 0 };
	struct agent_property *w, *n;
	struct hand_ctx h;
	char path[512], err[256];

	snprintf(path, sizeof(path), "%s/two.asl", tmp_dir);
	write_file(path, text);
	agent_plugins_init(&pl);
	pl.quiet = 1;
	CHECK(agent_plugins_add_file(&pl, path, 1) == 0);
	CHECK(agent_plugins_link(&pl, NULL, 0, err, sizeof(err)) == 0);
	w = agent_plugins_property(&pl, "Wide");
	n = agent_plugins_property(&pl, "Narrow");
	CHECK(w && n && n->parent == w && !strcmp(n->refines, "Wide") && n->depth == 1);
	CHECK(w && !strcmp(w->path, path));
	/* rate 0.14 > 0.05; max thread rate 0.2 > 0.15: Narrow, refined from Wide */
	row_ctx(&h);
	CHECK(agent_evaluate(&pl, &h.c, 1, AMEBA_M_L1D_MISS, &f) == 0);
	CHECK_EQ_U64(f.nr, 1);
	if (f.nr == 1) {
		CHECK_STR(f.v[0].property, "Narrow");
		CHECK_STR(f.v[0].refined_from, "Wide");
		CHECK_NEAR(f.v[0].severity, 0.2);
		CHECK_STR(f.v[0].advice, "4 threads");
	}
	agent_findings_free(&f);
	agent_plugins_destroy(&pl);
	/* Narrow under its threshold: Wide alone, with its confidence */
	{
		static const char *const specs[] = { "Wide", "Narrow:t=0.3" };

		load_selected(&pl, path, specs, 2);
	}
	CHECK(agent_evaluate(&pl, &h.c, 1, AMEBA_M_L1D_MISS, &f) == 0);
	CHECK_EQ_U64(f.nr, 1);
	if (f.nr == 1) {
		CHECK_STR(f.v[0].property, "Wide");
		CHECK_NEAR(f.v[0].severity, 0.7);
		CHECK_NEAR(f.v[0].confidence, 0.5);
	}
	agent_findings_free(&f);
	agent_plugins_destroy(&pl);
}

/* A run-time error: reported at the ASL line, the property disabled. */
static void test_runtime_error(void)
{
	static const char text[] =
		"property OutOfRange(ParPerf pp) {\n"
		"  let\n"
		"    last = pp.mem_ref[pp.nrThreads];\n"
		"  in\n"
		"  condition: last > 0;\n"
		"  severity: 1;\n"
		"}\n"
		"property Fine(ParPerf pp) {\n"
		"  condition: pp.mem_ref[pp.nrThreads - 1] > 0;\n"
		"  severity: 0.5;\n"
		"}\n";
	struct agent_plugins pl;
	struct agent_property *p, *q;
	struct agent_verdict v;
	struct hand_ctx h;
	char path[512], want[700], err[256];

	snprintf(path, sizeof(path), "%s/runtime.asl", tmp_dir);
	write_file(path, text);
	agent_plugins_init(&pl);
	pl.quiet = 1;
	CHECK(agent_plugins_add_file(&pl, path, 1) == 0);
	CHECK(agent_plugins_link(&pl, NULL, 0, err, sizeof(err)) == 0);
	p = agent_plugins_property(&pl, "OutOfRange");
	q = agent_plugins_property(&pl, "Fine");
	CHECK(p && q);
	if (!p || !q) {
		agent_plugins_destroy(&pl);
		return;
	}
	row_ctx(&h);
	CHECK(agent_property_eval(&pl, p, &h.c, AMEBA_M_L1D_MISS, &v) < 0);
	CHECK(p->disabled);
	snprintf(want, sizeof(want), "%s:3: pp.mem_ref[4]: no such thread index; the context has "
		 "4 threads, indexed 0..3", path);
	CHECK_HAS(p->error, want);
	CHECK(warned(&pl, want, "property OutOfRange disabled, the others continue"));
	/* the other property of the file goes on */
	CHECK(agent_property_eval(&pl, q, &h.c, AMEBA_M_L1D_MISS, &v) == 0);
	CHECK(v.v.holds == 1);
	CHECK_NEAR(v.v.severity, 0.5);
	agent_plugins_destroy(&pl);
}

/* ---- malformed inputs: the exact position and message ---- */

static void test_errors(void)
{
	static const struct {
		int line;
		const char *text, *want;	/* want follows "path:" */
	} rows[] = {
		{ __LINE__, "", "1:1: no property in the file: expected 'property NAME(ParPerf pp, "
			       "float t) { ... }'" },
		{ __LINE__, "proprety P(ParPerf pp) {}", "1:1: expected 'property', got 'proprety'" },
		{ __LINE__, "property (ParPerf pp) {}",
		  "1:10: expected the property's name after 'property', got '('" },
		{ __LINE__, "property P ParPerf pp) {}",
		  "1:12: expected '(' after the property's name, got 'ParPerf'" },
		{ __LINE__, "property P(Parperf pp) {}",
		  "1:12: unknown parameter type 'Parperf': expected ParPerf, SeqPerf, ConcPerf, int or float" },
		{ __LINE__, "property P(ParPerf pp float t) {}",
		  "1:23: expected ',' or ')' after parameter pp, got 'float'" },
		{ __LINE__, "property P(ParPerf pp, float t, int t) {}",
		  "1:37: parameter t is declared twice in P" },
		{ __LINE__, "property P(ParPerf pp, ParPerf qq) {}",
		  "1:32: P has a second context parameter qq; a property is evaluated on one context" },
		{ __LINE__, "property P(ParPerf pp = 1) {}",
		  "1:23: only int and float parameters of a property take a default" },
		{ __LINE__, "property P(int n = 0.5) {}",
		  "1:20: int parameter n has a default that is not an integer: 0.5" },
		{ __LINE__, "property P(ParPerf pp) refines {}",
		  "1:32: expected the name of the refined property after 'refines', got '{'" },
		{ __LINE__, "property P(ParPerf pp)\n  condition: 1 > 0;",
		  "2:3: expected '{' to open the property's body, got 'condition'" },
		/* seed 004's text with its ';' after a definition missing */
		{ __LINE__, "property P(ParPerf pp, float t){\n  let\n"
			    "    mean=sum(pp.mem_ref[0],...,pp.mem_ref[pp.nrThreads])/pp.nrThreads\n"
			    "  in\n    condition: mean > t;\n    severity: 1; }",
		  "4:3: expected ';' after the definition of mean, got 'in'" },
		{ __LINE__, "property P(ParPerf pp) {\n  let x = 1;\n  condition: x > 0;\n"
			    "  severity: 1;\n}",
		  "3:12: expected '=' after the defined name, got ':'" },
		{ __LINE__, "property P(ParPerf pp) {\n  let x = 1;\n      x = 2;\n  in\n}",
		  "3:7: x is defined twice (first at line 2)" },
		{ __LINE__, "property P(ParPerf pp, float t) {\n  let t = 1;\n  in\n}",
		  "2:7: t is already a parameter of P; give the definition another name" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: 1 >;\n  severity: 1;\n}",
		  "2:17: expected an expression, got ';'" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: (1 > 0;\n  severity: 1;\n}",
		  "2:20: expected ')' to close the '(', got ';'" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: 1 > 0\n  severity: 1;\n}",
		  "3:3: expected ';' after the condition clause, got 'severity'" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: 1 = 0;\n  severity: 1;\n}",
		  "2:16: '=' in an expression: compare with '=='" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: 0 < 1 < 2;\n  severity: 1;\n}",
		  "2:20: comparisons do not chain: write a < b and b < c" },
		{ __LINE__, "property P(ParPerf pp) {\n  condtion: 1 > 0;\n  severity: 1;\n}",
		  "2:3: expected a clause (condition, confidence, severity, advice or evidence) or "
		  "'}', got 'condtion'" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: 1 > 0;\n}",
		  "3:1: property P has no severity: clause" },
		{ __LINE__, "property P(ParPerf pp) {\n  severity: 1;\n  severity: 2;\n}",
		  "3:3: severity: is given twice (first at line 2)" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: 1 > 0;\n  severity: 1;\n",
		  "4:1: expected '}' to close property P (opened at line 1), got end of file" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: 1 > 0 $ 2;\n  severity: 1;\n}",
		  "2:20: unexpected character '$'" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: 1 > 0;\n  severity: 1;\n"
			    "  advice: \"pad it;\n}",
		  "4:11: unterminated string: a string ends with '\"' on the line where it starts" },
		{ __LINE__, "property P(ParPerf pp) { /* never closed\n condition: 1 > 0; }",
		  "1:26: unterminated comment: '/*' has no '*/'" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: 3x > 0;\n  severity: 1;\n}",
		  "2:14: malformed number '3x': a letter follows the digits" },
		/* semantic errors */
		{ __LINE__, "property P(ParPerf pp) {\n  condition: pp.mem_ref / 2;\n  severity: 1;\n}",
		  "2:14: the condition must be true or false, this is a number" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: 1 > 0;\n  severity: 1 > 0;\n}",
		  "3:13: the severity must be a number, this is true or false" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: 1 > 0 and 2;\n  severity: 1;\n}",
		  "2:24: an operand of 'and' must be true or false, this is a number" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: 1 + (2 > 1) > 0;\n  severity: 1;\n}",
		  "2:19: an operand of '+' must be a number, this is true or false" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: pp.l1_miss[0] > 0;\n  severity: 1;\n}",
		  "2:16: ParPerf pp has no field 'l1_miss'; fields are nrThreads, parT, program, "
		  "confidence, samples, window_s, lc1_miss, lc2_miss, lc3_miss (and _rd/_wr) and every "
		  "metric name of `ameba list metrics`" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: pp.nrThreads[0] > 0;\n  severity: 1;\n}",
		  "2:26: pp.nrThreads is a single value and cannot be indexed" },
		{ __LINE__, "property P(SeqPerf sp) {\n  condition: sp.mem_ref[0] > 0;\n  severity: 1;\n}",
		  "2:24: sp.mem_ref[...]: a SeqPerf context has no per-thread values; declare the "
		  "parameter as ParPerf" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: pp.program > 0;\n  severity: 1;\n}",
		  "2:16: pp.program is the program's totals: name a metric, e.g. pp.program.l1d_miss" },
		{ __LINE__, "property P(ParPerf pp, float t) {\n  condition: t.mem_ref > 0;\n  severity: 1;\n}",
		  "2:14: only a context parameter (ParPerf, SeqPerf, ConcPerf) has fields; '.mem_ref' follows a "
		  "number" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: pp > 0;\n  severity: 1;\n}",
		  "2:14: pp is a context: use one of its fields, e.g. pp.mem_ref[tid] or pp.nrThreads" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: mean > 0;\n  severity: 1;\n}",
		  "2:14: unknown name 'mean'" },
		{ __LINE__, "property P(ParPerf pp) {\n  let a = b + 1;\n      b = 2;\n  in\n"
			    "  condition: a > 0;\n  severity: 1;\n}",
		  "2:11: b is used before its definition; a definition may use only the ones above it" },
		{ __LINE__, "property P(ParPerf pp) {\n  let f(int i) = f(i - 1);\n  in\n"
			    "  condition: f(1) > 0;\n  severity: 1;\n}",
		  "2:18: f() calls itself; a definition may use only the ones above it" },
		{ __LINE__, "property P(ParPerf pp) {\n  let f(int i) = i;\n  in\n"
			    "  condition: f(1, 2) > 0;\n  severity: 1;\n}",
		  "4:14: f() takes 1 argument (defined at line 2), given 2" },
		{ __LINE__, "property P(ParPerf pp) {\n  let f(int i) = i;\n  in\n"
			    "  condition: f > 0;\n  severity: 1;\n}",
		  "4:14: f is a function (line 2): call it, f(...)" },
		{ __LINE__, "property P(ParPerf pp) {\n  let x = 1;\n  in\n"
			    "  condition: x(1) > 0;\n  severity: 1;\n}",
		  "4:14: x is a value (line 2), not a function" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: avg(1, 2) > 0;\n  severity: 1;\n}",
		  "2:14: unknown function avg(); the functions are sum, max, min, mean, abs, sqrt, "
		  "severity_of and those defined under let" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: sum(pp.mem_ref[0],...,pp.mem_ref[0]) > 0;\n"
			    "  severity: 1;\n}",
		  "2:32: sum(...): the terms around '...' must be the same expression but for the "
		  "index, e.g. f(0),...,f(pp.nrThreads); these two are identical" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: sum(pp.mem_ref[0],...,pp.l1d_miss[3]) > 0;\n"
			    "  severity: 1;\n}",
		  "2:48: sum(...): the terms around '...' differ in more than the index; only the index "
		  "may change from the first term to the last, e.g. f(0),...,f(pp.nrThreads)" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: sum(...,pp.mem_ref[0]) > 0;\n"
			    "  severity: 1;\n}",
		  "2:18: '...' must stand between two terms: sum(f(0),...,f(n))" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: sum(pp.mem_ref[0],...) > 0;\n"
			    "  severity: 1;\n}",
		  "2:32: '...' must be followed by the last term of the range: sum(f(0),...,f(n))" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: abs(1, 2) > 0;\n  severity: 1;\n}",
		  "2:14: abs() takes one argument" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: 1 > 0;\n  severity: 1;\n"
			    "  advice: \"use {pp.mem_ref[0] +} lines\";\n}",
		  "4:32: expected an expression, got end of file" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: 1 > 0;\n  severity: 1;\n"
			    "  advice: \"use {pp.mem_ref[0] lines\";\n}",
		  "4:16: '{' without '}' in the text; write '{{' for a brace" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: 1 > 0;\n  severity: 1;\n"
			    "  advice: \"use {nothing}\";\n}",
		  "4:17: unknown name 'nothing'" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: 1 > 0;\n  severity: 1;\n"
			    "  advice: 42;\n}",
		  "4:11: expected a string after advice:, e.g. advice: \"text with {expression}\"; "
		  "got '42'" },
		{ __LINE__, "// default: t 0.1\nproperty P(ParPerf pp, float t) {}",
		  "1:13: malformed default: write // default: NAME=NUMBER[, NAME=NUMBER], e.g. "
		  "// default: t=0.25" },
		{ __LINE__, "// default: n=0.5\nproperty P(ParPerf pp, int n) {\n  condition: n > 0;\n"
			    "  severity: 1;\n}",
		  "1:13: default for int parameter n of P is not an integer" },
		{ __LINE__, "property P(ParPerf pp) {\n  condition: 1 > 0;\n  severity: 1;\n}\n"
			    "property P(ParPerf pp) {\n  condition: 1 > 0;\n  severity: 1;\n}\n",
		  "5:1: property P is defined twice in this file (first at line 1)" },
	};
	char path[512];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct agent_plugins pl;
		char want[1024];
		int rc;

		snprintf(path, sizeof(path), "%s/bad%zu.asl", tmp_dir, i);
		write_file(path, rows[i].text);
		agent_plugins_init(&pl);
		pl.quiet = 1;
		rc = agent_plugins_add_file(&pl, path, 1);
		CHECK_AT(rows[i].line, rc == AMEBA_EINVAL);
		CHECK_AT(rows[i].line, pl.nr_props == 0);
		snprintf(want, sizeof(want), "%s:%s; property file not loaded, the others continue",
			 path, rows[i].want);
		if (pl.nr_warnings != 1 || strcmp(pl.warnings[0], want))
			fprintf(stderr, "row %d:\n  got  %s\n  want %s\n", rows[i].line,
				pl.nr_warnings ? pl.warnings[0] : "(no warning)", want);
		CHECK_AT(rows[i].line, pl.nr_warnings == 1 && !strcmp(pl.warnings[0], want));
		agent_plugins_destroy(&pl);
	}
}

/* The compiler's own interface: the Lua it writes keeps the ASL lines. */
static void test_compile_api(void)
{
	static const char text[] =
		"property A(ParPerf pp) {\n"
		"  condition: 1 > 0;\n"
		"  severity: 1;\n"
		"}\n"
		"\n"
		"property B(ParPerf pp) {\n"
		"  let\n"
		"    x = 2;\n"
		"  in\n"
		"  condition: x > 1;\n"
		"  severity: x / 4;\n"
		"}\n";
	struct asl_unit u;
	char msg[256];

	CHECK(asl_compile("two.asl", text, sizeof(text) - 1, &u, msg, sizeof(msg)) == 0);
	CHECK_EQ_U64(u.nr_props, 2);
	if (u.nr_props == 2) {
		const char *l = u.props[1].lua;
		int line = 1;

		CHECK_STR(u.props[0].name, "A");
		CHECK_STR(u.props[1].name, "B");
		CHECK(u.props[0].line == 1 && u.props[1].line == 6);
		CHECK(strlen(l) == u.props[1].lua_len);
		/* "local v_x" on line 8, the severity on line 11 */
		for (const char *s = l; *s && s < strstr(l, "local v_x"); s++)
			line += *s == '\n';
		CHECK_EQ_U64(line, 8);
		line = 1;
		for (const char *s = l; *s && s < strstr(l, "_r.severity"); s++)
			line += *s == '\n';
		CHECK_EQ_U64(line, 11);
	}
	asl_unit_free(&u);
	CHECK(u.nr_props == 0 && !u.props);
	CHECK(asl_compile("nul.asl", "property\0", 9, &u, msg, sizeof(msg)) == AMEBA_EINVAL);
	CHECK_STR(msg, "nul.asl:1:1: the file holds a NUL byte: an ASL property file is text");
	/* nesting is bounded (the parser recurses): 150 '(' or '-' */
	{
		static const char head[] = "property P(ParPerf pp) {\n  condition: ";
		char deep[512];
		size_t k = sizeof(head) - 1;

		for (int pass = 0; pass < 2; pass++) {
			memcpy(deep, head, k);
			memset(deep + k, pass ? '-' : '(', 150);
			snprintf(deep + k + 150, sizeof(deep) - k - 150, "1 > 0;\n  severity: 1;\n}\n");
			CHECK(asl_compile("deep.asl", deep, strlen(deep), &u, msg, sizeof(msg)) ==
			      AMEBA_EINVAL);
			/*
			 * The condition is level 1 and starts at column 14. Level 101
			 * starts after the 100th '(' (column 114), or at the 100th '-'
			 * (column 113: a '-' is a level of its own).
			 */
			CHECK_STR(msg, pass ? "deep.asl:2:113: expression nested more than 100 deep" :
				  "deep.asl:2:114: expression nested more than 100 deep");
		}
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_asl SRC_DIR\n");
		return 2;
	}
	src_dir = argv[1];
	snprintf(tmp_dir, sizeof(tmp_dir), "%s/ameba-asl-XXXXXX", getenv("TMPDIR") ?
		 getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmp_dir)) {
		perror("mkdtemp");
		return 2;
	}
	test_seed004();
	test_seed004_corrected();
	test_valid();
	test_refines();
	test_runtime_error();
	test_errors();
	test_compile_api();
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "note: could not remove %s\n", tmp_dir);
	}
	return check_done();
}
