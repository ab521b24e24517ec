/*
 * fake_ops.c - the scripted monitor of fake_ops.h.
 *
 * It checks what the dispatcher promises the ops (validated arguments) with
 * abort(): under the fuzzer a broken promise is a crash, which is the point.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_ops.h"

struct fake_obj {
	int kind;
	const char *name;
	uint64_t start, end;
	uint32_t site, bin;
	int live;
	const char *file;	/* a file mapping's path, or NULL */
	uint64_t off;
};

static const struct fake_obj objs[FAKE_NR_OBJECTS] = {
	{ MRI_OBJ_OTHER, "[other]", 0, 0, 0, MRI_NO_BIN, 1 },
	{ MRI_OBJ_GLOBAL, "garr", 0x1000, 0x2000, 0, MRI_NO_BIN, 1 },
	{ MRI_OBJ_GLOBAL, "empty", 0x3000, 0x3000, 0, MRI_NO_BIN, 1 },
	{ MRI_OBJ_HEAP, "make@a.c:1", 0x10000, 0x10100, 1, 0, 1 },
	{ MRI_OBJ_HEAP, "make@a.c:1", 0x10100, 0x10200, 1, 0, 0 },
	{ MRI_OBJ_HEAP, "grow@b.c:2", 0x20000, 0x28000, 2, 1, 1 },
	{ MRI_OBJ_STACK, "[stack T0]", 0x7000000, 0x7100000, 0, MRI_NO_BIN, 1 },
	{ MRI_OBJ_TLS, "[tls T0]", 0x7100000, 0x7101000, 0, MRI_NO_BIN, 1 },
	{ MRI_OBJ_GLOBAL, "quote\"back\\slash", 0x4000, 0x4010, 0, MRI_NO_BIN, 1 },
	{ MRI_OBJ_MMAP, "grow@b.c:2", 0x30000, 0x40000, 3, 1, 1, "/data/in.mat", 8192 },
	{ MRI_OBJ_GLOBAL, "garr2", 0x1800, 0x2800, 0, MRI_NO_BIN, 1 },
};

static const int count_metrics[] = { AMEBA_M_MEM_REF, AMEBA_M_READS, AMEBA_M_WRITES };

void fake_init(struct fake_mon *f)
{
	memset(f, 0, sizeof(*f));
	f->now_ns = 1000000000ull;
	f->nr_threads = 3;
	f->exited[2] = 1;
}

void fake_tick(struct fake_mon *f)
{
	f->ticks++;
}

static int f_process(void *ctx, struct mri_proc_rec *out)
{
	struct fake_mon *f = ctx;

	out->pid = 4242;
	out->nr_threads = f->nr_threads;
	out->active = f->active;
	out->program = "/fake/prog";
	out->backend = f->attached ? "count" : NULL;
	return 0;
}

static uint32_t f_nr_threads(void *ctx)
{
	return ((struct fake_mon *)ctx)->nr_threads;
}

static int f_thread(void *ctx, uint32_t id, struct mri_thread_info *out)
{
	struct fake_mon *f = ctx;

	if (id >= f->nr_threads || id >= FAKE_MAX_THREADS)
		return AMEBA_ENOENT;
	out->id = id;
	out->tid = (int32_t)(4242 + id);
	out->exited = f->exited[id];
	return 0;
}

static uint32_t f_nr_objects(void *ctx)
{
	struct fake_mon *f = ctx;

	return f->nr_objects ? f->nr_objects : FAKE_NR_OBJECTS;
}

static int f_object(void *ctx, uint32_t id, struct mri_object *out, char *name)
{
	struct fake_mon *f = ctx;
	const struct fake_obj *o;

	if (id >= f_nr_objects(ctx))
		return AMEBA_ENOENT;
	if (id >= FAKE_NR_OBJECTS) {
		/* Synthetic heap blocks, 64 bytes each, with long names. */
		out->id = id;
		out->kind = MRI_OBJ_HEAP;
		out->live = 1;
		out->start = 0x100000000ull + (uint64_t)id * 64;
		out->end = out->start + 64;
		out->sz_bytes = 64;
		out->site_id = 1;
		out->bin_id = name ? 0 : MRI_NO_BIN;
		out->name = NULL;
		if (name) {
			uint32_t n = f->name_len < MRI_NAME_MAX - 1 ? f->name_len : MRI_NAME_MAX - 1;

			memset(name, 'x', n);
			name[n] = '\0';
			out->name = name;
		}
		return 0;
	}
	o = &objs[id];
	out->id = id;
	out->kind = o->kind;
	out->live = o->live;
	out->start = o->start;
	out->end = o->end;
	out->sz_bytes = o->end - o->start;
	out->site_id = o->site;
	out->bin_id = name ? o->bin : MRI_NO_BIN;
	out->name = NULL;
	out->file = o->file;
	out->file_off = o->off;
	if (name) {
		snprintf(name, MRI_NAME_MAX, "%s", o->name);
		out->name = name;
	}
	return 0;
}

