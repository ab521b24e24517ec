/*
 * test_nway.c - unit tests of the `nway` strategy on synthetic counters: the
 * plugin is loaded and driven directly (create, plan, observe, contexts)
 * against a small world whose counts are computed here by hand.
 *
 *   test_nway <dir with nway.so>
 *
 * Notes:
 *  - The world: objects with a rate of l1d_miss events per millisecond per
 *    thread (mem_ref is 4x that), optionally active only in a window of a
 *    repeating period (phases). A counter reads, for the interval the
 *    strategy asked for (100 ms when it leaves the length to the agent),
 *    rate x active time x the fraction of the object its ranges cover, over
 *    the threads it counts. Time only moves with the experiments, so every
 *    figure is exact and the same on every run.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ameba/plugin.h"
#include "check.h"

#define MIB (1024u * 1024u)
#define MAX_OBJS 32
#define MAX_THREADS 2

struct wobj {
	struct ameba_object o;
	double rate[MAX_THREADS];	/* l1d_miss per ms */
	uint32_t period_ms, on_from_ms, on_to_ms;	/* phases; period 0 = always */
	double rate_off;		/* thread 0's rate outside the phase (0: quiet) */
	int hidden;			/* freed before every listing: not in host->objects */
	uint32_t born_ms;		/* allocated then: listed and counting from then on */
};

struct world {
	struct wobj objs[MAX_OBJS];
	uint32_t nr;
	uint32_t nr_threads;
	uint64_t now_ms;
	uint32_t nr_experiments;
	uint32_t nr_search_intervals;
	uint32_t max_counters;		/* largest experiment seen */
	uint32_t max_interval_ms;
	int with_bins;			/* the host lists the heap sites as bins */
	int with_kinds;			/* ... and the kind bins [stack] and [tls] */
	uint32_t nr_except_counters;	/* ranged counters leaving bins out */
	uint32_t nr_bin_counters;	/* counters with a bin where-set, all experiments */
	uint32_t max_ranges;		/* most ranges in one experiment */
	char marks[8][24];		/* exp->mark of the experiments that asked for one */
	uint64_t mark_ms[8];		/* when */
	uint32_t nr_marks;
	/* the agent's planning between an interval's reading and the switch
	 * to a changed experiment: the old counters count on meanwhile, and
	 * what they count is carried into the identical new ones only
	 * (ameba_results.carried), as the MRI provider does */
	uint32_t gap_ms;
	uint32_t nr_switches, nr_mixed;	/* switches; those that carried some, not all */
	/* the probe: from the first mark on, the sum of the values (carry
	 * included) given for the l1d_miss counters on exactly
	 * [probe_start, probe_end), and the mixed switches meanwhile */
	uintptr_t probe_start, probe_end;
	uint64_t probe_sum;
	uint32_t nr_mixed_marked;
};

static const int world_metrics[] = { AMEBA_M_MEM_REF, AMEBA_M_L1D_MISS };
static const struct ameba_strategy_desc *nway;
static int verbose;

