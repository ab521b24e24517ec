/*
 * provider_mri_world.c - the MRI provider's cached world: the objects
 * listed incrementally (newest first, within a time budget), the sweep
 * that learns frees, the bins and the threads, and refresh(). The design
 * and its figures: the Notes of provider_mri.c.
 */
#include "provider_mri_int.h"

/* ---- the cached world ---- */

void mp_objs_clear(struct mri_prov *p)
{
	p->nr_objs = 0;
	p->nr_sorted = 0;
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

/* The one copy of name s (Notes); NULL when out of memory. */
static const char *name_intern(struct mri_prov *p, const char *s)
{
	uint32_t i;

	if (2 * (p->nr_names + 1) > p->cap_names) {
		uint32_t cap = p->cap_names ? 2 * p->cap_names : 256;
		char **t = calloc(cap, sizeof(*t));

		if (!t)
			return NULL;
		for (uint32_t k = 0; k < p->cap_names; k++) {
			if (!p->names[k])
				continue;
			for (i = name_hash(p->names[k]) & (cap - 1); t[i]; i = (i + 1) & (cap - 1))
				;
			t[i] = p->names[k];
		}
		free(p->names);
		p->names = t;
		p->cap_names = cap;
	}
	for (i = name_hash(s) & (p->cap_names - 1); p->names[i]; i = (i + 1) & (p->cap_names - 1))
		if (!strcmp(p->names[i], s))
			return p->names[i];
	p->names[i] = strdup(s);
	if (!p->names[i])
		return NULL;
	p->nr_names++;
	return p->names[i];
}

static int objs_push(struct mri_prov *p, const struct mri_object *o)
{
	struct ameba_object *a;

	if (p->nr_objs == p->cap_objs) {
		uint32_t cap = p->cap_objs ? 2 * p->cap_objs : 1024;

		a = realloc(p->objs, cap * sizeof(*a));
		if (!a)
			return AMEBA_ENOMEM;
		p->objs = a;
		p->cap_objs = cap;
	}
	a = &p->objs[p->nr_objs];
	memset(a, 0, sizeof(*a));
	a->id = o->id;
	/* enum mri_obj_kind and enum ameba_obj_kind share their first six values */
	a->kind = o->kind;
	a->name = name_intern(p, o->name ? o->name : "?");
	if (!a->name)
		return AMEBA_ENOMEM;
	a->site = (o->kind == MRI_OBJ_HEAP || o->kind == MRI_OBJ_MMAP) ? a->name : NULL;
	a->start = (uintptr_t)o->start;
	a->end = (uintptr_t)o->end;
	a->sz_bytes = o->sz_bytes;
	a->nr_blocks = 1;
	a->live = o->live;
	p->nr_objs++;
	return 0;
}

static int cmp_obj(const void *x, const void *y)
{
	const struct ameba_object *a = x, *b = y;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return (a->id < b->id) - (a->id > b->id);	/* newer first */
}

/*
 * Sorts by start and drops objects overlapped by a newer one. The objects
 * up to nr_sorted are sorted from the last call: only the new tail is
 * sorted, then merged in (a million known blocks, a few thousand new).
 */
static void objs_normalize(struct mri_prov *p)
{
	uint32_t w = 0, n = p->nr_objs, k = p->nr_sorted <= n ? p->nr_sorted : 0;
	struct ameba_object *tmp;

	if (k == n)
		return;	/* nothing new: objs[0, nr_sorted) is normalized */
	qsort(p->objs + k, n - k, sizeof(*p->objs), cmp_obj);
	if (k && n > k && cmp_obj(&p->objs[k - 1], &p->objs[k]) > 0) {
		tmp = malloc((size_t)n * sizeof(*tmp));
		if (tmp) {
			uint32_t a = 0, b = k, o = 0;

			while (a < k || b < n)
				tmp[o++] = b == n || (a < k && cmp_obj(&p->objs[a], &p->objs[b]) <= 0) ?
					   p->objs[a++] : p->objs[b++];
			memcpy(p->objs, tmp, (size_t)n * sizeof(*tmp));
			free(tmp);
		} else {
			qsort(p->objs, n, sizeof(*p->objs), cmp_obj);
		}
	}
	for (uint32_t r = 0; r < p->nr_objs; r++) {
		struct ameba_object *o = &p->objs[r];

		if (o->end <= o->start || o->kind == AMEBA_OBJ_OTHER)
			continue;
		if (w > 0 && p->objs[w - 1].end > o->start) {
			/* overlap: keep the newer record */
			if (o->id > p->objs[w - 1].id)
				p->objs[w - 1] = *o;
			continue;
		}
		p->objs[w++] = *o;
	}
	p->nr_objs = w;
	p->nr_sorted = w;
}

uint64_t mp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Lists ids [*cursor, end) (end MRI_END: to the end), for at most until_ns. */
static int list_range(struct mri_prov *p, uint32_t *cursor, uint32_t end, uint64_t until_ns)
{
	struct mri_object_query q = { .live_only = 1 };
	int rc;

	while (*cursor != MRI_END && (end == MRI_END || *cursor < end)) {
		rc = mri_objects(p->s, &q, cursor, p->page, AGENT_MRI_PAGE);
		if (rc < 0) {
			mp_set_err(p, "listing objects", rc);
			return rc;
		}
		for (int i = 0; i < rc; i++)
			if ((end == MRI_END || p->page[i].id < end) && objs_push(p, &p->page[i]))
				return AMEBA_ENOMEM;
		if (*cursor == MRI_END && end == MRI_END) {
			/* the end of the table: go on from there next time */
			*cursor = rc > 0 ? p->page[rc - 1].id + 1 : mri_objects_total(p->s);
			break;
		}
		if (mp_now_ns() > until_ns)
			break;
	}
	return 0;
}

/*
 * The objects created since the last listing. Newest first: when more than
 * two pages are new, the last page of the table is listed first and the
 * ids between go to the backlog (gaps), listed newest gap first in the
 * time left. The blocks allocated last are often the ones in use now
 * (wl_cxx allocates its tally after 200,000 shapes).
 */
static int list_objects(struct mri_prov *p, int full)
{
	uint64_t until = full ? UINT64_MAX : mp_now_ns() + AGENT_MRI_LIST_NS;
	uint32_t cursor, total;
	int rc;

	if (full) {
		mp_objs_clear(p);
		p->nr_gaps = 0;
		p->next_offset = 0;
	}
	cursor = p->next_offset;
	rc = list_range(p, &cursor, MRI_END, 0);	/* one page */
	if (full) {
		/*
		 * The monitor's count of frees as this listing began (read
		 * before its first page): a sweep is needed only once it moves
		 * (run_cost's blocks, which frees nothing until its end, spent
		 * 28% of the agent's CPU relisting its 200,000 blocks in a
		 * sweep that found nothing)
		 */
		p->sweep_freed = mri_objects_freed(p->s);
		if (!rc)
			rc = list_range(p, &cursor, MRI_END, UINT64_MAX);
	}
	total = mri_objects_total(p->s);
	if (!rc && !full && cursor != MRI_END && total > cursor + 2 * AGENT_MRI_PAGE &&
	    p->nr_gaps < AGENT_MRI_MAX_GAPS) {
		p->gaps[p->nr_gaps].lo = cursor;
		p->gaps[p->nr_gaps++].hi = total - AGENT_MRI_PAGE;
		cursor = total - AGENT_MRI_PAGE;
	}
	if (!rc)
		rc = list_range(p, &cursor, MRI_END, until);
	if (cursor != MRI_END)
		p->next_offset = cursor;
	while (!rc && p->nr_gaps && mp_now_ns() <= until) {
		struct agent_gap *g = &p->gaps[p->nr_gaps - 1];

		rc = list_range(p, &g->lo, g->hi, until);
		if (g->lo == MRI_END || g->lo >= g->hi)
			p->nr_gaps--;
	}
	objs_normalize(p);
	return rc;
}

/* The start's tag in known[] and seen[]: never 0 for a block. */
static uint32_t start_tag(uint64_t start)
{
	uint32_t t = (uint32_t)(start >> 4);

	return t ? t : 1;
}

/* Starts a sweep over the ids listed so far, to learn which were freed. */
static int sweep_start(struct mri_prov *p)
{
	uint32_t n = p->next_offset + 1;

	if (n > p->seen_cap) {
		uint32_t *k = realloc(p->known, (size_t)n * sizeof(*k));

		if (k)
			p->known = k;
		uint32_t *v = k ? realloc(p->seen, (size_t)n * sizeof(*v)) : NULL;

		if (!v)
			return AMEBA_ENOMEM;
		p->seen = v;
		p->seen_cap = n;
	}
	memset(p->seen, 0, (size_t)n * sizeof(*p->seen));
	memset(p->known, 0, (size_t)n * sizeof(*p->known));
	for (uint32_t r = 0; r < p->nr_objs; r++)
		if (p->objs[r].id < n)
			p->known[p->objs[r].id] = start_tag(p->objs[r].start);
	p->sweep_end = p->next_offset;
	p->sweep_offset = 0;
	return 0;
}

/*
 * One step of the sweep (AGENT_MRI_LIST_NS at most): notes the ids still
 * live and adds the blocks that took a recycled id since it was listed;
 * when it has passed sweep_end, drops the known objects below it that it
 * did not see live with the same start (freed since they were listed).
 */
static int sweep_step(struct mri_prov *p)
{
	struct mri_object_query q = { .live_only = 1 };
	uint64_t t0 = mp_now_ns();
	uint32_t cursor = p->sweep_offset, w = 0, ws = 0;
	int rc;

	while (cursor != MRI_END && cursor < p->sweep_end) {
		rc = mri_objects(p->s, &q, &cursor, p->page, AGENT_MRI_PAGE);
		if (rc < 0) {
			mp_set_err(p, "listing objects", rc);
			return rc;
		}
		for (int i = 0; i < rc; i++) {
			uint32_t id = p->page[i].id, tag = start_tag(p->page[i].start);

			if (id >= p->sweep_end)
				continue;
			p->seen[id] = tag;
			if (p->known[id] != tag) {
				/* a new block in a recycled id */
				if (objs_push(p, &p->page[i]))
					return AMEBA_ENOMEM;
				p->known[id] = tag;
			}
		}
		if (mp_now_ns() - t0 > AGENT_MRI_LIST_NS)
			break;
	}
	p->sweep_offset = cursor;
	if (cursor != MRI_END && cursor < p->sweep_end)
		return 0;
	for (uint32_t r = 0; r < p->nr_objs; r++) {
		struct ameba_object *o = &p->objs[r];

		if (o->id < p->sweep_end && p->seen[o->id] != start_tag(o->start))
			continue;
		ws += r < p->nr_sorted;
		p->objs[w++] = *o;
	}
	p->nr_objs = w;
	p->nr_sorted = ws;	/* what was in order still is */
	p->sweep_offset = MRI_END;
	objs_normalize(p);
	return 0;
}

void mp_bins_free(struct ameba_object *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		free((char *)b[i].name);
	free(b);
}

/*
 * The bins, listed anew; the old table stays as it was when the listing
 * fails (the program exited halfway: the strategy plans its last
 * experiment on it; an empty table would retire every unit measured by bin).
 */
static int list_bins(struct mri_prov *p)
{
	struct ameba_object *nb = NULL;
	uint32_t cursor = 0, n = 0;
	int rc;

	while (cursor != MRI_END) {
		struct ameba_object *b;

		rc = mri_bins(p->s, &cursor, p->bin_page, AGENT_MRI_PAGE);
		if (rc < 0) {
			mp_set_err(p, "listing bins", rc);
			mp_bins_free(nb, n);
			return rc;
		}
		b = realloc(nb, (n + (uint32_t)rc + 1) * sizeof(*b));
		if (!b) {
			mp_bins_free(nb, n);
			return AMEBA_ENOMEM;
		}
		nb = b;
		for (int i = 0; i < rc; i++) {
			b = &nb[n];
			memset(b, 0, sizeof(*b));
			b->id = p->bin_page[i].id;
			b->kind = AMEBA_OBJ_BIN;
			b->name = strdup(p->bin_page[i].name ? p->bin_page[i].name : "?");
			if (!b->name) {
				mp_bins_free(nb, n);
				return AMEBA_ENOMEM;
			}
			b->site = b->name;
			/* the kind bins the monitor lists after the sites */
			if (!strcmp(b->name, "[stack]") || !strcmp(b->name, "[tls]")) {
				b->kind = b->name[1] == 's' ? AMEBA_OBJ_STACK : AMEBA_OBJ_TLS;
				b->site = NULL;
			}
			b->sz_bytes = p->bin_page[i].sz_bytes;
			b->nr_blocks = (uint32_t)p->bin_page[i].nr_objects;
			b->live = 1;
			n++;
		}
		if (rc == 0 && cursor != MRI_END)
			break;	/* no progress: give up on this listing */
	}
	mp_bins_free(p->bins, p->nr_bins);
	p->bins = nb;
	p->nr_bins = n;
	return 0;
}

static int list_threads(struct mri_prov *p)
{
	uint32_t total = 0, off = 0;
	int rc;

	do {
		rc = mri_threads(p->s, off, p->thread_page, AGENT_MRI_PAGE, &total);
		if (rc < 0) {
			mp_set_err(p, "listing threads", rc);
			return rc;
		}
		if (off + (uint32_t)rc > p->cap_threads) {
			uint32_t cap = off + (uint32_t)rc + 16;
			struct ameba_thread *t = realloc(p->threads, cap * sizeof(*t));

			if (!t)
				return AMEBA_ENOMEM;
			p->threads = t;
			p->cap_threads = cap;
		}
		for (int i = 0; i < rc; i++) {
			struct ameba_thread *t = &p->threads[off + (uint32_t)i];

			t->id = p->thread_page[i].id;
			t->tid = p->thread_page[i].tid;
			t->exited = p->thread_page[i].exited;
		}
		off += (uint32_t)rc;
	} while (rc > 0 && off < total);
	p->nr_threads = off;
	return 0;
}


void mp_world_sampling(struct mri_prov *p)
{
	struct agent_world *w = p->world;

	if (!w)
		return;
	w->exact = !p->sampled;
	w->sampled = p->sampled;
	w->sampled_since_s = p->sampled_since_s;
	w->bursts = p->bursts;
	w->fraction = p->fraction;
	w->rel_ci = p->nr_rel_ci ? p->rel_ci_sum / (double)p->nr_rel_ci : -1;
	w->period_us = p->smp.period_us;
	w->warm_us = p->smp.warm_us;
	w->burst_us = p->smp.burst_us;
}

int mp_refresh(struct agent_provider *base, struct agent_world *w)
{
	struct mri_prov *p = (struct mri_prov *)base;
	int full = p->nr_refresh % AGENT_MRI_FULL_EVERY == 0, rc;


	memset(w, 0, sizeof(*w));
	if (p->exited && !p->final_pending)
		return AMEBA_EEXITED;
	if (!p->exited) {
		rc = list_threads(p);
		/* the first listing is whole; later, frees are learnt by a sweep
		 * spread over refreshes */
		if (!rc)
			rc = list_objects(p, full && !p->nr_refresh);
		/* no sweep while the monitor says nothing was freed since
		 * the last one began (a program that allocates and keeps:
		 * relisting 200,000 live blocks every ten intervals was 15%
		 * of the agent's CPU on run_cost's blocks) */
		if (!rc && full && p->nr_refresh && p->sweep_offset == MRI_END &&
		    (mri_objects_freed(p->s) == UINT64_MAX ||
		     mri_objects_freed(p->s) != p->sweep_freed)) {
			p->sweep_freed = mri_objects_freed(p->s);
			rc = sweep_start(p);
		}
		if (!rc && p->sweep_offset != MRI_END)
			rc = sweep_step(p);
		/* the bins every refresh while they are few (a page or two): a
		 * site whose blocks live for microseconds is known by its bin
		 * only, and nway measures it by bin as soon as the bin is
		 * listed (docs/strategies.md, units apart) */
		if (!rc && (full || p->nr_bins <= AGENT_MRI_BINS_ALWAYS))
			rc = list_bins(p);
		if (rc == AMEBA_EEXITED) {
			/* the tables as they were: one more experiment() call
			 * collects the final reading of the running experiment */
			p->exited = 1;
			p->final_pending = p->running;
			if (!p->final_pending)
				return rc;
		} else if (rc) {
			return rc;
		}
		p->nr_refresh++;
	}
	w->pid = p->pid;
	w->program = p->program;
	w->backend = p->backend;
	p->world = w;
	mp_world_sampling(p);
	memcpy(w->metrics, p->metrics, sizeof(w->metrics));
	w->nr_metrics = p->nr_metrics;
	w->objects = p->objs;
	w->nr_objects = p->nr_objs;
	w->bins = p->bins;
	w->nr_bins = p->nr_bins;
	w->threads = p->threads;
	w->nr_threads = p->nr_threads;
	return 0;
}