static uint32_t f_nr_bins(void *ctx)
{
	return ((struct fake_mon *)ctx)->deep_bins ? 3 : 2;
}

static int f_bin(void *ctx, uint32_t id, struct mri_bin *out, char *name)
{
	static const char *const names[] = { "make@a.c:1", "grow@b.c:2" };
	static const char *const deep[] = { "make@a.c:1 <- main@m.c:5", "grow@b.c:2",
					    "make@a.c:1 <- init@m.c:9" };
	int is_deep = ((struct fake_mon *)ctx)->deep_bins;

	if (id >= (is_deep ? 3u : 2u))
		return AMEBA_ENOENT;
	if (name) {
		snprintf(name, MRI_NAME_MAX, "%s", is_deep ? deep[id] : names[id]);
		out->name = name;
	}
	out->id = id;
	out->nr_objects = id ? 2 : 2;
	out->sz_bytes = id ? 0x18000 : 0x200;
	if (!name)
		out->name = NULL;
	return 0;
}

static uint32_t f_backends(void *ctx, const char **names, uint32_t max)
{
	uint32_t n = 0;

	if (n < max)
		names[n++] = "count";
	return n;
}

static int f_attach(void *ctx, const char *backend, const char **chosen)
{
	struct fake_mon *f = ctx;
	int err = f->fail_attach;

	if (f->attached)
		abort();	/* the dispatcher attaches once per session */
	f->fail_attach = 0;
	if (err)
		return err;
	if (backend && strcmp(backend, "count"))
		return !strcmp(backend, "sim") ? AMEBA_EBUSY : AMEBA_ENOENT;
	f->attached = 1;
	f->active = 1;
	f->nr_attach++;
	*chosen = "count";
	return 0;
}

static void f_detach(void *ctx)
{
	struct fake_mon *f = ctx;

	if (!f->attached)
		abort();	/* detach only after a successful attach */
	f->attached = 0;
	f->active = 0;
	f->gen = 0;
	f->sample_period = 0;
	f->nr_detach++;
}

static int f_backend(void *ctx, struct mri_backend_rec *out)
{
	struct fake_mon *f = ctx;

	memset(out, 0, sizeof(*out));
	if (!f->attached)
		return 0;
	out->name = "count";
	out->nr_metrics = 3;
	memcpy(out->metrics, count_metrics, sizeof(count_metrics));
	return 0;
}

static int f_cond_arm(void *ctx, const struct mri_cond *c, uint32_t nr, uint64_t *gen)
{
	struct fake_mon *f = ctx;
	uint64_t total_ranges = 0;

	if (nr == 0) {
		f->gen = 0;
		f->nr_cond = 0;
		return 0;
	}
	if (!f->attached || nr > MRI_MAX_COUNTERS || nr > FAKE_MAX_COND)
		abort();
	for (uint32_t i = 0; i < nr; i++) {
		if (c[i].metric != AMEBA_M_MEM_REF && c[i].metric != AMEBA_M_READS &&
		    c[i].metric != AMEBA_M_WRITES)
			abort();	/* the dispatcher checks the backend's metrics */
		for (uint32_t j = 0; j < c[i].nr_ranges; j++)
			if (c[i].ranges[j].start >= c[i].ranges[j].end)
				abort();
		total_ranges += c[i].nr_ranges;
		f->cond_metric[i] = c[i].metric;
		f->cond_nr_ranges[i] = c[i].nr_ranges;
		f->first_start[i] = c[i].nr_ranges ? c[i].ranges[0].start : 0;
		for (uint32_t j = 0; j < c[i].nr_bins; j++)
			if (c[i].bins[j] >= f_nr_bins(f) && c[i].bins[j] != MRI_BIN_STACK &&
			    c[i].bins[j] != MRI_BIN_TLS)
				abort();	/* the dispatcher resolved the names */
		for (uint32_t j = 0; j < c[i].nr_except; j++)
			if (c[i].except[j] >= f_nr_bins(f) && c[i].except[j] != MRI_BIN_STACK &&
			    c[i].except[j] != MRI_BIN_TLS)
				abort();
		f->cond_nr_bins[i] = c[i].nr_bins;
		f->cond_first_bin[i] = c[i].nr_bins ? c[i].bins[0] : UINT32_MAX;
		f->cond_nr_except[i] = c[i].nr_except;
		f->cond_first_except[i] = c[i].nr_except ? c[i].except[0] : UINT32_MAX;
	}
	if (total_ranges > MRI_MAX_RANGES)
		abort();
	f->nr_cond = nr;
	f->ticks = 0;
	*gen = 100 + ++f->nr_arms;
	f->gen = *gen;
	return 0;
}

