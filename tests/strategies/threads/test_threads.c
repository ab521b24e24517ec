/*
 * test_threads.c - unit tests of strategy chains and the `threads`
 * strategy over the scripted provider (provider_fake.c): the hand-over from
 * objects to threads, the seeds, the union of contexts, and the per-thread,
 * per-line and per-word figures with their exact values.
 *
 * usage: test_threads SRC_DIR STRATEGY_DIR TEST_DIR
 *   SRC_DIR       the source tree (properties/)
 *   STRATEGY_DIR  where objects.so and threads.so were built
 *   TEST_DIR      tests/strategies/threads (its test properties)
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "plugins.h"
#include "provider.h"
#include "search.h"

static const char *src_dir, *strategy_dir, *test_dir;

/*
 * The fake world, per interval (threads 1..4 are the workers):
 *   packed  heap @0x10000  64 B: thread t touches only [16(t-1), 16t):
 *           1000 writes, 1000 reads, 500 l1d misses, 400 coherence misses
 *           (all false) each
 *   table   global @0x20000 1 KiB: 3000 reads by each worker, 10 misses
 *   big     heap @0x40000 64 KiB: thread 1 touches only [4096, 4160): 160
 *           reads, 50 misses
 */
static struct agent_fake_object objs[3];
static const int metrics[] = { AMEBA_M_MEM_REF, AMEBA_M_READS, AMEBA_M_WRITES, AMEBA_M_L1D_MISS,
			       AMEBA_M_COH_MISS, AMEBA_M_COH_MISS_FALSE };

static void world(struct agent_fake_spec *spec)
{
	memset(objs, 0, sizeof(objs));
	objs[0].obj = (struct ameba_object){ 1, AMEBA_OBJ_HEAP, "alloc_counters@fs.c:10",
					     "alloc_counters@fs.c:10", 0x10000, 0x10040, 64, 1, 1 };
	for (int t = 1; t <= 4; t++) {
		double *r = objs[0].rates[t];

		r[AMEBA_M_WRITES] = 1000;
		r[AMEBA_M_READS] = 1000;
		r[AMEBA_M_MEM_REF] = 2000;
		r[AMEBA_M_L1D_MISS] = 500;
		r[AMEBA_M_COH_MISS] = 400;
		r[AMEBA_M_COH_MISS_FALSE] = 400;
		objs[0].span[t][0] = 0x10000 + 16 * (uintptr_t)(t - 1);
		objs[0].span[t][1] = objs[0].span[t][0] + 16;
	}
	objs[1].obj = (struct ameba_object){ 2, AMEBA_OBJ_GLOBAL, "table", NULL, 0x20000, 0x20400,
					     1024, 1, 1 };
	for (int t = 1; t <= 4; t++) {
		objs[1].rates[t][AMEBA_M_READS] = 3000;
		objs[1].rates[t][AMEBA_M_MEM_REF] = 3000;
		objs[1].rates[t][AMEBA_M_L1D_MISS] = 10;
	}
	objs[2].obj = (struct ameba_object){ 3, AMEBA_OBJ_HEAP, "make_big@fs.c:20", "make_big@fs.c:20",
					     0x40000, 0x50000, 65536, 1, 1 };
	objs[2].rates[1][AMEBA_M_READS] = 160;
	objs[2].rates[1][AMEBA_M_MEM_REF] = 160;
	objs[2].rates[1][AMEBA_M_L1D_MISS] = 50;
	objs[2].span[1][0] = 0x41000;
	objs[2].span[1][1] = 0x41040;

	memset(spec, 0, sizeof(*spec));
	spec->program = "/tmp/fs";
	spec->backend = "sim";
	spec->metrics = metrics;
	spec->nr_metrics = sizeof(metrics) / sizeof(metrics[0]);
	spec->objects = objs;
	spec->nr_objects = 3;
	spec->nr_threads = 5;
}