static void host_log(const struct ameba_host *h, const char *fmt, ...)
{
	va_list ap;

	(void)h;
	if (!verbose)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void add(struct world *w, const char *name, int kind, uintptr_t start, uint64_t size,
		double rate)
{
	struct wobj *o = &w->objs[w->nr];

	memset(o, 0, sizeof(*o));
	o->o.id = w->nr + 1;
	o->o.kind = kind;
	o->o.name = name;
	o->o.site = kind == AMEBA_OBJ_HEAP ? name : NULL;
	o->o.start = start;
	o->o.end = start + size;
	o->o.sz_bytes = size;
	o->o.nr_blocks = 1;
	o->o.live = 1;
	o->rate[0] = rate;
	w->nr++;
}

/* Milliseconds of [t0, t0 + len) in which object o is active. */
static double active_ms(const struct wobj *o, uint64_t t0, uint64_t len)
{
	double on = 0;

	if (!o->period_ms && o->born_ms <= t0)
		return (double)len;
	for (uint64_t t = t0; t < t0 + len; t++) {
		uint64_t ph = o->period_ms ? t % o->period_ms : 0;

		on += t >= o->born_ms && (!o->period_ms || (ph >= o->on_from_ms && ph < o->on_to_ms));
	}
	return on;
}

/* The share of o a counter covers: its bins take their blocks whole (the
 * monitor resolves them per access), its ranges what they overlap. */
static const char *kind_bin(const struct ameba_object *o)
{
	return o->kind == AMEBA_OBJ_TLS ? "[tls]" : o->kind == AMEBA_OBJ_STACK ? "[stack]" : NULL;
}

static int bins_name(const struct ameba_counter_bins *cb, const struct ameba_object *o)
{
	for (uint32_t b = 0; cb && b < cb->nr; b++)
		if ((o->site && !strcmp(cb->names[b], o->site)) ||
		    (kind_bin(o) && !strcmp(cb->names[b], kind_bin(o))))
			return 1;
	return 0;
}

static double coverage(const struct ameba_counter *c, const struct ameba_counter_bins *cb,
		       const struct ameba_counter_bins *ex, const struct ameba_object *o)
{
	double bytes = 0, size = (double)(o->end - o->start);

	if (bins_name(cb, o))
		return 1;
	if (cb && cb->nr && !c->nr_ranges)
		return 0;
	if (c->nr_ranges && bins_name(ex, o))
		return 0;	/* the ranges leave the bin's blocks out */
	if (!c->nr_ranges)
		return 1;
	for (uint32_t r = 0; r < c->nr_ranges; r++) {
		uintptr_t s = c->ranges[2 * r], e = c->ranges[2 * r + 1];
		uintptr_t lo = s > o->start ? s : o->start, hi = e < o->end ? e : o->end;

		if (hi > lo)
			bytes += (double)(hi - lo);
	}
	return bytes / size;
}

static int counts_thread(const struct ameba_counter *c, uint32_t t)
{
	if (!c->nr_threads)
		return 1;
	for (uint32_t i = 0; i < c->nr_threads; i++)
		if (c->threads[i] == t)
			return 1;
	return 0;
}

struct run {
	void *state;
	struct ameba_host host;
	struct ameba_object flat[MAX_OBJS];
	struct ameba_object bins[MAX_OBJS];
	struct ameba_thread threads[MAX_THREADS];
	char progress[200];
	const struct ameba_context *ctxs;
	uint32_t nr_ctxs;
	int finished;
};

/* The host's tables of objects and bins at the world's time: an object
 * born later is not listed yet, nor is its site's bin. */
static void list_world(struct run *r, const struct world *w)
{
	r->host.nr_objects = 0;
	r->host.nr_bins = 0;
	memset(r->bins, 0, sizeof(r->bins));
	for (uint32_t i = 0; i < w->nr; i++)
		if (!w->objs[i].hidden && w->objs[i].born_ms <= w->now_ms)
			r->flat[r->host.nr_objects++] = w->objs[i].o;
	for (uint32_t i = 0; w->with_bins && i < w->nr; i++) {
		const char *site = w->objs[i].o.site;
		uint32_t b = 0;

		if (!site || w->objs[i].born_ms > w->now_ms)
			continue;
		while (b < r->host.nr_bins && strcmp(r->bins[b].name, site))
			b++;
		if (b < r->host.nr_bins) {
			r->bins[b].nr_blocks += w->objs[i].hidden;
			continue;
		}
		r->bins[b].id = b;
		r->bins[b].kind = AMEBA_OBJ_BIN;
		r->bins[b].name = site;
		r->bins[b].site = site;
		/* blocks ever allocated: counted for the hidden (freed) ones only,
		 * so that sites of live blocks keep their old role in the tests */
		r->bins[b].nr_blocks = (uint32_t)w->objs[i].hidden;
		r->host.nr_bins++;
	}
	for (int k = 0; w->with_kinds && k < 2; k++) {
		struct ameba_object *b = &r->bins[r->host.nr_bins];

		b->id = r->host.nr_bins++;
		b->kind = k ? AMEBA_OBJ_TLS : AMEBA_OBJ_STACK;
		b->name = k ? "[tls]" : "[stack]";
	}
}

/* What counter c counts in [t0, t0 + len) of w, per thread (pt) and in all. */
static uint64_t world_count(const struct world *w, const struct ameba_counter *c,
			    const struct ameba_counter_bins *cb, const struct ameba_counter_bins *ex,
			    uint64_t t0, uint64_t len, uint64_t *pt)
{
	double f = c->metric == AMEBA_M_MEM_REF ? 4 : 1;
	uint64_t total = 0;

	for (uint32_t t = 0; t < w->nr_threads; t++) {
		double v = 0;

		if (counts_thread(c, t))
			for (uint32_t o = 0; o < w->nr; o++) {
				double on = active_ms(&w->objs[o], t0, len);
				double off = t ? 0 : w->objs[o].rate_off * ((double)len - on);

				v += (w->objs[o].rate[t] * on + off) * f *
				     coverage(c, cb, ex, &w->objs[o].o);
			}
		pt[t] = (uint64_t)llround(v);
		total += pt[t];
	}
	return total;
}

/* A running hash of one value, then of a string's bytes. */
static uint64_t hash_u64(uint64_t h, uint64_t v)
{
	h = (h + v + 1) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static uint64_t hash_names(uint64_t h, const struct ameba_counter_bins *cb)
{
	for (uint32_t b = 0; cb && b < cb->nr; b++) {
		for (const char *q = cb->names[b]; *q; q++)
			h = hash_u64(h, (unsigned char)*q);
		h = hash_u64(h, 0x100);	/* the name's end */
	}
	return hash_u64(h, 0x200);	/* the list's */
}

/* What counter i of exp counts - metric, ranges, threads, bins, except
 * list - as one number: equal for the counters the provider calls identical. */
static uint64_t counter_id(const struct ameba_experiment *exp, uint32_t i)
{
	const struct ameba_counter *c = &exp->counters[i];
	uint64_t h = hash_u64(0, (uint64_t)c->metric);

	h = hash_u64(h, c->nr_ranges);
	for (uint32_t r = 0; r < 2 * c->nr_ranges; r++)
		h = hash_u64(h, c->ranges[r]);
	h = hash_u64(h, c->nr_threads);
	for (uint32_t t = 0; t < c->nr_threads; t++)
		h = hash_u64(h, c->threads[t]);
	h = hash_names(h, exp->counter_bins ? &exp->counter_bins[i] : NULL);
	return hash_names(h, exp->counter_except ? &exp->counter_except[i] : NULL);
}

/* Runs nway with the parameters "k=v" (NULL-terminated) until it finishes
 * or max_exp experiments ran. */
static void run_world(struct run *r, struct world *w, const char *const *kv, uint32_t max_exp)
{
	const char *names[32], *values[32];
	char buf[32][64], msg[256] = "";
	struct ameba_params params = { 0, names, values };

	memset(r, 0, sizeof(*r));
	for (uint32_t i = 0; i < nway->nr_params; i++) {
		names[params.nr] = nway->params[i].name;
		values[params.nr++] = !strcmp(nway->params[i].name, "metric") ? "l1d_miss" :
				       nway->params[i].def;
	}
	for (uint32_t i = 0; kv && kv[i]; i++) {
		char *eq;

		snprintf(buf[i], sizeof(buf[i]), "%s", kv[i]);
		eq = strchr(buf[i], '=');
		*eq = '\0';
		for (uint32_t k = 0; k < params.nr; k++)
			if (!strcmp(names[k], buf[i]))
				values[k] = eq + 1;
	}
	for (uint32_t t = 0; t < w->nr_threads; t++) {
		r->threads[t].id = t;
		r->threads[t].tid = 100 + (int32_t)t;
	}
	r->host.abi_version = AMEBA_PLUGIN_ABI_VERSION;
	r->host.struct_size = sizeof(r->host);
	r->host.objects = r->flat;
	list_world(r, w);
	r->host.bins = r->bins;
	r->host.threads = r->threads;
	r->host.nr_threads = w->nr_threads;
	r->host.metrics = world_metrics;
	r->host.nr_metrics = 2;
	r->host.exact = 1;
	r->host.log = host_log;
	if (nway->create(&r->host, &params, &r->state, msg)) {
		fprintf(stderr, "create: %s\n", msg);
		CHECK(0);
		return;
	}
	static uint64_t sig[2][512];
	uint32_t nr_sig[2] = { 0, 0 }, cur = 0;

	for (uint32_t e = 0; e < max_exp; e++) {
		struct ameba_experiment exp;
		uint64_t values_[512], carried[512];
		uint64_t pt_store[512][MAX_THREADS], ptc_store[512][MAX_THREADS];
		const uint64_t *pt[512], *ptc[512];
		struct ameba_results res;
		uint64_t len;
		int rc, switched = 0;

		list_world(r, w);
		rc = nway->plan(r->state, &exp);

		if (rc == 1) {
			r->finished = 1;
			break;
		}
		CHECK(rc == 0);
		if (rc)
			break;
		CHECK(exp.nr_counters <= 512);
		len = exp.interval_ms ? exp.interval_ms : 100;
		if (exp.mark && w->nr_marks < 8) {
			snprintf(w->marks[w->nr_marks], sizeof(w->marks[0]), "%s", exp.mark);
			w->mark_ms[w->nr_marks++] = w->now_ms;
		}
		if (exp.nr_counters > w->max_counters)
			w->max_counters = exp.nr_counters;
		if (len > w->max_interval_ms)
			w->max_interval_ms = (uint32_t)len;
		{
			uint32_t nr_r = 0;

			for (uint32_t i = 0; i < exp.nr_counters; i++) {
				nr_r += exp.counters[i].nr_ranges;
				w->nr_bin_counters += exp.counter_bins && exp.counter_bins[i].nr;
				w->nr_except_counters += exp.counter_except && exp.counter_except[i].nr;
				/* exceptions only on counters with ranges */
				CHECK(!exp.counter_except || !exp.counter_except[i].nr ||
				      exp.counters[i].nr_ranges);
			}
			if (nr_r > w->max_ranges)
				w->max_ranges = nr_r;
		}
		/* a switch: the experiment is not the one that ran */
		cur ^= 1;
		nr_sig[cur] = exp.nr_counters < 512 ? exp.nr_counters : 512;
		for (uint32_t i = 0; i < nr_sig[cur]; i++)
			sig[cur][i] = counter_id(&exp, i);
		switched = e > 0 && w->gap_ms &&
			   (nr_sig[cur] != nr_sig[cur ^ 1] ||
			    memcmp(sig[cur], sig[cur ^ 1], nr_sig[cur] * sizeof(sig[0][0])));
		for (uint32_t i = 0; switched && i < nr_sig[cur]; i++) {
			const struct ameba_counter *c = &exp.counters[i];
			int same = 0;

			for (uint32_t j = 0; j < nr_sig[cur ^ 1] && !same; j++)
				same = sig[cur ^ 1][j] == sig[cur][i];
			memset(ptc_store[i], 0, sizeof(ptc_store[i]));
			/* a marked experiment starts from zero at its mark:
			 * nothing is carried into it (provider_mri.c) */
			carried[i] = !same || exp.mark ? AMEBA_NOT_CARRIED :
				     world_count(w, c, exp.counter_bins ? &exp.counter_bins[i] : NULL,
						 exp.counter_except ? &exp.counter_except[i] : NULL,
						 w->now_ms, w->gap_ms, ptc_store[i]);
			ptc[i] = c->per_thread ? ptc_store[i] : NULL;
		}
		if (switched) {
			int some = 0, all = 1;

			for (uint32_t i = 0; i < nr_sig[cur]; i++) {
				some |= carried[i] != AMEBA_NOT_CARRIED;
				all &= carried[i] != AMEBA_NOT_CARRIED;
			}
			w->nr_switches++;
			w->nr_mixed += some && !all;
			w->nr_mixed_marked += some && !all && w->nr_marks;
			w->now_ms += w->gap_ms;
		}
		for (uint32_t i = 0; i < exp.nr_counters && i < 512; i++) {
			const struct ameba_counter *c = &exp.counters[i];

			values_[i] = world_count(w, c, exp.counter_bins ? &exp.counter_bins[i] : NULL,
						 exp.counter_except ? &exp.counter_except[i] : NULL,
						 w->now_ms, len, pt_store[i]);
			if (switched && carried[i] != AMEBA_NOT_CARRIED) {
				values_[i] += carried[i];
				for (uint32_t t = 0; t < w->nr_threads; t++)
					pt_store[i][t] += ptc_store[i][t];
			}
			pt[i] = c->per_thread ? pt_store[i] : NULL;
			if (w->nr_marks && w->probe_end && c->metric == AMEBA_M_L1D_MISS &&
			    c->nr_ranges == 1 && c->ranges[0] == w->probe_start &&
			    c->ranges[1] == w->probe_end && !c->nr_threads)
				w->probe_sum += values_[i];
		}
		memset(&res, 0, sizeof(res));
		res.struct_size = sizeof(res);
		res.nr_counters = exp.nr_counters;
		res.values = values_;
		res.per_thread = pt;
		res.carried = switched ? carried : NULL;
		res.per_thread_carried = switched ? ptc : NULL;
		res.nr_threads = w->nr_threads;
		res.elapsed_ns = len * 1000000ull;
		w->now_ms += len;
		w->nr_experiments++;
		CHECK(nway->observe(r->state, &exp, &res) == 0);
	}
	nway->progress(r->state, r->progress, sizeof(r->progress));
	CHECK(nway->contexts(r->state, &r->ctxs, &r->nr_ctxs) == 0);
	if (verbose) {
		fprintf(stderr, "%s; %u experiments, %u ms\n", r->progress, w->nr_experiments,
			(unsigned)w->now_ms);
		for (uint32_t i = 0; i < r->nr_ctxs; i++)
			if (r->ctxs[i].object)
				fprintf(stderr, "  %s %.6f\n", r->ctxs[i].object->name,
					r->ctxs[i].values[AMEBA_M_L1D_MISS] /
					r->ctxs[i].program[AMEBA_M_L1D_MISS]);
	}
}

static void run_free(struct run *r)
{
	if (r->state)
		nway->destroy(r->state);
	r->state = NULL;
}

/* The object contexts' names joined by spaces, best first. */
static const char *found_names(const struct run *r, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < r->nr_ctxs; i++)
		if (r->ctxs[i].kind == AMEBA_CTX_OBJECT && o < len)
			o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? " " : "",
					      r->ctxs[i].object->name);
	return buf;
}

