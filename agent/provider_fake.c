/*
 * provider_fake.c - a scripted ContextProvider for tests: a fixed world of
 * objects whose threads cause a fixed number of events per interval, so a
 * test can compute by hand what every counter must read.
 *
 * Notes:
 *  - Coverage of an object by a counter is |ranges n object| / size, with
 *    the counter's ranges assumed disjoint (as the strategies arm them) and
 *    clamped to 1; a counter without ranges covers everything.
 *  - Bins are derived: heap and mmap objects grouped by site.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "provider.h"

struct fake {
	struct agent_provider base;
	struct agent_fake_spec spec;
	struct ameba_object *flat;	/* the spec's objects without rates */
	struct ameba_object *bins;
	uint32_t nr_bins;
	struct ameba_thread threads[8];
	uint32_t nr_experiments, last_nr_counters;
	uint32_t history[64];
	struct agent_resbuf rb;
	char err[256];
};

static int fake_refresh(struct agent_provider *p, struct agent_world *w)
{
	struct fake *f = (struct fake *)p;

	memset(w, 0, sizeof(*w));
	if (f->spec.nr_intervals && f->nr_experiments >= f->spec.nr_intervals)
		return AMEBA_EEXITED;
	w->pid = 4242;
	w->program = f->spec.program;
	w->backend = f->spec.backend;
	w->exact = 1;
	for (uint32_t i = 0; i < f->spec.nr_metrics; i++)
		w->metrics[w->nr_metrics++] = f->spec.metrics[i];
	w->nr_objects = f->spec.nr_objects;
	w->objects = f->flat;
	w->bins = f->bins;
	w->nr_bins = f->nr_bins;
	w->threads = f->threads;
	w->nr_threads = f->spec.nr_threads;
	return 0;
}

/*
 * The share of object fo's accesses by thread t that counter i counts: the
 * where-set rules of whereset.c, with the object's (or the thread's span's)
 * bytes covered by the ranges for the share of an access stream spread
 * evenly over them.
 */
static double coverage(const struct ameba_experiment *exp, uint32_t i,
		       const struct agent_fake_object *fo, uint32_t t)
{
	const struct ameba_counter *c = &exp->counters[i];
	const struct ameba_object *o = &fo->obj;
	uintptr_t start = o->start, end = o->end;
	double bytes = 0, size;

	/* a bin where-set takes its blocks whole, wherever they lie */
	if (agent_counter_in_bins(exp, i, o))
		return 1.0;
	if ((agent_counter_has_bins(exp, i) && c->nr_ranges == 0) ||
	    agent_counter_excepts(exp, i, o))
		return 0;
	if (fo->span[t][1] > fo->span[t][0]) {
		start = fo->span[t][0];
		end = fo->span[t][1];
	}
	size = (double)(end - start);
	if (c->nr_ranges == 0)
		return 1.0;
	if (size <= 0)
		return 0;
	for (uint32_t r = 0; r < c->nr_ranges; r++) {
		uintptr_t s = c->ranges[2 * r], e = c->ranges[2 * r + 1];
		uintptr_t lo = s > start ? s : start, hi = e < end ? e : end;

		if (hi > lo)
			bytes += (double)(hi - lo);
	}
	return bytes >= size ? 1.0 : bytes / size;
}

static int fake_experiment(struct agent_provider *p, const struct ameba_experiment *exp,
			   uint32_t interval_ms, const volatile sig_atomic_t *stop,
			   struct agent_exp_result *res)
{
	struct fake *f = (struct fake *)p;
	uint32_t nt = f->spec.nr_threads, nc = exp->nr_counters;