static void plugins(struct agent_plugins *pl)
{
	char path[1024], err[512];

	agent_plugins_init(pl);
	pl->quiet = 1;
	snprintf(path, sizeof(path), "%s/objects.so", strategy_dir);
	CHECK(agent_plugins_add_file(pl, path, 0) == 0);
	snprintf(path, sizeof(path), "%s/threads.so", strategy_dir);
	CHECK(agent_plugins_add_file(pl, path, 0) == 0);
	snprintf(path, sizeof(path), "%s/properties/hot_object.lua", src_dir);
	CHECK(agent_plugins_add_file(pl, path, 1) == 0);
	snprintf(path, sizeof(path), "%s/word_writers.lua", test_dir);
	CHECK(agent_plugins_add_file(pl, path, 1) == 0);
	snprintf(path, sizeof(path), "%s/object_extra.lua", test_dir);
	CHECK(agent_plugins_add_file(pl, path, 1) == 0);
	CHECK(agent_plugins_link(pl, NULL, 0, err, sizeof(err)) == 0);
}

static const struct agent_finding *find(const struct agent_search *s, const char *prop,
					const char *object, uint64_t line, uint32_t *nr)
{
	const struct agent_finding *hit = NULL;

	*nr = 0;
	for (uint32_t i = 0; i < s->findings.nr; i++) {
		const struct agent_finding *f = &s->findings.v[i];

		if (strcmp(f->property, prop) || (object && (!f->has_object ||
							    strcmp(f->object.name, object))) ||
		    (line && f->line != line))
			continue;
		if (!hit)
			hit = f;
		(*nr)++;
	}
	return hit;
}

static void params(struct agent_params *p, const char *spec)
{
	char *name = NULL, err[256];

	memset(p, 0, sizeof(*p));
	CHECK(agent_spec_parse(spec, &name, p, err, sizeof(err)) == 0);
	free(name);
}

/*
 * objects:rounds=3 finishes by itself and hands over; threads:rounds=2
 * surveys table (16 lines > max_lines=4) once and big (1024 lines) twice
 * (336 segments, then the 3 lines of the one that counted), measuring the
 * words of packed's line meanwhile, then measures words twice and stops.
 */
static void test_chain_complete(void)
{
	struct agent_fake_spec spec;
	struct agent_plugins pl;
	struct agent_search s;
	struct agent_params ga, gb;
	volatile sig_atomic_t stop = 0;
	const struct agent_finding *f;
	uint32_t nr;

	plugins(&pl);
	world(&spec);
	params(&ga, "objects:rounds=3");
	params(&gb, "threads:rounds=2,top=3,max_lines=4");
	memset(&s, 0, sizeof(s));
	s.pl = &pl;
	s.strat = agent_plugins_strategy(&pl, "objects");
	s.strat_given = &ga;
	s.strat_b = agent_plugins_strategy(&pl, "threads");
	s.strat_b_given = &gb;
	s.prov = agent_provider_fake_open(&spec);
	s.opts.interval_ms = 100;
	s.opts.primary_metric = -1;
	s.opts.stop = &stop;
	CHECK(s.strat && s.strat_b);
	CHECK(agent_search_run(&s) == 0);
	CHECK(s.end == AGENT_END_COMPLETE);
	CHECK(!s.partial);
	CHECK_EQ_U64(s.stage, 1);
	CHECK_EQ_U64(s.nr_iterations_a, 3);
	/* 3 of objects, 2 with surveys, 2 of words alone */
	CHECK_EQ_U64(s.nr_iterations, 7);
	CHECK_EQ_U64(agent_provider_fake_nr_experiments(s.prov), 7);
	CHECK(s.primary_metric == AMEBA_M_L1D_MISS);
	CHECK_STR(ameba_param_get(&s.strat_b_params.view, "metric"), "l1d_miss");
	/* the seeds: objects' program context and its 3 objects */
	CHECK_EQ_U64(s.nr_seeds, 4);
	/*
	 * Counters per experiment: 6 metrics x (program + 3 objects); the
	 * surveys: (l1d_miss, coh_miss) x segments (table: its 16 lines; big:
	 * (4096 / 2 - 32) / (2 x 3 targets) = 336 segments, then 3 lines); the
	 * chosen lines x (6 metrics + 8 words x 2).
	 */
	CHECK_EQ_U64(agent_provider_fake_nr_counters_at(s.prov, 4), 24 + 2 * (16 + 336) + 1 * 22);
	CHECK_EQ_U64(agent_provider_fake_nr_counters_at(s.prov, 5), 24 + 2 * 3 + (1 + 4) * 22);
	CHECK_EQ_U64(agent_provider_fake_nr_counters_at(s.prov, 6), 24 + (1 + 4 + 1) * 22);
	/*
	 * The union: 4 seeds (program + 3 objects, the objects replaced by
	 * threads' refinements) + 6 line contexts.
	 */
	CHECK_EQ_U64(s.nr_contexts, 4 + 6);

	/* one HotObject on packed: threads' context replaced objects' */
	f = find(&s, "HotObject", "alloc_counters@fs.c:10", 0, &nr);
	CHECK_EQ_U64(nr, 1);
	CHECK(f && f->ctx_kind == AMEBA_CTX_OBJECT);

	/* the object context: per-thread writes, and the words of its line */
	f = find(&s, "ObjectExtra", "alloc_counters@fs.c:10", 0, &nr);
	CHECK_EQ_U64(nr, 1);
	CHECK_STR(f ? f->evidence : NULL,
		  "writes=0/4000/4000/4000/4000 | line.0=6400,6400,16000;"
		  "w.1.0=2000,2000;w.1.8=2000,2000;w.2.16=2000,2000;w.2.24=2000,2000;"
		  "w.3.32=2000,2000;w.3.40=2000,2000;w.4.48=2000,2000;w.4.56=2000,2000;");
	/* each worker writes its own two words, all in one line */
	f = find(&s, "WordWriters", "alloc_counters@fs.c:10", 0x10000, &nr);
	CHECK_EQ_U64(nr, 1);
	CHECK_STR(f ? f->evidence : NULL, "coh=6400 false=6400 1:0/8 2:16/24 3:32/40 4:48/56");
	CHECK(f && f->ctx_kind == AMEBA_CTX_LINE);

	/* big: the survey found the one line thread 1 reads, at offset 4096 */
	f = find(&s, "WordWriters", "make_big@fs.c:20", 0, &nr);
	CHECK_EQ_U64(nr, 1);
	CHECK(f && f->line == 0x41000);
	f = find(&s, "ObjectExtra", "make_big@fs.c:20", 0, &nr);
	CHECK_STR(f ? f->evidence : NULL,
		  "writes=0/0/0/0/0 | line.4096=0,0,0;w.1.4096=0,40;w.1.4104=0,40;w.1.4112=0,40;"
		  "w.1.4120=0,40;w.1.4128=0,40;w.1.4136=0,40;w.1.4144=0,40;w.1.4152=0,40;");
	/* table: 4 of its 16 lines (all equal), read by four threads each */
	find(&s, "WordWriters", "table", 0, &nr);
	CHECK_EQ_U64(nr, 4);

	agent_search_free(&s);
	s.prov->ops->close(s.prov);
	agent_params_free(&ga);
	agent_params_free(&gb);
	agent_plugins_destroy(&pl);
}