static double share_of(const struct run *r, const char *name)
{
	for (uint32_t i = 0; i < r->nr_ctxs; i++)
		if (r->ctxs[i].kind == AMEBA_CTX_OBJECT && !strcmp(r->ctxs[i].object->name, name))
			return r->ctxs[i].values[AMEBA_M_L1D_MISS] /
			       r->ctxs[i].program[AMEBA_M_L1D_MISS];
	return -1;
}

#define CHECK_SHARE(r, name, want)                                                       \
	do {                                                                             \
		double s_ = share_of((r), (name));                                       \
		if (fabs(s_ - (want)) > 1e-9)                                            \
			fprintf(stderr, "%s:%d: share of %s = %.9f, want %.9f\n",        \
				__FILE__, __LINE__, (name), s_, (double)(want));          \
		check_record(fabs(s_ - (want)) <= 1e-9, __FILE__, __LINE__, "share " name); \
	} while (0)

/*
 * Seed 002, Fig. 2: array_a..array_d packed at low addresses hold 60% of
 * the misses, array_e alone far above holds 40%, more than any one of the
 * four (c 19%, a 16%, b 14%, d 11%). Rates: 1 event/ms per 1% of share.
 * A cold table sits with the four; a cold stack sits near array_e.
 */
static void fig2_world(struct world *w)
{
	uintptr_t at = 0x10000000;

	memset(w, 0, sizeof(*w));
	w->nr_threads = 1;
	add(w, "array_a", AMEBA_OBJ_GLOBAL, at, 2 * MIB, 16);
	at += 2 * MIB;
	add(w, "array_b", AMEBA_OBJ_GLOBAL, at, 1843200, 14);
	at += 1843200;
	add(w, "array_c", AMEBA_OBJ_GLOBAL, at, 2457600, 19);
	at += 2457600;
	add(w, "array_d", AMEBA_OBJ_GLOBAL, at, 1433600, 11);
	at += 1433600;
	add(w, "lut", AMEBA_OBJ_GLOBAL, at, 4096, 0);
	add(w, "alloc_array_e@hot_fig2.c:57", AMEBA_OBJ_HEAP, 0x7f0000000000ull, 5 * MIB, 40);
	add(w, "[stack T0]", AMEBA_OBJ_STACK, 0x7ffff0000000ull, 8 * MIB, 0);
}

static void test_fig2(void)
{
	static const char *const two[] = { "n=2", NULL };
	struct world w;
	struct run r;
	char buf[400];

	/* 2-way: the 60% region is refined first, then the search backs up to
	 * the 40% one and ends at array_e, the hottest object */
	fig2_world(&w);
	run_world(&r, &w, two, 200);
	CHECK(r.finished);
	CHECK_STR(found_names(&r, buf, sizeof(buf)), "alloc_array_e@hot_fig2.c:57");
	CHECK_SHARE(&r, "alloc_array_e@hot_fig2.c:57", 0.40);
	CHECK_HAS(r.progress, "(top n-1 single)");
	CHECK(w.max_counters == 2 * (1 + 1));	/* final: 2 metrics x (total + 1) */
	run_free(&r);

	/* 10-way: all five, in order, exact shares; fewer than n-1 objects
	 * are left, all single: that ends it too */
	fig2_world(&w);
	run_world(&r, &w, NULL, 200);
	CHECK(r.finished);
	CHECK_STR(found_names(&r, buf, sizeof(buf)),
		  "alloc_array_e@hot_fig2.c:57 array_c array_a array_b array_d");
	CHECK_SHARE(&r, "alloc_array_e@hot_fig2.c:57", 0.40);
	CHECK_SHARE(&r, "array_c", 0.19);
	CHECK_SHARE(&r, "array_a", 0.16);
	CHECK_SHARE(&r, "array_b", 0.14);
	CHECK_SHARE(&r, "array_d", 0.11);
	CHECK_HAS(r.progress, "(top n-1 single)");
	/* the program context and every metric on the final extents */
	CHECK(r.nr_ctxs == 6 && r.ctxs[0].kind == AMEBA_CTX_PROGRAM);
	if (r.nr_ctxs == 6) {
		const struct ameba_context *c = &r.ctxs[1];

		CHECK(c->has[AMEBA_M_MEM_REF] && c->has[AMEBA_M_L1D_MISS]);
		CHECK(c->values[AMEBA_M_MEM_REF] == 4 * c->values[AMEBA_M_L1D_MISS]);
		CHECK(c->confidence == 1.0);
		CHECK(c->nr_threads == 1 && c->per_thread[AMEBA_M_L1D_MISS] &&
		      c->per_thread[AMEBA_M_L1D_MISS][0] == c->values[AMEBA_M_L1D_MISS]);
		CHECK(c->object->kind == AMEBA_OBJ_HEAP && c->object->start == 0x7f0000000000ull);
		/* 2 final intervals of 100 ms at 40 events/ms */
		CHECK(c->values[AMEBA_M_L1D_MISS] == 8000);
		CHECK(c->program[AMEBA_M_L1D_MISS] == 20000);
		CHECK(c->window_ns == 200000000ull);
		CHECK_HAS(c->extra, "found_by=all");
	}
	run_free(&r);
}

/*
 * A hot object straddling the place where the first boundary would fall:
 * the hull [1 MiB, 5 MiB) in 4 parts puts a boundary at 2 MiB, in the
 * middle of hot (30%). Moved to hot's start, the boundary keeps it whole,
 * so it is found first with its exact share; cut in two, each half (15%)
 * would rank under a (25%) and b (20%).
 */
