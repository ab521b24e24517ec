/*
 * test_sampling.c - unit tests of the `sampling` strategy plugin on a
 * synthetic host and synthetic samples (no program, no monitor): the
 * experiment it plans, attribution of every sample to its object and site
 * bin by address, scaling by the mean period, per-thread estimates, the
 * pending retry of samples in blocks the table did not know yet, lost
 * samples, the exit interval, confidence, rounds and parameter errors.
 *
 *   usage: test_sampling PLUGIN_DIR    (the directory holding sampling.so)
 */
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ameba/plugin.h"
#include "check.h"

static const struct ameba_strategy_desc *desc;

/* ---- a synthetic host ---- */

enum { G = 0, SA, SB, H, NEW, NR_OBJS };

static struct ameba_object objs[NR_OBJS] = {
	/* sorted by start, non-overlapping */
	[G] = { 1, AMEBA_OBJ_GLOBAL, "table", NULL, 0x1000, 0x2000, 0x1000, 1, 1 },
	[SA] = { 2, AMEBA_OBJ_HEAP, "node@f.c:10", "node@f.c:10", 0x3000, 0x3100, 0x100, 1, 1 },
	[SB] = { 3, AMEBA_OBJ_HEAP, "node@f.c:10", "node@f.c:10", 0x4000, 0x4100, 0x100, 1, 1 },
	[H] = { 4, AMEBA_OBJ_HEAP, "grid@f.c:20", "grid@f.c:20", 0x5000, 0x6000, 0x1000, 1, 1 },
	/* allocated during the first interval: known from the second refresh */
	[NEW] = { 5, AMEBA_OBJ_HEAP, "late@f.c:30", "late@f.c:30", 0x9000, 0xa000, 0x1000, 1, 1 },
};

static struct ameba_object bins[] = {
	{ 100, AMEBA_OBJ_BIN, "node@f.c:10", "node@f.c:10", 0x3000, 0x4100, 0x200, 2, 1 },
	{ 101, AMEBA_OBJ_BIN, "grid@f.c:20", "grid@f.c:20", 0x5000, 0x6000, 0x1000, 1, 1 },
	{ 102, AMEBA_OBJ_BIN, "late@f.c:30", "late@f.c:30", 0x9000, 0xa000, 0x1000, 1, 1 },
};

static struct ameba_thread threads[] = { { 0, 100, 0 }, { 1, 101, 0 } };
static const int metrics[] = { AMEBA_M_MEM_REF, AMEBA_M_L1D_MISS, AMEBA_M_L2_MISS };
static int nr_logs;

static void host_log(const struct ameba_host *h, const char *fmt, ...)
{
	(void)h;
	(void)fmt;
	nr_logs++;
}

static struct ameba_host host = {
	.abi_version = AMEBA_PLUGIN_ABI_VERSION,
	.struct_size = sizeof(struct ameba_host),
	.objects = objs,
	.nr_objects = NEW,		/* the late block is not known yet */
	.bins = bins,
	.nr_bins = 2,
	.threads = threads,
	.nr_threads = 2,
	.metrics = metrics,
	.nr_metrics = 3,
	.exact = 1,
	.log = host_log,
};

static void host_reset(void)
{
	host.nr_objects = NEW;
	host.nr_bins = 2;
}

static int create(void **st, char *msg, int nr, ...)
{
	const char *names[8], *values[8];
	struct ameba_params p = { (uint32_t)nr, names, values };
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < nr; i++) {
		names[i] = va_arg(ap, const char *);
		values[i] = va_arg(ap, const char *);
	}
	va_end(ap);
	msg[0] = '\0';
	return desc->create(&host, &p, st, msg);
}

static struct ameba_sample smp(uintptr_t addr, uint32_t thread)
{
	struct ameba_sample s = { addr, 0x400000, thread, AMEBA_M_L1D_MISS, 1 };

	return s;
}