	memset(res, 0, sizeof(*res));
	if (f->spec.exit_in_experiment && f->nr_experiments + 1 >= f->spec.exit_in_experiment)
		return AMEBA_EEXITED;
	for (uint32_t i = 0; i < nc; i++) {
		int ok = 0;

		for (uint32_t k = 0; k < f->spec.nr_metrics; k++)
			ok |= f->spec.metrics[k] == exp->counters[i].metric;
		if (!ok) {
			snprintf(f->err, sizeof(f->err), "counter %u: metric %d not provided", i,
				 exp->counters[i].metric);
			return AMEBA_ENOTSUP;
		}
	}
	for (uint32_t i = 0; exp->counter_bins && i < nc; i++) {
		for (uint32_t b = 0; b < exp->counter_bins[i].nr; b++) {
			int known = 0;

			for (uint32_t k = 0; k < f->nr_bins && !known; k++)
				known = f->bins[k].name &&
					!strcmp(f->bins[k].name, exp->counter_bins[i].names[b]);
			if (!known) {
				snprintf(f->err, sizeof(f->err), "counter %u: no bin named \"%s\"", i,
					 exp->counter_bins[i].names[b]);
				return AMEBA_ENOENT;
			}
		}
	}
	if (agent_resbuf_reset(&f->rb, nc, nt, NULL))
		return AMEBA_ENOMEM;
	for (uint32_t i = 0; i < nc; i++) {
		const struct ameba_counter *c = &exp->counters[i];
		uint64_t *pt = agent_resbuf_row(&f->rb, i);
		double total = 0;

		for (uint32_t t = 0; t < nt; t++) {
			double v = 0;

			if (agent_counter_has_thread(c, t))
				for (uint32_t o = 0; o < f->spec.nr_objects; o++)
					if (f->nr_experiments + 1 >= f->spec.objects[o].from_experiment)
						v += f->spec.objects[o].rates[t][c->metric] *
						     coverage(exp, i, &f->spec.objects[o], t);
			pt[t] = (uint64_t)(v + 0.5);
			total += (double)pt[t];
		}
		f->rb.values[i] = (uint64_t)total;
	}
	if (f->spec.interval_delay_ms) {
		struct timespec ts = { f->spec.interval_delay_ms / 1000,
				       (long)(f->spec.interval_delay_ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
	f->nr_experiments++;
	f->last_nr_counters = nc;
	if (f->nr_experiments <= 64)
		f->history[f->nr_experiments - 1] = nc;
	agent_resbuf_publish(&f->rb, exp, res);
	res->r.elapsed_ns = (uint64_t)(interval_ms ? interval_ms : 100) * 1000000ull;
	res->r.target_exited = f->spec.nr_intervals && f->nr_experiments >= f->spec.nr_intervals;
	res->interrupted = stop && *stop;
	return 0;
}

static const char *fake_error(struct agent_provider *p)
{
	return ((struct fake *)p)->err;
}

static void fake_close(struct agent_provider *p)
{
	struct fake *f = (struct fake *)p;

	for (uint32_t i = 0; i < f->nr_bins; i++)
		free((char *)f->bins[i].name);
	free(f->bins);
	free(f->flat);
	agent_resbuf_free(&f->rb);
	free(f);
}

static const struct agent_provider_ops fake_ops = {
	.name = "fake",
	.refresh = fake_refresh,
	.experiment = fake_experiment,
	.error = fake_error,
	.close = fake_close,
};

struct agent_provider *agent_provider_fake_open(const struct agent_fake_spec *spec)
{
	struct fake *f = calloc(1, sizeof(*f));

	if (!f || spec->nr_threads > 8) {
		free(f);
		return NULL;
	}
	f->base.ops = &fake_ops;
	f->spec = *spec;
	for (uint32_t t = 0; t < spec->nr_threads; t++) {
		f->threads[t].id = t;
		f->threads[t].tid = 1000 + (int32_t)t;
	}
	f->bins = calloc(spec->nr_objects + 1, sizeof(*f->bins));
	f->flat = calloc(spec->nr_objects + 1, sizeof(*f->flat));
	if (!f->bins || !f->flat) {
		free(f->bins);
		free(f->flat);
		free(f);
		return NULL;
	}
	for (uint32_t i = 0; i < spec->nr_objects; i++)
		f->flat[i] = spec->objects[i].obj;
	for (uint32_t i = 0; i < spec->nr_objects; i++) {
		const struct ameba_object *o = &spec->objects[i].obj;
		struct ameba_object *b = NULL;

		if (!o->site)
			continue;
		for (uint32_t k = 0; k < f->nr_bins; k++)
			if (!strcmp(f->bins[k].name, o->site))
				b = &f->bins[k];
		if (!b) {
			b = &f->bins[f->nr_bins];
			b->id = 1000 + f->nr_bins++;
			b->kind = AMEBA_OBJ_BIN;
			b->name = strdup(o->site);
			b->site = b->name;
			b->start = o->start;
			b->end = o->end;
			b->live = 1;
		}
		b->nr_blocks++;
		b->sz_bytes += o->sz_bytes;
		if (o->start < b->start)
			b->start = o->start;
		if (o->end > b->end)
			b->end = o->end;
	}
	return &f->base;
}

uint32_t agent_provider_fake_nr_experiments(struct agent_provider *p)
{
	return ((struct fake *)p)->nr_experiments;
}

uint32_t agent_provider_fake_last_nr_counters(struct agent_provider *p)
{
	return ((struct fake *)p)->last_nr_counters;
}

uint32_t agent_provider_fake_nr_counters_at(struct agent_provider *p, uint32_t k)
{
	struct fake *f = (struct fake *)p;

	return k >= 1 && k <= 64 && k <= f->nr_experiments ? f->history[k - 1] : 0;
}