/* The target exits while objects (which never finishes) runs: a's report. */
static void test_chain_exit_during_a(void)
{
	struct agent_fake_spec spec;
	struct agent_plugins pl;
	struct agent_search s;
	volatile sig_atomic_t stop = 0;
	uint32_t nr;

	plugins(&pl);
	world(&spec);
	spec.nr_intervals = 4;
	memset(&s, 0, sizeof(s));
	s.pl = &pl;
	s.strat = agent_plugins_strategy(&pl, "objects");
	s.strat_b = agent_plugins_strategy(&pl, "threads");
	s.prov = agent_provider_fake_open(&spec);
	s.opts.interval_ms = 100;
	s.opts.primary_metric = -1;
	s.opts.stop = &stop;
	CHECK(agent_search_run(&s) == 0);
	CHECK(s.end == AGENT_END_EXITED);
	CHECK_EQ_U64(s.stage, 0);
	CHECK_EQ_U64(s.nr_iterations, 4);
	CHECK_EQ_U64(s.nr_contexts, 4);	/* program + 3 objects */
	CHECK(find(&s, "HotObject", "alloc_counters@fs.c:10", 0, &nr) != NULL);
	CHECK(find(&s, "WordWriters", NULL, 0, &nr) == NULL);
	CHECK(s.nr_objects == 3 && !strcmp(s.objects[0].name, "alloc_counters@fs.c:10"));
	agent_search_free(&s);
	s.prov->ops->close(s.prov);
	agent_plugins_destroy(&pl);
}

/*
 * threads alone, object=NAME: no seeds; the object is found in the host's
 * tables. A bad parameter is refused before anything is measured.
 */