/* The context whose object is called name (and of kind, if >= 0), or NULL. */
static const struct ameba_context *find(const struct ameba_context *c, uint32_t nr,
					const char *name)
{
	for (uint32_t i = 0; i < nr; i++)
		if (c[i].kind == AMEBA_CTX_OBJECT && c[i].object && !strcmp(c[i].object->name, name))
			return &c[i];
	return NULL;
}

static int near(double got, double want)
{
	return fabs(got - want) <= 1e-9 * (fabs(want) + 1);
}

#define CHECK_CLOSE(got, want)                                                            \
	do {                                                                             \
		double g__ = (got), w__ = (want);                                        \
		if (!near(g__, w__))                                                     \
			fprintf(stderr, "%s:%d: %s = %.9g, want %.9g\n", __FILE__, __LINE__, \
				#got, g__, w__);                                           \
		check_record(near(g__, w__), __FILE__, __LINE__, #got " ~ " #want);    \
	} while (0)

/* Attribution, scaling, per-thread values, bins, the pending retry. */
static void test_attribution(void)
{
	void *st;
	char msg[256];
	struct ameba_experiment exp;
	struct ameba_sample s[32];
	uint32_t n = 0;
	uint64_t total = 2000000, pt_total[2] = { 1200000, 800000 };
	const uint64_t *pt[1] = { pt_total };
	struct ameba_results res;
	const struct ameba_context *c, *x;
	uint32_t nr;
	/* the ratio estimator: each of the 23 samples stands for 2,000,000 / 23 */
	double mean = 2000000.0 / 23;

	host_reset();
	CHECK(create(&st, msg, 1, "metric", "l1d_miss") == 0);
	CHECK(desc->plan(st, &exp) == 0);
	/* one total counter of the metric, per thread; the stream armed */
	CHECK_EQ_U64(exp.nr_counters, 1);
	CHECK_EQ_U64(exp.counters[0].metric, AMEBA_M_L1D_MISS);
	CHECK_EQ_U64(exp.counters[0].nr_ranges, 0);
	CHECK_EQ_U64(exp.counters[0].per_thread, 1);
	CHECK_EQ_U64(exp.sample_metric, AMEBA_M_L1D_MISS);
	CHECK_EQ_U64(exp.sample_period, 10007);
	CHECK_EQ_U64(exp.sample_random, 1);
	CHECK_EQ_U64(exp.interval_ms, 0);

	/* table: 6 in T0 and 4 in T1, first and last byte included */
	s[n++] = smp(0x1000, 0);
	s[n++] = smp(0x1fff, 1);
	for (int i = 0; i < 5; i++)
		s[n++] = smp(0x1100 + 8 * (uintptr_t)i, 0);
	for (int i = 0; i < 3; i++)
		s[n++] = smp(0x1800, 1);
	/* the site node@f.c:10: 3 in block A, 2 in block B */
	s[n++] = smp(0x3000, 0);
	s[n++] = smp(0x30ff, 0);
	s[n++] = smp(0x3080, 1);
	s[n++] = smp(0x4000, 1);
	s[n++] = smp(0x4010, 1);
	/* grid: 3 */
	s[n++] = smp(0x5000, 0);
	s[n++] = smp(0x5abc, 0);
	s[n++] = smp(0x5fff, 1);
	/* between objects and past every object: never attributed */
	s[n++] = smp(0x2000, 0);
	s[n++] = smp(0x3100, 0);
	s[n++] = smp(0xfff, 0);
	/* in the late block, unknown this interval */
	s[n++] = smp(0x9000, 1);
	s[n++] = smp(0x9800, 1);
	/* another metric's sample is ignored */
	s[n] = smp(0x1000, 0);
	s[n++].metric = AMEBA_M_MEM_REF;

	memset(&res, 0, sizeof(res));
	res.nr_counters = 1;
	res.values = &total;
	res.per_thread = pt;
	res.nr_threads = 2;
	res.elapsed_ns = 100000000;
	res.nr_samples = n;
	res.samples = s;
	CHECK(desc->observe(st, &exp, &res) == 0);

	CHECK(desc->contexts(st, &c, &nr) == 0);
	CHECK_EQ_U64(nr, 4);		/* program, table, node bin, grid */
	CHECK_EQ_U64(c[0].kind, AMEBA_CTX_PROGRAM);
	CHECK_CLOSE(c[0].values[AMEBA_M_L1D_MISS], 2000000);
	CHECK_CLOSE(c[0].per_thread[AMEBA_M_L1D_MISS][1], 800000);
	CHECK_EQ_U64(c[0].nr_samples, 23);	/* 3 strays and 2 late ones included */
	CHECK_CLOSE(c[0].confidence, 1.0);
	/* best first */
	CHECK_STR(c[1].object->name, "table");
	CHECK_STR(c[2].object->name, "node@f.c:10");
	CHECK_STR(c[3].object->name, "grid@f.c:20");

	x = find(c, nr, "table");
	CHECK(x != NULL);
	if (x) {
		CHECK_EQ_U64(x->object->kind, AMEBA_OBJ_GLOBAL);
		CHECK_EQ_U64(x->nr_samples, 10);
		CHECK_CLOSE(x->values[AMEBA_M_L1D_MISS], 10 * mean);
		CHECK_CLOSE(x->program[AMEBA_M_L1D_MISS], 2000000);
		CHECK_CLOSE(x->per_thread[AMEBA_M_L1D_MISS][0], 6 * mean);
		CHECK_CLOSE(x->per_thread[AMEBA_M_L1D_MISS][1], 4 * mean);
		CHECK_EQ_U64(x->nr_threads, 2);
		CHECK(x->has[AMEBA_M_L1D_MISS] && !x->has[AMEBA_M_MEM_REF] && !x->has[AMEBA_M_L2_MISS]);
		CHECK_CLOSE(x->confidence, 1.0 - 1.0 / sqrt(10.0));
		CHECK(x->extra && strstr(x->extra, "share_samples=0.434783"));
	}
	/* two blocks of one site: presented as the site's bin */
	x = find(c, nr, "node@f.c:10");
	CHECK(x != NULL);
	if (x) {
		CHECK_EQ_U64(x->object->kind, AMEBA_OBJ_BIN);
		CHECK_EQ_U64(x->object->nr_blocks, 2);
		CHECK_EQ_U64(x->object->start, 0x3000);
		CHECK_EQ_U64(x->object->end, 0x4100);
		CHECK_EQ_U64(x->nr_samples, 5);
		CHECK_CLOSE(x->values[AMEBA_M_L1D_MISS], 5 * mean);
		CHECK_CLOSE(x->per_thread[AMEBA_M_L1D_MISS][0], 2 * mean);
		CHECK_CLOSE(x->per_thread[AMEBA_M_L1D_MISS][1], 3 * mean);
	}
	/* a site with one block: presented as the block */
	x = find(c, nr, "grid@f.c:20");
	CHECK(x != NULL);
	if (x) {
		CHECK_EQ_U64(x->object->kind, AMEBA_OBJ_HEAP);
		CHECK_EQ_U64(x->object->start, 0x5000);
		CHECK_CLOSE(x->values[AMEBA_M_L1D_MISS], 3 * mean);
	}
	CHECK(find(c, nr, "late@f.c:30") == NULL);

	/* the next refresh knows the late block: its 2 samples count now, the
	 * 3 strays never do */
	host.nr_objects = NR_OBJS;
	host.nr_bins = 3;
	CHECK(desc->plan(st, &exp) == 0);
	CHECK(desc->contexts(st, &c, &nr) == 0);
	CHECK_EQ_U64(nr, 5);
	x = find(c, nr, "late@f.c:30");
	CHECK(x != NULL);
	if (x) {
		CHECK_EQ_U64(x->nr_samples, 2);
		CHECK_CLOSE(x->values[AMEBA_M_L1D_MISS], 2 * mean);
		CHECK_CLOSE(x->per_thread[AMEBA_M_L1D_MISS][1], 2 * mean);
		/* the shares over the program's total never pass 100% */
		CHECK(x->values[AMEBA_M_L1D_MISS] < c[0].values[AMEBA_M_L1D_MISS]);
		CHECK_CLOSE(x->per_thread[AMEBA_M_L1D_MISS][0], 0);
	}
	CHECK(c[0].extra && strstr(c[0].extra, "attributed=20\nunattributed=3\n"));

	/* second interval: the totals add up */
	n = 0;
	s[n++] = smp(0x5000, 0);
	res.nr_samples = n;
	CHECK(desc->observe(st, &exp, &res) == 0);
	CHECK(desc->contexts(st, &c, &nr) == 0);
	CHECK_CLOSE(c[0].values[AMEBA_M_L1D_MISS], 4000000);
	CHECK_CLOSE(c[0].per_thread[AMEBA_M_L1D_MISS][0], 2400000);
	x = find(c, nr, "grid@f.c:20");
	mean = 4000000.0 / 24;		/* 24 samples over the 4,000,000 of the window */
	CHECK(x && near(x->values[AMEBA_M_L1D_MISS], 4 * mean));

	/* the exit interval delivers no samples: its counts stay out of the
	 * sampled window (the shares' denominator) */
	res.nr_samples = 0;
	res.target_exited = 1;
	CHECK(desc->observe(st, &exp, &res) == 0);
	CHECK(desc->contexts(st, &c, &nr) == 0);
	CHECK_CLOSE(c[0].values[AMEBA_M_L1D_MISS], 4000000);
	CHECK(c[0].extra && strstr(c[0].extra, "total_window=6000000"));
	x = find(c, nr, "grid@f.c:20");
	CHECK(x && near(x->values[AMEBA_M_L1D_MISS], 4 * mean));	/* unchanged */
	desc->destroy(st);
}

static struct ameba_sample smp_site(uintptr_t addr, uint32_t thread, const char *site)
{
	struct ameba_sample s = smp(addr, thread);

	s.site = site;
	return s;
}

/*
 * Samples carry the site the monitor resolved when it took them: a block
 * allocated after the last listing counts for its site at once (no retry,
 * and no double count after the refresh), a listed block whose memory now
 * belongs to another site's block counts for the sample's site, and a
 * sample without a site is placed by address as before.
 */
static void test_site_of_unlisted(void)
{
	void *st;
	char msg[256];
	struct ameba_experiment exp;
	struct ameba_sample s[8];
	uint32_t n = 0;
	uint64_t total = 700, pt_total[2] = { 300, 400 };
	const uint64_t *pt[1] = { pt_total };
	struct ameba_results res;
	const struct ameba_context *c, *x;
	uint32_t nr;

	host_reset();			/* the late block is not listed */
	CHECK(create(&st, msg, 1, "metric", "l1d_miss") == 0);
	CHECK(desc->plan(st, &exp) == 0);
	s[n++] = smp_site(0x9000, 1, "late@f.c:30");	/* unlisted block of a listed bin */
	s[n++] = smp_site(0x9800, 1, "late@f.c:30");
	s[n++] = smp_site(0xb000, 0, "fresh@f.c:40");	/* a site no listing knows */
	s[n++] = smp_site(0x3000, 0, "reuse@f.c:50");	/* node A freed, memory reused */
	s[n++] = smp_site(0x5000, 0, "grid@f.c:20");	/* agrees with the table */
	s[n++] = smp(0x1000, 1);			/* a global: no site */
	s[n++] = smp(0x2000, 0);			/* nothing there, no site */
	memset(&res, 0, sizeof(res));
	res.nr_counters = 1;
	res.values = &total;
	res.per_thread = pt;
	res.nr_threads = 2;
	res.elapsed_ns = 100000000;
	res.nr_samples = n;
	res.samples = s;
	CHECK(desc->observe(st, &exp, &res) == 0);
	CHECK(desc->contexts(st, &c, &nr) == 0);
	/* program, late, fresh, reuse, grid, table; each sample is 700 / 7; by site
	 * alone: late 2, fresh and reuse 1 each */
	CHECK_EQ_U64(nr, 6);
	CHECK_STR(c[1].object->name, "late@f.c:30");
	x = find(c, nr, "late@f.c:30");
	CHECK(x != NULL);
	if (x) {
		CHECK_EQ_U64(x->object->kind, AMEBA_OBJ_BIN);	/* no block of it listed */
		CHECK_EQ_U64(x->nr_samples, 2);
		CHECK_CLOSE(x->values[AMEBA_M_L1D_MISS], 200);
		CHECK_CLOSE(x->per_thread[AMEBA_M_L1D_MISS][1], 200);
		CHECK_CLOSE(x->per_thread[AMEBA_M_L1D_MISS][0], 0);
	}
	x = find(c, nr, "fresh@f.c:40");
	CHECK(x && x->object->kind == AMEBA_OBJ_BIN && x->nr_samples == 1);
	CHECK(x && near(x->values[AMEBA_M_L1D_MISS], 100));
	x = find(c, nr, "reuse@f.c:50");
	CHECK(x && x->nr_samples == 1 && !strcmp(x->object->site, "reuse@f.c:50"));
	CHECK(find(c, nr, "node@f.c:10") == NULL);	/* the stale block got nothing */
	x = find(c, nr, "grid@f.c:20");
	CHECK(x && x->object->kind == AMEBA_OBJ_HEAP && x->object->start == 0x5000 &&
	      x->nr_samples == 1);
	x = find(c, nr, "table");
	CHECK(x && x->nr_samples == 1);
	CHECK(c[0].extra && strstr(c[0].extra, "attributed=6\nunattributed=1\nby_site=4\n"));

	/* the refresh lists the late block: its samples are not counted again,
	 * and a later sample in it joins the same unit */
	host.nr_objects = NR_OBJS;
	host.nr_bins = 3;
	CHECK(desc->plan(st, &exp) == 0);
	n = 0;
	s[n++] = smp_site(0x9000, 0, "late@f.c:30");
	res.nr_samples = n;
	CHECK(desc->observe(st, &exp, &res) == 0);
	CHECK(desc->contexts(st, &c, &nr) == 0);
	x = find(c, nr, "late@f.c:30");
	CHECK(x && x->nr_samples == 3);
	/* 8 samples over 1,400: 3 of them */
	CHECK(x && near(x->values[AMEBA_M_L1D_MISS], 3 * 1400.0 / 8));
	CHECK(c[0].extra && strstr(c[0].extra, "attributed=7\nunattributed=1\nby_site=4\n"));
	desc->destroy(st);
}

/* random=0: the period is exact; without a total counter the estimate is
 * k x period, and lost samples scale it up and lower confidence; with a
 * total, the ratio estimator needs no loss correction. */
static void test_exact_period_and_lost(void)
{
	void *st;
	char msg[256];
	struct ameba_experiment exp;
	struct ameba_sample s[8];
	uint64_t total = 100000;
	struct ameba_results res;
	const struct ameba_context *c, *x;
	uint32_t nr;
	char buf[256];

	host_reset();
	CHECK(create(&st, msg, 3, "metric", "l2_miss", "period", "1009", "random", "0") == 0);
	CHECK(desc->plan(st, &exp) == 0);
	CHECK_EQ_U64(exp.sample_period, 1009);
	CHECK_EQ_U64(exp.sample_random, 0);
	CHECK_EQ_U64(exp.sample_metric, AMEBA_M_L2_MISS);
	CHECK_EQ_U64(exp.counters[0].metric, AMEBA_M_L2_MISS);
	for (int i = 0; i < 4; i++) {
		s[i] = smp(0x5000 + 64 * (uintptr_t)i, 0);
		s[i].metric = AMEBA_M_L2_MISS;
	}
	memset(&res, 0, sizeof(res));
	res.nr_counters = 0;		/* no total: k x period */
	res.nr_threads = 1;
	res.nr_samples = 4;
	res.samples = s;
	res.nr_samples_lost = 4;
	nr_logs = 0;
	CHECK(desc->observe(st, &exp, &res) == 0);
	CHECK(nr_logs == 1);		/* said so */
	CHECK(desc->contexts(st, &c, &nr) == 0);
	x = find(c, nr, "grid@f.c:20");
	CHECK(x != NULL);
	if (x) {
		/* 4 delivered of 8: each stands for 2 x 1009 events */
		CHECK_CLOSE(x->values[AMEBA_M_L2_MISS], 4 * 1009 * 2.0);
		CHECK_CLOSE(x->confidence, (1.0 - 1.0 / sqrt(4.0)) * 0.5);
		CHECK(x->extra && strstr(x->extra, "lost=4"));
	}
	desc->progress(st, buf, sizeof(buf));
	CHECK(strstr(buf, "4 samples of l2_miss (period 1009)") != NULL);
	CHECK(strstr(buf, "4 lost") != NULL);
	/* a total arrives: 4 of 8 samples delivered, all in grid, so grid has
	 * the whole total (a ratio, whatever was lost) */
	res.nr_counters = 1;
	res.values = &total;
	res.nr_samples = 0;
	res.nr_samples_lost = 0;
	CHECK(desc->observe(st, &exp, &res) == 0);
	CHECK(desc->contexts(st, &c, &nr) == 0);
	x = find(c, nr, "grid@f.c:20");
	CHECK(x && near(x->values[AMEBA_M_L2_MISS], 100000));
	desc->destroy(st);
}

/* rounds, interval and parameter errors. */
static void test_params(void)
{
	void *st;
	char msg[256];
	struct ameba_experiment exp;
	uint64_t total = 5;
	struct ameba_results res;

	host_reset();
	CHECK(create(&st, msg, 3, "metric", "mem_ref", "rounds", "2", "interval", "25") == 0);
	memset(&res, 0, sizeof(res));
	res.nr_counters = 1;
	res.values = &total;
	for (int i = 0; i < 2; i++) {
		CHECK(desc->plan(st, &exp) == 0);
		CHECK_EQ_U64(exp.interval_ms, 25);
		CHECK(desc->observe(st, &exp, &res) == 0);
	}
	CHECK(desc->plan(st, &exp) == 1);	/* finished */
	desc->destroy(st);

	CHECK(create(&st, msg, 1, "period", "1") == AMEBA_EINVAL);
	CHECK(strstr(msg, "period=1") != NULL);
	CHECK(create(&st, msg, 1, "period", "10x") == AMEBA_EINVAL);
	CHECK(create(&st, msg, 1, "random", "2") == AMEBA_EINVAL);
	CHECK(strstr(msg, "random=2") != NULL);
	CHECK(create(&st, msg, 1, "rounds", "-1") == AMEBA_EINVAL);
	CHECK(create(&st, msg, 1, "metric", "tlb_miss") == AMEBA_ENOTSUP);
	CHECK(strstr(msg, "tlb_miss") != NULL);
	CHECK(create(&st, msg, 1, "metric", "no_such") == AMEBA_ENOTSUP);
}

int main(int argc, char **argv)
{
	char path[4096];
	void *h;
	ameba_strategy_entry_fn entry;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PLUGIN_DIR\n", argv[0]);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/sampling.so", argv[1]);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	entry = (ameba_strategy_entry_fn)(uintptr_t)dlsym(h, AMEBA_STRATEGY_ENTRY);
	if (!entry) {
		fprintf(stderr, "%s: no %s\n", path, AMEBA_STRATEGY_ENTRY);
		return 1;
	}
	desc = entry();
	CHECK(desc && desc->abi_version == AMEBA_PLUGIN_ABI_VERSION);
	CHECK_STR(desc->name, "sampling");
	test_attribution();
	test_exact_period_and_lost();
	test_site_of_unlisted();
	test_params();
	return check_done();
}