static void test_straddle(void)
{
	static const char *const four[] = { "n=4", NULL };
	struct world w;
	struct run r;
	char buf[400];

	memset(&w, 0, sizeof(w));
	w.nr_threads = 1;
	add(&w, "a", AMEBA_OBJ_GLOBAL, 0x100000, 0x80000, 25);
	add(&w, "hot", AMEBA_OBJ_GLOBAL, 0x1c0000, 0x80000, 30);
	add(&w, "b", AMEBA_OBJ_GLOBAL, 0x280000, 0x80000, 20);
	add(&w, "c", AMEBA_OBJ_GLOBAL, 0x300000, 0x80000, 15);
	add(&w, "d", AMEBA_OBJ_GLOBAL, 0x480000, 0x80000, 10);
	run_world(&r, &w, four, 200);
	CHECK(r.finished);
	/* n-1 = 3 singles on top; the 4th ranked region is single too */
	CHECK_STR(found_names(&r, buf, sizeof(buf)), "hot a b c");
	CHECK_SHARE(&r, "hot", 0.30);
	CHECK_SHARE(&r, "a", 0.25);
	CHECK_SHARE(&r, "b", 0.20);
	CHECK_SHARE(&r, "c", 0.15);
	CHECK_HAS(r.progress, "(top n-1 single)");
	run_free(&r);
}

/*
 * Phases (seed 002, Fig. 5 / applu): x, y, z each active alone in turn in
 * a 1600 ms period (x 720 ms, y 560, z 320: 45 / 35 / 20% overall). Every
 * one of them counts zero in most 100 ms intervals; regions that ranked
 * high and went quiet are kept, the interval grows until it spans phases,
 * and the final measurement lasts until every found object counted.
 */
static void test_phases(void)
{
	struct world w;
	struct run r;
	char buf[400];

	memset(&w, 0, sizeof(w));
	w.nr_threads = 1;
	add(&w, "x", AMEBA_OBJ_GLOBAL, 0x10000000, 4 * MIB, 1000);
	add(&w, "y", AMEBA_OBJ_GLOBAL, 0x10000000 + 4 * MIB, 4 * MIB, 1000);
	add(&w, "z@solver.c:9", AMEBA_OBJ_HEAP, 0x7f0000000000ull, 4 * MIB, 1000);
	w.objs[0].period_ms = w.objs[1].period_ms = w.objs[2].period_ms = 1600;
	w.objs[0].on_to_ms = 720;
	w.objs[1].on_from_ms = 720;
	w.objs[1].on_to_ms = 1280;
	w.objs[2].on_from_ms = 1280;
	w.objs[2].on_to_ms = 1600;
	run_world(&r, &w, NULL, 200);
	CHECK(r.finished);
	CHECK_STR(found_names(&r, buf, sizeof(buf)), "x y z@solver.c:9");
	CHECK(w.max_interval_ms >= 1600);
	/* the estimates are the exact shares of the final window (the last
	 * window_ns of the run), and within 2 points of the overall ones */
	for (uint32_t i = 0; i < r.nr_ctxs; i++) {
		const struct ameba_context *c = &r.ctxs[i];
		uint64_t len = c->window_ns / 1000000, t0 = w.now_ms - len;
		double on[3], sum = 0, want;
		int k = -1;

		if (c->kind != AMEBA_CTX_OBJECT)
			continue;
		for (int o = 0; o < 3; o++) {
			on[o] = active_ms(&w.objs[o], t0, len);
			sum += on[o];
			if (!strcmp(w.objs[o].o.name, c->object->name))
				k = o;
		}
		CHECK(k >= 0);
		if (k < 0)
			continue;
		want = on[k] / sum;
		if (fabs(share_of(&r, w.objs[k].o.name) - want) > 1e-9)
			fprintf(stderr, "phases: %s %.9f, want %.9f\n", w.objs[k].o.name,
				share_of(&r, w.objs[k].o.name), want);
		CHECK(fabs(share_of(&r, w.objs[k].o.name) - want) <= 1e-9);
		CHECK(fabs(want - (k == 0 ? 0.45 : k == 1 ? 0.35 : 0.20)) < 0.02);
	}
	run_free(&r);

	/* without keeping quiet regions (keep=0, quiet_ms=0) the search loses
	 * what is quiet when it looks (and rescan=0: no search again when the
	 * final measurement sees the next phase, test_rescan) */
	{
		static const char *const nokeep[] = { "keep=0", "quiet_ms=0", "rescan=0", NULL };

		run_world(&r, &w, nokeep, 200);
		CHECK(r.finished);
		CHECK(strchr(found_names(&r, buf, sizeof(buf)), ' ') == NULL);
		run_free(&r);
	}
}

/*
 * The unsearched-share rule: three objects hold 99.2%, eight small ones
 * packed far away 0.1% each. Once the three are single and measured, the
 * regions not yet refined hold 0.8% (< 2%): the search ends without
 * spending intervals on the small ones.
 */
static void test_unsearched(void)
{
	struct world w;
	struct run r;
	char buf[400];

	memset(&w, 0, sizeof(w));
	w.nr_threads = 1;
	add(&w, "p", AMEBA_OBJ_GLOBAL, 0x100000, 0x100000, 500);
	add(&w, "q", AMEBA_OBJ_GLOBAL, 0x200000, 0x100000, 300);
	add(&w, "r", AMEBA_OBJ_GLOBAL, 0x300000, 0x100000, 192);
	for (int i = 0; i < 8; i++) {
		static const char *const names[] = { "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7" };

		add(&w, names[i], AMEBA_OBJ_GLOBAL, 0x40000000 + 0x1000 * (uintptr_t)i, 0x1000, 1);
	}
	run_world(&r, &w, NULL, 200);
	CHECK(r.finished);
	CHECK_HAS(r.progress, "(unsearched share under threshold)");
	CHECK_STR(found_names(&r, buf, sizeof(buf)), "p q r");
	CHECK_SHARE(&r, "p", 0.5);
	CHECK_SHARE(&r, "q", 0.3);
	CHECK_SHARE(&r, "r", 0.192);
	run_free(&r);

	/* unsearched=0: the rule is off, the search refines everything */
	{
		static const char *const off[] = { "unsearched=0", NULL };

		run_world(&r, &w, off, 200);
		CHECK(r.finished);
		CHECK_HAS(r.progress, "(top n-1 single)");
		/* n-1 = 9 singles on top, and the 10th is single too */
		CHECK_STR(found_names(&r, buf, sizeof(buf)), "p q r s0 s1 s2 s3 s4 s5 s6");
		CHECK_SHARE(&r, "s6", 0.001);
		run_free(&r);
	}
}

/* The budget: max_intervals=3 stops the search of Fig. 2 early; what is
 * single by then is measured and reported, nothing else. */
static void test_budget(void)
{
	static const char *const budget[] = { "max_intervals=3", NULL };
	struct world w;
	struct run r;
	char buf[400];

	fig2_world(&w);
	run_world(&r, &w, budget, 200);
	CHECK(r.finished);
	CHECK_HAS(r.progress, "(budget)");
	CHECK_STR(found_names(&r, buf, sizeof(buf)), "alloc_array_e@hot_fig2.c:57");
	CHECK_SHARE(&r, "alloc_array_e@hot_fig2.c:57", 0.40);
	/* 3 search intervals + 2 final */
	CHECK_EQ_U64(w.nr_experiments, 5);
	run_free(&r);

	/* final_intervals=0: the final measurement lasts until the program
	 * exits (here: the 40 experiments the test allows) */
	{
		static const char *const until_exit[] = { "max_intervals=3", "final_intervals=0",
							  NULL };

		fig2_world(&w);
		run_world(&r, &w, until_exit, 40);
		CHECK(!r.finished);
		CHECK_EQ_U64(w.nr_experiments, 40);
		CHECK_SHARE(&r, "alloc_array_e@hot_fig2.c:57", 0.40);
		CHECK(r.nr_ctxs == 2 && r.ctxs[1].window_ns == 37 * 100000000ull);
		run_free(&r);
	}
}

