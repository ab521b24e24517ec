/*
 * sitebins.c - allocation-site bins: sites grouped by what a user can tell
 * apart, their symbolised names.
 *
 * Notes:
 *  - A site is a call stack. Its name starts at its first frame in
 *    instrumented code that is no allocation wrapper (mon_site_start):
 *    "alloc_counters@fs.c:41", "make_table@app.c:30" for a block from
 *    xmalloc() called there. A file mapping's name starts with the file's
 *    base name: "matrix.bin <- map_input@io.c:52".
 *  - Two sites with one name (a helper such as xmalloc called from several
 *    places) get their callers appended, one frame at a time, until the
 *    names differ: "xmalloc@util.c:12 <- load@io.c:88". Sites whose whole
 *    symbolised stacks are equal (two calls on one source line) cannot be
 *    told apart by a reader, so they share one bin - Gibson's bins are per
 *    source-level allocation site, not per return address.
 *  - Names are built on demand (at report time): symbolisation is slow and
 *    never happens on the allocation path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mon.h"

#define LABEL_MAX 160

struct site_name {
	uint32_t id;
	uint32_t depth;		/* frames in the name */
	char *name;
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/*
 * The name of site s with depth frames (bounded by what the site has): the
 * naming frame (mon_site_start: past allocation wrappers), then its callers.
 * A file mapping's name starts with the file: "matrix.bin <- load@io.c:40".
 */
static char *make_name(const struct mon_site *s, uint32_t depth)
{
	char buf[LABEL_MAX * (MON_SITE_MAX_FRAMES + 1) + 8 * MON_SITE_MAX_FRAMES], label[LABEL_MAX];
	size_t o = 0;
	uint32_t first;

	if (!s || s->nr_frames == 0)
		return mon_strdup("[unknown site]");
	if (s->file)
		o += (size_t)snprintf(buf, sizeof(buf), "%.*s <- ", LABEL_MAX, base_name(s->file));
	first = mon_site_start(s, label, sizeof(label), NULL, 0);
	for (uint32_t k = first; k < s->nr_frames && k < first + depth; k++) {
		if (k > first)
			mon_frame_label(s->frames[k], label, sizeof(label));
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s", k > first ? " <- " : "", label);
		if (o >= sizeof(buf))
			break;
	}
	return mon_strdup(buf);
}

static int cmp_name(const void *a, const void *b)
{
	const struct site_name *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->id > y->id) - (x->id < y->id);
}