static void test_threads_alone(void)
{
	struct agent_fake_spec spec;
	struct agent_plugins pl;
	struct agent_search s;
	struct agent_params g;
	volatile sig_atomic_t stop = 0;
	const struct agent_finding *f;
	uint32_t nr;

	plugins(&pl);
	world(&spec);
	params(&g, "threads:object=alloc_counters@fs.c:10,rounds=1");
	memset(&s, 0, sizeof(s));
	s.pl = &pl;
	s.strat = agent_plugins_strategy(&pl, "threads");
	s.strat_given = &g;
	s.prov = agent_provider_fake_open(&spec);
	s.opts.interval_ms = 100;
	s.opts.primary_metric = -1;
	s.opts.stop = &stop;
	CHECK(agent_search_run(&s) == 0);
	CHECK(s.end == AGENT_END_COMPLETE);
	CHECK_EQ_U64(s.nr_iterations, 1);
	CHECK_EQ_U64(s.nr_contexts, 3);	/* program, packed, its line */
	f = find(&s, "WordWriters", "alloc_counters@fs.c:10", 0x10000, &nr);
	CHECK_STR(f ? f->evidence : NULL, "coh=1600 false=1600 1:0/8 2:16/24 3:32/40 4:48/56");
	agent_search_free(&s);
	s.prov->ops->close(s.prov);
	agent_params_free(&g);

	/* max_lines=0 is refused by create(), naming the parameter */
	params(&g, "threads:max_lines=0");
	memset(&s, 0, sizeof(s));
	s.pl = &pl;
	s.strat = agent_plugins_strategy(&pl, "threads");
	s.strat_given = &g;
	s.prov = agent_provider_fake_open(&spec);
	s.opts.interval_ms = 100;
	s.opts.primary_metric = -1;
	s.opts.stop = &stop;
	CHECK(agent_search_run(&s) == AMEBA_EINVAL);
	CHECK(strstr(s.error, "max_lines") != NULL);
	CHECK_EQ_U64(agent_provider_fake_nr_experiments(s.prov), 0);
	agent_search_free(&s);
	s.prov->ops->close(s.prov);
	agent_params_free(&g);
	agent_plugins_destroy(&pl);
}

/*
 * objects, then threads, over --duration duration_ms with objects'
 * refine_share of it, every object counting from experiment quiet_until
 * on (1: from the first). The search runs to its duration, hands over
 * after objects' first min_a iterations at least, and threads finds the
 * packed counters' writers (the times are not checked, only that both
 * ran).
 */
static void chain_timed(uint32_t delay_ms, uint32_t duration_ms, double share,
			uint32_t quiet_until, uint32_t min_a)
{
	struct agent_fake_spec spec;
	struct agent_plugins pl;
	struct agent_search s;
	volatile sig_atomic_t stop = 0;
	uint32_t nr;

	plugins(&pl);
	world(&spec);
	for (int o = 0; o < 3; o++)
		objs[o].from_experiment = quiet_until;
	spec.interval_delay_ms = delay_ms;
	memset(&s, 0, sizeof(s));
	s.pl = &pl;
	s.strat = agent_plugins_strategy(&pl, "objects");
	s.strat_b = agent_plugins_strategy(&pl, "threads");
	s.prov = agent_provider_fake_open(&spec);
	s.opts.interval_ms = 100;
	s.opts.duration_ms = duration_ms;
	s.opts.refine_share = share;
	s.opts.primary_metric = -1;
	s.opts.stop = &stop;
	CHECK(agent_search_run(&s) == 0);
	CHECK(s.end == AGENT_END_DURATION);
	CHECK_EQ_U64(s.stage, 1);
	CHECK(s.nr_iterations_a >= min_a && s.nr_iterations > s.nr_iterations_a);
	CHECK(find(&s, "WordWriters", "alloc_counters@fs.c:10", 0x10000, &nr) != NULL);
	agent_search_free(&s);
	s.prov->ops->close(s.prov);
	agent_plugins_destroy(&pl);
}

/* objects never finishes by itself: with a --duration it hands over after
 * refine_share of it. */
static void test_chain_share(void)
{
	chain_timed(10, 600, 0.5, 1, 1);
}

/*
 * A quiet start: nothing counts in objects' first 7 experiments (a
 * sampled attach before its first burst), past refine_share. objects goes
 * on until it has counted something, then hands over; before, threads got
 * no seeds and ended the search at once with nothing.
 */
static void test_chain_quiet_start(void)
{
	chain_timed(20, 2000, 0.05, 8, 8);
}