/* more=1: a 2-way search returns one object per round and goes on into
 * the rest of the address space: all five of Fig. 2, in order. */
static void test_more(void)
{
	static const char *const more[] = { "n=2", "more=1", NULL };
	struct world w;
	struct run r;
	char buf[400];

	fig2_world(&w);
	run_world(&r, &w, more, 400);
	CHECK(r.finished);
	CHECK_STR(found_names(&r, buf, sizeof(buf)),
		  "alloc_array_e@hot_fig2.c:57 array_c array_a array_b array_d");
	CHECK_SHARE(&r, "alloc_array_e@hot_fig2.c:57", 0.40);
	CHECK_SHARE(&r, "array_c", 0.19);
	CHECK_SHARE(&r, "array_d", 0.11);
	run_free(&r);
}

/*
 * Rescan: a phase that starts after the search (true_sharing: main() fills
 * `samples`, then the workers hammer `total_weight`). The search runs in
 * the fill, which lasts 1.5 s, and ends at samples alone (total_weight
 * counts nothing then and is dropped after keep intervals and quiet_ms).
 * When the fill ends, the final measurement sees samples miss 100% of the
 * total: the search starts again and finds total_weight, measured from
 * then on; samples' share is over its whole final window.
 */
static void test_rescan(void)
{
	static const char *const fin[] = { "final_intervals=10", NULL };
	static const char *const off[] = { "final_intervals=10", "rescan=0", NULL };
	struct world w;
	struct run r;
	char buf[400];
	double s;

	memset(&w, 0, sizeof(w));
	w.nr_threads = 1;
	/* sorted by address, as the host's table */
	add(&w, "total_weight", AMEBA_OBJ_GLOBAL, 0x600000, 64, 300);
	add(&w, "nr_samples_seen", AMEBA_OBJ_GLOBAL, 0x600040, 64, 5);
	add(&w, "samples@ts.c:40", AMEBA_OBJ_HEAP, 0x7f0000000000ull, 16 * MIB, 1000);
	w.objs[0].period_ms = w.objs[1].period_ms = w.objs[2].period_ms = 1000000;
	w.objs[2].on_to_ms = 1500;
	w.objs[2].rate_off = 200;	/* the workers read the samples too */
	w.objs[0].on_from_ms = w.objs[1].on_from_ms = 1500;
	w.objs[0].on_to_ms = w.objs[1].on_to_ms = 1000000;
	run_world(&r, &w, fin, 400);
	CHECK(r.finished);
	CHECK_STR(found_names(&r, buf, sizeof(buf)), "samples@ts.c:40 total_weight nr_samples_seen");
	/*
	 * One window for all, restarted when the rescan found the workers'
	 * objects (after the fill): exactly the worker phase's rates, shares
	 * that add up to 1, and one program total (the program context's).
	 */
	CHECK_SHARE(&r, "samples@ts.c:40", 200.0 / 505);
	CHECK_SHARE(&r, "total_weight", 300.0 / 505);
	CHECK_SHARE(&r, "nr_samples_seen", 5.0 / 505);
	CHECK_EQ_U64(w.nr_marks, 2);
	CHECK_STR(w.marks[0], "nway-1");
	CHECK_STR(w.marks[1], "nway-2");
	CHECK(w.mark_ms[0] < 1500 && w.mark_ms[1] > 1500);
	s = 0;
	for (uint32_t i = 0; i < r.nr_ctxs; i++) {
		const struct ameba_context *c = &r.ctxs[i];

		CHECK(c->program[AMEBA_M_L1D_MISS] == r.ctxs[0].program[AMEBA_M_L1D_MISS]);
		CHECK(c->window_ns == r.ctxs[0].window_ns);
		if (c->kind != AMEBA_CTX_OBJECT)
			continue;
		CHECK_HAS(c->extra, "\nmark=nway-2");
		s += c->values[AMEBA_M_L1D_MISS] / c->program[AMEBA_M_L1D_MISS];
	}
	CHECK(r.ctxs[0].kind == AMEBA_CTX_PROGRAM);
	CHECK(fabs(s - 1) < 1e-9);
	run_free(&r);

	/*
	 * The program exits while the rescan searches: the window's objects
	 * keep their window; what the rescan measured so far is reported as
	 * provisional (measured=search_intervals), over the time of the
	 * intervals that measured it, with half the confidence.
	 */
	{
		uint32_t nr_prov = 0;

		for (uint32_t max = 5; max < 200 && !nr_prov; max++) {
			w.now_ms = 0;
			w.nr_marks = 0;
			run_world(&r, &w, fin, max);
			for (uint32_t i = 0; i < r.nr_ctxs; i++) {
				const struct ameba_context *c = &r.ctxs[i];

				if (c->kind != AMEBA_CTX_OBJECT || !strstr(c->extra, "search_int") ||
				    r.ctxs[0].kind != AMEBA_CTX_PROGRAM)
					continue;
				nr_prov++;
				CHECK(c->confidence == 0.5);
				CHECK(c->window_ns > 0 && c->window_ns % 1000000 == 0);
				CHECK(c->window_ns < (uint64_t)(w.now_ms - 1500) * 1000000);
				CHECK_HAS(c->extra, "measured=search_intervals");
			}
			if (nr_prov)
				for (uint32_t i = 0; i < r.nr_ctxs; i++)
					if (r.ctxs[i].kind == AMEBA_CTX_OBJECT &&
					    !strstr(r.ctxs[i].extra, "search_int"))
						CHECK(r.ctxs[i].confidence == 1.0 &&
						      strstr(r.ctxs[i].extra, "mark=nway-1"));
			run_free(&r);
		}
		CHECK_EQ_U64(nr_prov, 2);	/* total_weight, nr_samples_seen */
	}

	/* rescan=0: the worker phase is never searched; one window, one mark */
	w.now_ms = 0;
	w.nr_marks = 0;
	run_world(&r, &w, off, 400);
	CHECK(r.finished);
	CHECK_STR(found_names(&r, buf, sizeof(buf)), "samples@ts.c:40");
	CHECK_EQ_U64(w.nr_marks, 1);
	CHECK_STR(w.marks[0], "nway-1");
	run_free(&r);
}

/*
 * Runs w (final_intervals=0) for ever more experiments until the report
 * lists second@x.c:9; checks that this first happens when the world's clock
 * reads want_ms, and that it is provisional: over one 100 ms interval,
 * the search's own count, after the window's objects.
 */
static void newcomer_first(struct world *w, uint64_t want_ms)
{
	static const char *const fin[] = { "final_intervals=0", NULL };
	struct run r;
	int first = 0;

	for (uint32_t max = 5; max < 80 && !first; max++) {
		w->now_ms = 0;
		w->nr_marks = 0;
		run_world(&r, w, fin, max);
		for (uint32_t i = 0; i < r.nr_ctxs; i++) {
			const struct ameba_context *c = &r.ctxs[i];

			if (c->kind != AMEBA_CTX_OBJECT || strcmp(c->object->name, "second@x.c:9"))
				continue;
			first = 1;
			CHECK_EQ_U64(w->now_ms, want_ms);
			CHECK_HAS(c->extra, "measured=search_intervals");
			CHECK(c->confidence == 0.5);
			CHECK_EQ_U64(c->window_ns, 100000000);
			CHECK_SHARE(&r, "second@x.c:9", 0.75);
			CHECK(i == r.nr_ctxs - 1);
		}
		run_free(&r);
	}
	CHECK(first);
}

/*
 * Newcomers (wl_million_live in small): the search ends at g and early's
 * site; at 4 s a site first seen then (second@x.c:9, inside the heap span
 * the search left) takes 75% of the misses. The final measurement counts it
 * on a spare counter, so the interval that shows the new phase already
 * holds its count: the rescan starts from it as a single measured once.
 * Were the program to exit after that interval, it is still reported
 * (provisional, over that interval); before newcomers were watched the
 * rescan had to halve the heap span for several intervals first. One born
 * during the interval that shows the phase is measured in the rescan's
 * first interval.
 */