static int f_cond_read(void *ctx, uint64_t gen, uint64_t *total, uint64_t *before, uint32_t nr,
		       mri_per_thread_fn per_thread, void *arg)
{
	struct fake_mon *f = ctx;
	uint64_t v[FAKE_MAX_COND];

	if (!f->gen || gen != f->gen)
		return AMEBA_ENOENT;
	if (nr > f->nr_cond)
		abort();
	for (uint32_t i = 0; i < nr; i++) {
		v[i] = f->ticks * (i + 1) * 10;
		total[i] = 2 * v[i];	/* threads 0 and 1 count */
		before[i] = 0;		/* serves no counter */
	}
	if (per_thread && f->ticks) {
		per_thread(0, v, NULL, nr, arg);
		per_thread(1, v, NULL, nr, arg);
	}
	return 0;
}

/* Reads old_gen as f_cond_read, then arms c; both or neither. */
static int f_cond_swap(void *ctx, const struct mri_cond *c, uint32_t nr, uint64_t *gen,
		       uint64_t old_gen, uint64_t *total, uint64_t *before, uint32_t old_nr,
		       mri_per_thread_fn per_thread, void *arg)
{
	int err = f_cond_read(ctx, old_gen, total, before, old_nr, per_thread, arg);

	return err ? err : f_cond_arm(ctx, c, nr, gen);
}

static int f_sample_arm(void *ctx, int metric, uint64_t period, int randomized, uint64_t seed)
{
	struct fake_mon *f = ctx;

	f->sample_metric = metric;
	f->sample_period = period;
	return 0;
}

static uint32_t f_sample_drain(void *ctx, struct mri_sample *out, uint32_t max, uint64_t *lost)
{
	struct fake_mon *f = ctx;
	uint32_t n = 0;

	if (!f->sample_period)
		abort();
	for (; n < max && n < 3; n++) {
		out[n].addr = 0x1000 + 64 * n;
		out[n].pc = 0x400000 + n;
		out[n].thread_id = n % 2;
		out[n].weight = 1;
		/* the first two in blocks of site 9, the third in a global */
		out[n].site_id = n < 2 ? 9 : 0;
	}
	if (lost)
		*lost += 7;
	return n;
}

static int f_site_label(void *ctx, uint32_t site_id, char *name)
{
	if (site_id != 9)
		return AMEBA_ENOENT;
	snprintf(name, MRI_NAME_MAX, "make_node@list.c:12");
	return 0;
}

static uint64_t f_now_ns(void *ctx)
{
	return ((struct fake_mon *)ctx)->now_ns;
}

static int f_mark(void *ctx, const char *label, char *path, size_t len, char *why, size_t wlen)
{
	struct fake_mon *f = ctx;

	if (f->oracle <= 0) {
		if (f->oracle)
			snprintf(why, wlen, "cannot write /fake/o.json.mark-%s: disk full", label);
		else
			snprintf(why, wlen, "the target runs without AMEBA_ORACLE");
		return f->oracle ? f->oracle : AMEBA_ENOENT;
	}
	snprintf(path, len, "/fake/o.json.mark-%s", label);
	snprintf(f->last_mark, sizeof(f->last_mark), "%s", label);
	f->nr_marks++;
	return 0;
}

const struct mri_monitor_ops fake_ops = {
	.process = f_process,
	.nr_threads = f_nr_threads,
	.thread = f_thread,
	.nr_objects = f_nr_objects,
	.object = f_object,
	.nr_bins = f_nr_bins,
	.bin = f_bin,
	.backends = f_backends,
	.attach = f_attach,
	.detach = f_detach,
	.backend = f_backend,
	.cond_arm = f_cond_arm,
	.cond_read = f_cond_read,
	.cond_swap = f_cond_swap,
	.sample_arm = f_sample_arm,
	.sample_drain = f_sample_drain,
	.site_label = f_site_label,
	.now_ns = f_now_ns,
	.mark = f_mark,
};