/* The count backend: no coherence metrics, the words all the same. */
static void test_count_backend(void)
{
	static const int count_metrics[] = { AMEBA_M_MEM_REF, AMEBA_M_READS, AMEBA_M_WRITES };
	struct agent_fake_spec spec;
	struct agent_plugins pl;
	struct agent_search s;
	struct agent_params g;
	volatile sig_atomic_t stop = 0;
	const struct agent_finding *f;
	uint32_t nr;

	plugins(&pl);
	world(&spec);
	spec.backend = "count";
	spec.metrics = count_metrics;
	spec.nr_metrics = 3;
	params(&g, "threads:object=alloc_counters@fs.c:10,rounds=1");
	memset(&s, 0, sizeof(s));
	s.pl = &pl;
	s.strat = agent_plugins_strategy(&pl, "threads");
	s.strat_given = &g;
	s.prov = agent_provider_fake_open(&spec);
	s.opts.interval_ms = 100;
	s.opts.primary_metric = -1;
	s.opts.stop = &stop;
	CHECK(agent_search_run(&s) == 0);
	f = find(&s, "WordWriters", "alloc_counters@fs.c:10", 0x10000, &nr);
	CHECK_STR(f ? f->evidence : NULL, "coh=0 false=0 1:0/8 2:16/24 3:32/40 4:48/56");
	/* 3 metrics x (program + object) + one line x (3 + 16) */
	CHECK_EQ_U64(agent_provider_fake_last_nr_counters(s.prov), 6 + 19);
	agent_search_free(&s);
	s.prov->ops->close(s.prov);
	agent_params_free(&g);
	agent_plugins_destroy(&pl);
}

/*
 * The ABI's compatible growth: threads reads host->seeds only when the
 * host's struct_size covers them. An older host (struct_size ending before
 * the field) with garbage after it gives no seeds: threads ends at once;
 * the same host with the field covered refines the seed.
 */
static void test_old_host(void)
{
	struct agent_plugins pl;
	struct agent_strategy *st;
	struct ameba_object o = { 1, AMEBA_OBJ_HEAP, "blk", "blk@x.c:1", 0x10000, 0x10040, 64, 1, 1 };
	struct ameba_thread th[2] = { { 0, 100, 0 }, { 1, 101, 0 } };
	static const int ms[] = { AMEBA_M_MEM_REF, AMEBA_M_READS, AMEBA_M_WRITES };
	struct ameba_context seed;
	struct ameba_context_data seed_d;
	struct ameba_host h = { 0 };
	struct ameba_experiment exp;
	const char *names[] = { "metric" }, *values[] = { "mem_ref" };
	struct ameba_params prm = { 1, names, values };
	char msg[256] = "";
	void *state = NULL;

	plugins(&pl);
	st = agent_plugins_strategy(&pl, "threads");
	CHECK(st != NULL);
	if (!st) {
		agent_plugins_destroy(&pl);
		return;
	}
	ameba_context_init(&seed, &seed_d);
	seed.kind = AMEBA_CTX_OBJECT;
	seed.object = &o;
	h.abi_version = AMEBA_PLUGIN_ABI_VERSION;
	h.struct_size = (uint32_t)offsetof(struct ameba_host, seeds);
	h.objects = &o;
	h.nr_objects = 1;
	h.threads = th;
	h.nr_threads = 2;
	h.metrics = ms;
	h.nr_metrics = 3;
	h.exact = 1;
	h.seeds = (const struct ameba_context *)(uintptr_t)0x8;	/* must not be read */
	h.nr_seeds = 1;
	CHECK(st->desc.create(&h, &prm, &state, msg) == 0);
	memset(&exp, 0, sizeof(exp));
	CHECK(st->desc.plan(state, &exp) == 1);	/* no seeds: nothing to refine */
	st->desc.destroy(state);

	h.struct_size = sizeof(h);
	h.seeds = &seed;
	CHECK(st->desc.create(&h, &prm, &state, msg) == 0);
	memset(&exp, 0, sizeof(exp));
	CHECK(st->desc.plan(state, &exp) == 0);
	/* 3 metrics x (program + blk) + its line x (3 + 16) */
	CHECK_EQ_U64(exp.nr_counters, 6 + 19);
	st->desc.destroy(state);
	agent_plugins_destroy(&pl);
}