static int cmp_id(const void *a, const void *b)
{
	const struct site_name *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

void mon_site_bins_free(struct mon_site_bins *b)
{
	for (uint32_t i = 0; i < b->nr_bins; i++) {
		mon_free(b->label[i]);
		if (b->via)
			mon_free(b->via[i]);
	}
	mon_free(b->label);
	mon_free(b->via);
	mon_free(b->bin_of);
	mon_free(b->nr_allocs);
	mon_free(b->bytes);
	memset(b, 0, sizeof(*b));
}

int mon_site_bins_build(struct mon_site_bins *b)
{
	uint32_t nr = mon_site_nr();
	struct site_name *sn = mon_calloc(nr + 1, sizeof(*sn));
	int changed = 1, err = AMEBA_ENOMEM;

	memset(b, 0, sizeof(*b));
	if (!sn)
		return AMEBA_ENOMEM;
	for (uint32_t i = 0; i < nr; i++) {
		const struct mon_site *s = mon_site_get(i + 1);

		sn[i].id = i + 1;
		sn[i].depth = 1;
		sn[i].name = make_name(s, 1);
		if (!sn[i].name)
			goto out;
	}

	/* Deepen names inside groups of equal names while that separates them. */
	for (int round = 0; changed && round < MON_SITE_MAX_FRAMES; round++) {
		changed = 0;
		qsort(sn, nr, sizeof(*sn), cmp_name);
		for (uint32_t i = 0; i < nr;) {
			uint32_t j = i + 1;
			int differ = 0;

			while (j < nr && !strcmp(sn[j].name, sn[i].name))
				j++;
			if (j - i > 1) {
				/* Do the full stacks differ at all? */
				char *full0 = make_name(mon_site_get(sn[i].id), MON_SITE_MAX_FRAMES);

				for (uint32_t k = i + 1; full0 && k < j && !differ; k++) {
					char *full = make_name(mon_site_get(sn[k].id), MON_SITE_MAX_FRAMES);

					differ = !full || strcmp(full, full0) != 0;
					mon_free(full);
				}
				mon_free(full0);
				for (uint32_t k = i; differ && k < j; k++) {
					char *deeper = make_name(mon_site_get(sn[k].id), sn[k].depth + 1);

					if (!deeper)
						goto out;
					mon_free(sn[k].name);
					sn[k].name = deeper;
					sn[k].depth++;
					changed = 1;
				}
			}
			i = j;
		}
	}

	/* One bin per distinct final name. */
	qsort(sn, nr, sizeof(*sn), cmp_name);
	b->bin_of = mon_calloc(nr + 1, sizeof(*b->bin_of));
	b->label = mon_calloc(nr + 1, sizeof(*b->label));
	b->via = mon_calloc(nr + 1, sizeof(*b->via));
	b->nr_allocs = mon_calloc(nr + 1, sizeof(*b->nr_allocs));
	b->bytes = mon_calloc(nr + 1, sizeof(*b->bytes));
	if (!b->bin_of || !b->label || !b->via || !b->nr_allocs || !b->bytes)
		goto out;
	for (uint32_t i = 0; i < nr; i++) {
		const struct mon_site *s = mon_site_get(sn[i].id);

		if (b->nr_bins == 0 || strcmp(sn[i].name, b->label[b->nr_bins - 1])) {
			char label[LABEL_MAX], via[LABEL_MAX];

			mon_site_start(s, label, sizeof(label), via, sizeof(via));
			b->via[b->nr_bins] = via[0] ? mon_strdup(via) : NULL;
			b->label[b->nr_bins++] = sn[i].name;
			sn[i].name = NULL;
		}
		b->bin_of[sn[i].id] = b->nr_bins - 1;
		if (s) {
			b->nr_allocs[b->nr_bins - 1] += __atomic_load_n(&s->nr_allocs, __ATOMIC_RELAXED);
			b->bytes[b->nr_bins - 1] += __atomic_load_n(&s->sz_bytes_total, __ATOMIC_RELAXED);
		}
	}
	b->nr_sites = nr;
	qsort(sn, nr, sizeof(*sn), cmp_id);
	err = 0;
out:
	for (uint32_t i = 0; i < nr; i++)
		mon_free(sn[i].name);
	mon_free(sn);
	if (err)
		mon_site_bins_free(b);
	return err;
}

uint32_t mon_site_bins_of(const struct mon_site_bins *b, uint32_t site_id)
{
	return site_id && site_id <= b->nr_sites ? b->bin_of[site_id] : UINT32_MAX;
}

/*
 * One naming of objects for every report (the oracle, the MRI): what the
 * user wrote (a global's symbol), where the block came from (its site bin),
 * or whose it is (a thread's stack or TLS).
 */
const char *mon_obj_label(const struct mon_obj *o, const struct mon_site_bins *b, char *buf, size_t len)
{
	uint32_t bin;

	switch (o->kind) {
	case MON_OBJ_GLOBAL:
		snprintf(buf, len, "%s", o->name ? o->name : "");
		break;
	case MON_OBJ_HEAP:
	case MON_OBJ_MMAP:
		bin = mon_site_bins_of(b, o->site_id);
		snprintf(buf, len, "%s", bin < b->nr_bins ? b->label[bin] : "[unknown site]");
		break;
	case MON_OBJ_OTHER:
		snprintf(buf, len, "[other]");
		break;
	default:
		snprintf(buf, len, "[%s T%u]", mon_obj_kind_name(o->kind), o->thread_id);
		break;
	}
	return buf;
}