static void test_newcomer(void)
{
	static const char *const fin[] = { "final_intervals=0", NULL };
	struct world w;
	struct run r;
	char buf[400];

	memset(&w, 0, sizeof(w));
	w.nr_threads = 1;
	w.with_bins = 1;
	add(&w, "g", AMEBA_OBJ_GLOBAL, 0x100000, 0x1000, 60);
	add(&w, "early@x.c:1", AMEBA_OBJ_HEAP, 0x200000, 0x10000, 40);
	add(&w, "second@x.c:9", AMEBA_OBJ_HEAP, 0x210000, 0x8000, 300);
	w.objs[2].born_ms = 4000;
	run_world(&r, &w, fin, 80);
	/* the rescan's round is listed after the first round's */
	CHECK_STR(found_names(&r, buf, sizeof(buf)), "g early@x.c:1 second@x.c:9");
	/* found by the rescan: one window restarted for all, exact shares */
	CHECK_SHARE(&r, "second@x.c:9", 0.75);
	CHECK_SHARE(&r, "g", 0.15);
	CHECK_EQ_U64(w.nr_marks, 2);
	CHECK(w.mark_ms[1] > 4000);
	run_free(&r);

	/* the program exits after max experiments: the first run that reports
	 * the newcomer ended right after the interval that saw the phase */
	newcomer_first(&w, 4100);
	/*
	 * Born in the middle of a final interval (4050 ms): no final interval
	 * counted it, but the rescan measures it first, by bin, in its very
	 * first interval: reported after 4200 ms (by halving: 4300)
	 */
	w.objs[2].born_ms = 4050;
	newcomer_first(&w, 4200);
	w.objs[2].born_ms = 4000;

	/*
	 * A small newcomer (wl_hash_table's `unknown` buffer, 5.4%, allocated
	 * where the search had dropped a quiet span): the found objects miss
	 * 5 points, under rescan's 10, but the newcomer alone misses more than
	 * unsearched (2%) of a final interval, which starts a rescan too
	 */
	{
		struct world v;

		memset(&v, 0, sizeof(v));
		v.nr_threads = 1;
		v.with_bins = 1;
		add(&v, "g", AMEBA_OBJ_GLOBAL, 0x100000, 0x1000, 60);
		add(&v, "early@x.c:1", AMEBA_OBJ_HEAP, 0x200000, 0x10000, 35);
		add(&v, "small@x.c:5", AMEBA_OBJ_HEAP, 0x7f0000000000ull, 0x400000, 5);
		v.objs[2].born_ms = 3000;
		run_world(&r, &v, fin, 80);
		CHECK_STR(found_names(&r, buf, sizeof(buf)), "g early@x.c:1 small@x.c:5");
		CHECK_SHARE(&r, "small@x.c:5", 0.05);
		CHECK_EQ_U64(v.nr_marks, 2);
		run_free(&r);
	}

	/*
	 * A site that allocates again (wl_million_live's second new_small
	 * caller): one quiet block of second@x.c:9 is listed from the start
	 * (the search drops it), and at 4 s two more blocks, freed before any
	 * listing sees them, take 75% of the misses. The unit is no newcomer
	 * by its listing, but its bin grew since the round began: it is
	 * watched, and reported as soon as a first-listed one would be.
	 */
	{
		struct world v;

		memset(&v, 0, sizeof(v));
		v.nr_threads = 1;
		v.with_bins = 1;
		add(&v, "g", AMEBA_OBJ_GLOBAL, 0x100000, 0x1000, 60);
		add(&v, "early@x.c:1", AMEBA_OBJ_HEAP, 0x200000, 0x10000, 40);
		add(&v, "second@x.c:9", AMEBA_OBJ_HEAP, 0x210000, 0x1000, 0);
		add(&v, "second@x.c:9", AMEBA_OBJ_HEAP, 0x220000, 0x8000, 150);
		add(&v, "second@x.c:9", AMEBA_OBJ_HEAP, 0x228000, 0x8000, 150);
		for (int i = 3; i < 5; i++) {
			v.objs[i].born_ms = 4000;
			v.objs[i].hidden = 1;
		}
		run_world(&r, &v, fin, 80);
		CHECK_STR(found_names(&r, buf, sizeof(buf)), "g early@x.c:1 second@x.c:9");
		CHECK_SHARE(&r, "second@x.c:9", 0.75);
		CHECK_EQ_U64(v.nr_marks, 2);
		run_free(&r);
		newcomer_first(&v, 4100);
	}

	/* rescan=0: the newcomer is never reported */
	w.now_ms = 0;
	w.nr_marks = 0;
	run_world(&r, &w, (const char *const[]){ "final_intervals=0", "rescan=0", NULL }, 80);
	CHECK_STR(found_names(&r, buf, sizeof(buf)), "g early@x.c:1");
	run_free(&r);
}

/*
 * 2-way with quiet regions (imbalance: one heap array holds every miss,
 * the globals and stacks around it count nothing). Each quiet half is kept
 * for keep intervals and quiet_ms; when it took one of the two counters,
 * none was left to split the top region, and the search stood still until
 * every quiet region expired (24 intervals here; the 2-way runs of
 * bench/search_accuracy did not end at all). Measured every other interval,
 * and quiet for the time of the intervals that skip them, the quiet
 * regions no longer hold the splits: 19 intervals.
 */
static void test_two_way_quiet(void)
{
	static const char *const two[] = { "n=2", NULL };
	struct world w;
	struct run r;
	char buf[400];

	memset(&w, 0, sizeof(w));
	w.nr_threads = 1;
	add(&w, "g0", AMEBA_OBJ_GLOBAL, 0x600000, 0x1000, 0);
	add(&w, "g1", AMEBA_OBJ_GLOBAL, 0x601000, 0x1000, 0);
	add(&w, "g2", AMEBA_OBJ_GLOBAL, 0x602000, 0x1000, 0);
	add(&w, "cells@imb.c:47", AMEBA_OBJ_HEAP, 0x7f0000000000ull, 64 * MIB, 1000);
	add(&w, "s0", AMEBA_OBJ_STACK, 0x7ff000000000ull, 0x10000, 0);
	add(&w, "s1", AMEBA_OBJ_STACK, 0x7ff100000000ull, 0x10000, 0);
	add(&w, "s2", AMEBA_OBJ_STACK, 0x7ff200000000ull, 0x10000, 0);
	add(&w, "s3", AMEBA_OBJ_STACK, 0x7ff300000000ull, 0x10000, 0);
	add(&w, "s4", AMEBA_OBJ_STACK, 0x7ff400000000ull, 0x10000, 0);
	run_world(&r, &w, two, 21);	/* 19 intervals; 24 before the rule */
	CHECK(r.finished);
	CHECK_STR(found_names(&r, buf, sizeof(buf)), "cells@imb.c:47");
	CHECK_SHARE(&r, "cells@imb.c:47", 1.0);
	run_free(&r);
}

/*
 * A found object that counts nothing in the whole final window (wl_cxx's
 * tally: the window began as the workers joined, and the program exited in
 * its teardown) is reported with the search's own figures, provisional, not
 * at 0% of a window that missed its phase. b holds 40% of the misses until
 * the window starts, then nothing.
 */