/* Deep copies outlive their source. */
static void test_clone(void)
{
	struct ameba_object o = { 7, AMEBA_OBJ_HEAP, "n", "s@x.c:1", 0x100, 0x140, 64, 1, 1 };
	uint32_t ids[2] = { 0, 1 };
	double pt[2] = { 3, 4 };
	char extra[] = "line.0=1,1,2\n";
	struct ameba_context c, *copy = NULL;
	struct ameba_context_data d;

	ameba_context_init(&c, &d);
	c.kind = AMEBA_CTX_LINE;
	c.object = &o;
	c.line = 0x100;
	c.nr_threads = 2;
	c.thread_ids = ids;
	d.per_thread[AMEBA_M_WRITES] = pt;
	c.extra = extra;
	CHECK(agent_contexts_clone(&c, 1, &copy) == 0);
	extra[5] = 'X';
	pt[1] = 0;
	o.name = "changed";
	CHECK(copy && copy->object != &o && !strcmp(copy->object->name, "n"));
	CHECK(copy && !strcmp(copy->extra, "line.0=1,1,2\n"));
	CHECK(copy && copy->per_thread[AMEBA_M_WRITES][1] == 4);
	CHECK(copy && copy->per_thread[AMEBA_M_READS] == NULL);
	CHECK(copy && copy->line == 0x100 && copy->thread_ids[1] == 1);
	agent_contexts_free(copy, 1);
}

/*
 * A context made by an older build (plugin.h, "Growth"): fewer metrics
 * and no `extra` field. The copy reads the missing metric as not measured
 * and the missing field as NULL, whatever lies past them.
 */
static void test_clone_older(void)
{
	struct ameba_object o = { 9, AMEBA_OBJ_GLOBAL, "g", NULL, 0x200, 0x240, 64, 1, 1 };
	uint32_t nm = AMEBA_M_NR - 1;	/* built before the last metric */
	union {
		struct ameba_context c;
		unsigned char raw[sizeof(struct ameba_context)];
	} u;
	uint8_t *has = malloc(AMEBA_M_NR);
	double *values = calloc(AMEBA_M_NR, sizeof(*values));
	double *program = calloc(AMEBA_M_NR, sizeof(*program));
	const double **pt = calloc(AMEBA_M_NR, sizeof(*pt));
	struct ameba_context *copy = NULL;

	if (!has || !values || !program || !pt)
		exit(2);
	memset(&u, 0xa5, sizeof(u));	/* what lies past its struct_size */
	memset(has, 1, AMEBA_M_NR);	/* ... and past its metrics */
	u.c.struct_size = (uint32_t)offsetof(struct ameba_context, extra);
	u.c.nr_metrics = nm;
	u.c.kind = AMEBA_CTX_OBJECT;
	u.c.object = &o;
	u.c.region = NULL;
	u.c.line = 0;
	u.c.has = has;
	u.c.values = values;
	u.c.program = program;
	u.c.nr_threads = 0;
	u.c.thread_ids = NULL;
	u.c.per_thread = pt;
	u.c.confidence = 1;
	u.c.nr_samples = 0;
	u.c.window_ns = 5;
	values[AMEBA_M_L1D_MISS] = 42;
	values[AMEBA_M_NR - 1] = 7;
	CHECK(agent_contexts_clone(&u.c, 1, &copy) == 0);
	CHECK(copy && copy->struct_size == sizeof(*copy) && copy->nr_metrics == AMEBA_M_NR);
	CHECK(copy && copy->has[AMEBA_M_L1D_MISS] && copy->values[AMEBA_M_L1D_MISS] == 42);
	CHECK(copy && !copy->has[AMEBA_M_NR - 1] && copy->values[AMEBA_M_NR - 1] == 0);
	CHECK(copy && !ameba_ctx_has(copy, AMEBA_M_NR));
	CHECK(copy && copy->extra == NULL && copy->window_ns == 5);
	CHECK(copy && !strcmp(copy->object->name, "g"));
	agent_contexts_free(copy, 1);
	free(has);
	free(values);
	free(program);
	free(pt);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s SRC_DIR STRATEGY_DIR TEST_DIR\n", argv[0]);
		return 2;
	}
	src_dir = argv[1];
	strategy_dir = argv[2];
	test_dir = argv[3];
	test_clone();
	test_clone_older();
	test_chain_complete();
	test_chain_exit_during_a();
	test_threads_alone();
	test_chain_share();
	test_chain_quiet_start();
	test_count_backend();
	test_old_host();
	return check_done();
}