static void test_quiet_in_window(void)
{
	static const char *const fin[] = { "final_intervals=0", NULL };
	struct world w;
	struct run r;
	char buf[400];

	memset(&w, 0, sizeof(w));
	w.nr_threads = 1;
	add(&w, "a", AMEBA_OBJ_GLOBAL, 0x600000, 0x1000, 60);
	add(&w, "b", AMEBA_OBJ_GLOBAL, 0x700000, 0x1000, 40);
	run_world(&r, &w, fin, 40);
	CHECK_EQ_U64(w.nr_marks, 1);
	CHECK_SHARE(&r, "b", 0.4);
	run_free(&r);
	w.objs[1].period_ms = 1000000;
	w.objs[1].on_to_ms = (uint32_t)w.mark_ms[0];
	w.now_ms = 0;
	w.nr_marks = 0;
	run_world(&r, &w, fin, 40);
	CHECK_STR(found_names(&r, buf, sizeof(buf)), "a b");
	CHECK_SHARE(&r, "a", 1.0);
	CHECK_SHARE(&r, "b", 0.4);
	for (uint32_t i = 0; i < r.nr_ctxs; i++) {
		const struct ameba_context *c = &r.ctxs[i];

		if (c->kind != AMEBA_CTX_OBJECT)
			continue;
		if (!strcmp(c->object->name, "a")) {
			CHECK(c->confidence == 1.0);
			CHECK_HAS(c->extra, "mark=nway-1");
		} else {
			CHECK(c->confidence == 0.5);
			CHECK_HAS(c->extra, "measured=search_intervals");
			CHECK(c->window_ns > 0 && c->window_ns <= w.mark_ms[0] * 1000000);
		}
	}
	run_free(&r);
}

/*
 * per_thread=1: thread 1 misses only on `mine` (5% of all misses, 100% of
 * thread 1's), thread 0 on `big` (95%). A 2-way search over all threads
 * ends at big; per thread, each search finds its own object.
 */
static void test_per_thread(void)
{
	static const char *const all[] = { "n=2", NULL };
	static const char *const per[] = { "n=2", "per_thread=1", NULL };
	struct world w;
	struct run r;
	char buf[400];

	memset(&w, 0, sizeof(w));
	w.nr_threads = 2;
	add(&w, "big", AMEBA_OBJ_GLOBAL, 0x100000, 0x100000, 95);
	add(&w, "mine", AMEBA_OBJ_GLOBAL, 0x200000, 0x1000, 0);
	add(&w, "cold", AMEBA_OBJ_GLOBAL, 0x300000, 0x1000, 0);
	w.objs[1].rate[1] = 5;
	run_world(&r, &w, all, 200);
	CHECK(r.finished);
	CHECK_STR(found_names(&r, buf, sizeof(buf)), "big");
	run_free(&r);

	run_world(&r, &w, per, 200);
	CHECK(r.finished);
	CHECK_STR(found_names(&r, buf, sizeof(buf)), "big mine");
	CHECK_SHARE(&r, "big", 0.95);
	CHECK_SHARE(&r, "mine", 0.05);
	for (uint32_t i = 0; i < r.nr_ctxs; i++)
		if (r.ctxs[i].object && !strcmp(r.ctxs[i].object->name, "mine")) {
			CHECK_HAS(r.ctxs[i].extra, "found_by=T1");
			CHECK(r.ctxs[i].per_thread[AMEBA_M_L1D_MISS][0] == 0);
			CHECK(r.ctxs[i].per_thread[AMEBA_M_L1D_MISS][1] ==
			      r.ctxs[i].values[AMEBA_M_L1D_MISS]);
		}
	run_free(&r);
}

/*
 * Heap blocks of two allocation sites interleaved in the heap (A, B, A, B,
 * ...: 10 blocks each), which address halves cannot separate: the region
 * becomes the set of the two sites, split by site; each is found as its bin
 * (every block), A 80% and B 20%. With max_ranges=16 and bins=0 a site of
 * 10 blocks is measured on its hull (more than 16 / 4 ranges), which also
 * covers 9 of B's blocks: A reads 98%, with confidence 0.5 and
 * measured=hull. With the bin where-sets (bins=1, the default) the same
 * budget is no constraint: a site costs no ranges, and A reads 80% exactly.
 */
static void test_bins(void)
{
	static const char *const cap[] = { "max_ranges=16", "bins=0", NULL };
	static const char *const cap_bins[] = { "max_ranges=16", NULL };
	struct world w;
	struct run r;
	char buf[400];

	memset(&w, 0, sizeof(w));
	w.nr_threads = 1;
	for (int i = 0; i < 20; i++)
		add(&w, i % 2 ? "new_b@x.c:2" : "new_a@x.c:1", AMEBA_OBJ_HEAP,
		    0x100000 + 0x1000 * (uintptr_t)i, 0x800, i % 2 ? 2 : 8);
	run_world(&r, &w, NULL, 200);
	CHECK(r.finished);
	CHECK_STR(found_names(&r, buf, sizeof(buf)), "new_a@x.c:1 new_b@x.c:2");
	CHECK_SHARE(&r, "new_a@x.c:1", 0.8);
	CHECK_SHARE(&r, "new_b@x.c:2", 0.2);
	for (uint32_t i = 0; i < r.nr_ctxs; i++)
		if (r.ctxs[i].object) {
			CHECK(r.ctxs[i].object->kind == AMEBA_OBJ_BIN);
			CHECK_EQ_U64(r.ctxs[i].object->nr_blocks, 10);
			CHECK(r.ctxs[i].confidence == 1.0);
		}
	run_free(&r);

	run_world(&r, &w, cap, 200);
	CHECK(r.finished);
	CHECK(r.nr_ctxs >= 2 && r.ctxs[1].object);
	if (r.nr_ctxs >= 2 && r.ctxs[1].object) {
		CHECK_STR(r.ctxs[1].object->name, "new_a@x.c:1");
		CHECK_SHARE(&r, "new_a@x.c:1", 0.98);
		CHECK(r.ctxs[1].confidence == 0.5);
		CHECK_HAS(r.ctxs[1].extra, "measured=hull");
	}
	run_free(&r);
	w.with_bins = 0;

	w.with_bins = 1;
	w.nr_bin_counters = 0;
	w.max_ranges = 0;
	run_world(&r, &w, cap_bins, 200);
	CHECK(r.finished);
	CHECK(w.nr_bin_counters > 0);
	/* the sites cost no ranges: only the first spans and the gaps had some */
	CHECK(w.max_ranges <= 16);
	CHECK_STR(found_names(&r, buf, sizeof(buf)), "new_a@x.c:1 new_b@x.c:2");
	CHECK_SHARE(&r, "new_a@x.c:1", 0.8);
	CHECK_SHARE(&r, "new_b@x.c:2", 0.2);
	for (uint32_t i = 0; i < r.nr_ctxs; i++)
		if (r.ctxs[i].object) {
			CHECK(r.ctxs[i].confidence == 1.0);
			CHECK(!r.ctxs[i].extra || !strstr(r.ctxs[i].extra, "measured=hull"));
		}
	run_free(&r);
}

/*
 * Units apart (wl_thread_churn in small): the scratch buffers' site (60% of
 * the misses) and the threads' TLS blocks (10%) are freed before every
 * listing, so the host lists their bins only; their addresses lie between
 * two live globals (g 30%, cold 0%), inside the first spans. The search
 * must find both by bin, and no counter may count them twice: the spans
 * leave their blocks out (except), so the found shares add up to 100%.
 */
static void test_apart(void)
{
	static const char *const two[] = { "n=2", NULL };
	struct world w;
	struct run r;
	char buf[400];
	double sum = 0;

	memset(&w, 0, sizeof(w));
	w.nr_threads = 1;
	w.with_bins = 1;
	w.with_kinds = 1;
	add(&w, "g", AMEBA_OBJ_GLOBAL, 0x100000, 0x1000, 30);
	add(&w, "scratch@churn.c:42", AMEBA_OBJ_HEAP, 0x180000, 0x100, 60);
	w.objs[w.nr - 1].hidden = 1;
	add(&w, "[tls T5]", AMEBA_OBJ_TLS, 0x1c0000, 0x40, 10);
	w.objs[w.nr - 1].hidden = 1;
	add(&w, "cold", AMEBA_OBJ_GLOBAL, 0x200000, 0x1000, 0);
	run_world(&r, &w, NULL, 200);
	CHECK(r.finished);
	CHECK_STR(found_names(&r, buf, sizeof(buf)), "scratch@churn.c:42 g [tls]");
	CHECK_SHARE(&r, "scratch@churn.c:42", 0.6);
	CHECK_SHARE(&r, "g", 0.3);
	CHECK_SHARE(&r, "[tls]", 0.1);
	for (uint32_t i = 0; i < r.nr_ctxs; i++)
		if (r.ctxs[i].kind == AMEBA_CTX_OBJECT)
			sum += share_of(&r, r.ctxs[i].object->name);
	CHECK(fabs(sum - 1) < 1e-9);
	CHECK(w.nr_except_counters > 0);
	for (uint32_t i = 0; i < r.nr_ctxs; i++)
		if (r.ctxs[i].object && !strcmp(r.ctxs[i].object->name, "[tls]"))
			CHECK(r.ctxs[i].object->kind == AMEBA_OBJ_TLS);
	run_free(&r);

	/* the 2-way finds the scratch buffers' site first */
	run_world(&r, &w, two, 200);
	CHECK(r.finished);
	CHECK(r.nr_ctxs >= 2 && r.ctxs[1].object);
	if (r.nr_ctxs >= 2 && r.ctxs[1].object)
		CHECK_STR(r.ctxs[1].object->name, "scratch@churn.c:42");
	run_free(&r);

	/* bins=0: no units apart, and the search cannot end at them */
	w.nr_except_counters = 0;
	run_world(&r, &w, (const char *const[]){ "bins=0", NULL }, 200);
	CHECK(share_of(&r, "scratch@churn.c:42") < 0 && share_of(&r, "[tls]") < 0);
	CHECK_EQ_U64(w.nr_except_counters, 0);
	run_free(&r);
}

static void test_params(void)
{
	const char *names[] = { "n" }, *values[] = { "1" };
	struct ameba_params p = { 1, names, values };
	struct ameba_host h = { .abi_version = AMEBA_PLUGIN_ABI_VERSION, .metrics = world_metrics,
				.nr_metrics = 2, .log = host_log };
	char msg[256] = "";
	void *state = NULL;

	CHECK(nway->create(&h, &p, &state, msg) == AMEBA_EINVAL);
	CHECK_STR(msg, "n must be from 2 to 1000, got 1");
}

/*
 * The carry (Notes: carry in nway.c): while the agent plans, the old
 * counters count on, and a switch carries that into the identical new
 * counters only. Site a's second block, born in the final window, makes a
 * a bin from then on: its unit counter changes and is not carried while
 * the program total is. The window must still give the exact shares (a
 * 75%, b 25%, on both threads), as without any gap.
 */
static void test_carry(void)
{
	static const char *const fin[] = { "final_intervals=0", NULL };
	struct world w;
	struct run r;
	char buf[400];

	for (int gap = 0; gap < 2; gap++) {
		memset(&w, 0, sizeof(w));
		w.nr_threads = 2;
		w.with_bins = 1;
		w.gap_ms = gap ? 40 : 0;
		add(&w, "a@x.c:1", AMEBA_OBJ_HEAP, 0x100000, 0x800, 6);
		w.objs[w.nr - 1].rate[1] = 3;
		add(&w, "b@x.c:2", AMEBA_OBJ_HEAP, 0x200000, 0x800, 2);
		w.objs[w.nr - 1].rate[1] = 1;
		add(&w, "a@x.c:1", AMEBA_OBJ_HEAP, 0x300000, 0x800, 0);
		w.objs[w.nr - 1].born_ms = 3000;
		run_world(&r, &w, fin, 60);
		CHECK_STR(found_names(&r, buf, sizeof(buf)), "a@x.c:1 b@x.c:2");
		CHECK_SHARE(&r, "a@x.c:1", 0.75);
		CHECK_SHARE(&r, "b@x.c:2", 0.25);
		for (uint32_t i = 0; i < r.nr_ctxs; i++) {
			const struct ameba_context *c = &r.ctxs[i];

			if (!c->object)
				continue;
			/* bin a from the born block on: a window over its change */
			CHECK(c->window_ns > 3000000000ull);
			CHECK(c->nr_threads == 2 && c->per_thread[AMEBA_M_L1D_MISS]);
			if (c->nr_threads == 2 && c->per_thread[AMEBA_M_L1D_MISS])
				CHECK(c->per_thread[AMEBA_M_L1D_MISS][0] ==
				      2 * c->per_thread[AMEBA_M_L1D_MISS][1]);
		}
		if (gap) {
			/* the case arose: a switch carried some counters, not all */
			CHECK(w.nr_switches > 0);
			CHECK(w.nr_mixed > 0);
		}
		run_free(&r);
	}
}

/*
 * The newcomers watched beside the final measurement are a span group of
 * their own (nway.c, span_group): a site first listed in the final window
 * gets a watch counter, new and so not carried at the switch, while the
 * found objects' and the total's counters are. The found object must keep
 * its carry: its window count is every value given for its counter from
 * the mark on, the gaps included (as in the MRI provider, exact against
 * the oracle's exit minus mark). Before, the uncarried watch dropped the
 * carry of the whole final measurement.
 */
static void test_carry_watch(void)
{
	static const char *const fin[] = { "final_intervals=0", NULL };
	struct world w;
	struct run r;
	char buf[400];
	int seen = 0;

	memset(&w, 0, sizeof(w));
	w.nr_threads = 1;
	w.with_bins = 1;
	w.gap_ms = 40;
	add(&w, "hot", AMEBA_OBJ_GLOBAL, 0x100000, 0x800, 6);
	add(&w, "warm", AMEBA_OBJ_GLOBAL, 0x200000, 0x800, 2);
	add(&w, "new1@x.c:7", AMEBA_OBJ_HEAP, 0x300000, 0x800, 0.01);
	w.objs[w.nr - 1].born_ms = 3000;
	add(&w, "new2@x.c:8", AMEBA_OBJ_HEAP, 0x400000, 0x800, 0.01);
	w.objs[w.nr - 1].born_ms = 4000;
	w.probe_start = 0x100000;
	w.probe_end = 0x100800;
	run_world(&r, &w, fin, 60);
	CHECK_STR(found_names(&r, buf, sizeof(buf)), "hot warm");
	/* the case arose: a switch in the final window carried some, not all */
	CHECK(w.nr_marks == 1 && w.nr_mixed_marked > 0);
	for (uint32_t i = 0; i < r.nr_ctxs; i++) {
		const struct ameba_context *c = &r.ctxs[i];

		if (!c->object || strcmp(c->object->name, "hot"))
			continue;
		seen = 1;
		if (verbose)
			fprintf(stderr, "carry_watch: hot %llu, the values given %llu\n",
				(unsigned long long)c->values[AMEBA_M_L1D_MISS],
				(unsigned long long)w.probe_sum);
		CHECK(w.probe_sum > 0);
		CHECK(c->values[AMEBA_M_L1D_MISS] == w.probe_sum);
	}
	CHECK(seen);
	run_free(&r);
}

int main(int argc, char **argv)
{
	char path[1024];
	void *dl;
	ameba_strategy_entry_fn entry;

	if (argc != 2) {
		fprintf(stderr, "usage: test_nway DIR (the directory holding nway.so)\n");
		return 2;
	}
	verbose = getenv("TEST_VERBOSE") != NULL;
	snprintf(path, sizeof(path), "%s/nway.so", argv[1]);
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		fprintf(stderr, "%s\n", dlerror());
		return 2;
	}
	entry = (ameba_strategy_entry_fn)dlsym(dl, AMEBA_STRATEGY_ENTRY);
	if (!entry || !(nway = entry()) || nway->abi_version != AMEBA_PLUGIN_ABI_VERSION) {
		fprintf(stderr, "%s: no usable %s\n", path, AMEBA_STRATEGY_ENTRY);
		return 2;
	}
	test_params();
	test_fig2();
	test_straddle();
	test_phases();
	test_unsearched();
	test_budget();
	test_more();
	test_rescan();
	test_newcomer();
	test_two_way_quiet();
	test_quiet_in_window();
	test_per_thread();
	test_bins();
	test_apart();
	test_carry();
	test_carry_watch();
	return check_done();
}
