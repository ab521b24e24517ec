/*
 * nway_units.c - the nway strategy: units (what a search can end at),
 * spans and regions over them.
 * The algorithm and its invariants: the Notes of nway.c.
 */
#include "nway_int.h"

/* ---- small helpers ---- */

int grow_array(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t c = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	np = realloc(*p, (size_t)c * elem);
	if (!np)
		return AMEBA_ENOMEM;
	*p = np;
	*cap = c;
	return 0;
}

int threads_grow(struct nway *st, uint32_t nr)
{
	uint32_t *ids;

	if (nr <= st->nr_threads_cap)
		return 0;
	for (uint32_t k = 0; k < st->nr_metrics; k++) {
		int m = st->metrics[k];

		if (strategy_grow_pt(&st->prog_pt[m], st->nr_threads_cap, nr))
			return AMEBA_ENOMEM;
		for (uint32_t f = 0; f < st->nr_found; f++)
			if (strategy_grow_pt(&st->found[f].pt[m], st->nr_threads_cap, nr) ||
			    strategy_grow_pt(&st->found[f].program_pt[m], st->nr_threads_cap, nr))
				return AMEBA_ENOMEM;
	}
	ids = realloc(st->thread_ids, nr * sizeof(*ids));
	if (!ids)
		return AMEBA_ENOMEM;
	st->thread_ids = ids;
	for (uint32_t t = 0; t < nr; t++)
		ids[t] = t;
	st->nr_threads_cap = nr;
	return 0;
}

static int ranges_push(struct nway *st, uintptr_t start, uintptr_t end)
{
	if (grow_array((void **)&st->ranges, &st->cap_ranges, 2 * (st->nr_ranges + 1),
		       sizeof(*st->ranges)))
		return AMEBA_ENOMEM;
	st->ranges[2 * st->nr_ranges] = start;
	st->ranges[2 * st->nr_ranges + 1] = end;
	st->nr_ranges++;
	return 0;
}

/* ---- units ---- */

/* The index of the unit of key, created when new; -1 on allocation failure. */
int64_t unit_get(struct nway *st, const char *key)
{
	struct unit *u;
	uint32_t slot = 0;
	int64_t i = strategy_index_find(&st->index, &st->index_cap, st->units, sizeof(*st->units),
					offsetof(struct unit, key), st->nr_units, key, &slot);

	if (i != -1)
		return i >= 0 ? i : -1;
	if (grow_array((void **)&st->units, &st->cap_units, st->nr_units + 1, sizeof(*st->units)))
		return -1;
	u = &st->units[st->nr_units];
	memset(u, 0, sizeof(*u));
	u->key = strdup(key);
	if (!u->key)
		return -1;
	u->born_plan = st->nr_plans + 1;
	st->index[slot] = st->nr_units + 1;
	return st->nr_units++;
}

static int is_site_kind(const struct ameba_object *o)
{
	return (o->kind == AMEBA_OBJ_HEAP || o->kind == AMEBA_OBJ_MMAP) && o->site;
}

static int obj_usable(const struct ameba_object *o)
{
	return o->live && o->kind != AMEBA_OBJ_OTHER && o->end > o->start;
}

/* Is object i merged into the range of object i - 1 (same unit, adjacent)? */
static int merges(const struct nway *st, uint32_t i)
{
	const struct ameba_object *o = st->host->objects;

	return i > 0 && st->obj_unit[i] && st->obj_unit[i - 1] == st->obj_unit[i] &&
	       o[i].start - o[i - 1].end <= ADJACENT_GAP;
}

/* The host's bin named name, or NULL. */
const struct ameba_object *host_bin(const struct ameba_host *h, const char *name)
{
	for (uint32_t b = 0; b < h->nr_bins; b++)
		if (ameba_host_bin(h, b)->name && !strcmp(ameba_host_bin(h, b)->name, name))
			return ameba_host_bin(h, b);
	return NULL;
}

/*
 * The units apart from the address space (Notes), after the objects were
 * mapped: every site bin of the host with blocks ever allocated but none
 * live in this listing, or CHURN_FACTOR times more than live, becomes (and
 * stays) apart; the kind units are apart
 * from their creation. An apart site whose name is no bin any more (a
 * later site with the same first frame deepened it into "name <- caller"
 * bins) retires: its deeper bins are units of their own. Each apart unit
 * is measured by its bin and counts as live (nr_live >= 1). Also collects
 * the exception list: the bins of the apart units.
 */
static int units_apart(struct nway *st)
{
	const struct ameba_host *h = st->host;
	char key[4200];

	st->nr_xnames = 0;
	if (!st->use_bins)
		return 0;
	for (uint32_t b = 0; b < h->nr_bins; b++) {
		const struct ameba_object *hb = ameba_host_bin(h, b);
		int64_t u;

		if (st->kinds_apart && hb->name &&
		    (hb->kind == AMEBA_OBJ_STACK || hb->kind == AMEBA_OBJ_TLS)) {
			/* also with none listed: the threads may all be gone */
			snprintf(key, sizeof(key), "k:%s", hb->name);
			u = unit_get(st, key);
			if (u < 0)
				return AMEBA_ENOMEM;
			st->units[u].apart = 1;
			continue;
		}
		if (hb->kind != AMEBA_OBJ_BIN || !hb->name || !hb->nr_blocks)
			continue;
		snprintf(key, sizeof(key), "s:%s", hb->name);
		u = unit_get(st, key);
		if (u < 0)
			return AMEBA_ENOMEM;
		/* no live block, or short-lived ones: far more blocks allocated
		 * than alive (wl_thread_churn's scratch buffers: 4 alive of
		 * hundreds by the time a listing sees them) */
		if (!st->units[u].apart && (!st->units[u].nr_live ||
		    hb->nr_blocks >= CHURN_FACTOR * ((uint64_t)st->units[u].nr_live + 2))) {
			st->units[u].apart = 1;
			st->units[u].apart_plan = st->nr_plans + 1;
		}
	}
	for (uint32_t u = 0; u < st->nr_units; u++) {
		struct unit *un = &st->units[u];
		const struct ameba_object *hb;

		if (!un->apart || un->retired)
			continue;
		hb = host_bin(h, un->key + 2);
		if (!hb && un->key[0] == 's') {
			un->retired = 1;
			un->nr_live = 0;
			continue;
		}
		if (!hb)
			continue;	/* a kind bin the host no longer lists: cannot be */
		un->bin = hb->name;
		un->bin_blocks = hb->nr_blocks;
		un->bin_bytes = hb->sz_bytes;
		if (!un->nr_live) {
			un->nr_live = 1;
			un->live_bytes = hb->sz_bytes ? hb->sz_bytes : 1;
		}
		if (grow_array((void **)&st->xnames, &st->cap_xnames, st->nr_xnames + 1,
			       sizeof(*st->xnames)))
			return AMEBA_ENOMEM;
		st->xnames[st->nr_xnames++] = un->key + 2;
	}
	return 0;
}

/*
 * Site labels that a later site deepened: the agent's table keeps the label
 * an object had when it was listed ("allocate@new_allocator.h:137"), the host's
 * bins have the names the oracle has at exit ("... <- main@cxx.cpp:140",
 * "... <- main@cxx.cpp:141"), and which of them a stale-labelled block is
 * cannot be told. Such a unit retires (its blocks map to no unit), and the
 * bins it became are made units apart: measured by bin, which counts every
 * block of theirs whatever its label, and left out of the spans.
 */
static int units_stale(struct nway *st)
{
	const struct ameba_host *h = st->host;
	char key[4200];

	if (!st->use_bins || !h->nr_bins)
		return 0;
	for (uint32_t u = 0; u < st->nr_units; u++) {
		const char *name = st->units[u].key + 2;
		size_t len = strlen(name);
		int deeper = 0;

		if (st->units[u].key[0] != 's' || st->units[u].retired || host_bin(h, name))
			continue;
		for (uint32_t b = 0; b < h->nr_bins; b++) {
			const char *bn = ameba_host_bin(h, b)->name;
			int64_t d;

			if (!bn || strncmp(bn, name, len) || strncmp(bn + len, " <- ", 4))
				continue;
			snprintf(key, sizeof(key), "s:%s", bn);
			d = unit_get(st, key);
			if (d < 0)
				return AMEBA_ENOMEM;
			if (!st->units[d].apart)
				st->units[d].apart_plan = st->nr_plans + 1;
			st->units[d].apart = 1;
			deeper = 1;
		}
		if (deeper && !st->units[u].found)
			st->units[u].retired = 1;
	}
	return 0;
}

/* Maps the host's objects to units and collects every unit's ranges. */
int units_refresh(struct nway *st)
{
	const struct ameba_host *h = st->host;
	char key[4200];
	uint32_t total = 0;

	if (grow_array((void **)&st->obj_unit, &st->cap_obj_unit, h->nr_objects + 1,
		       sizeof(*st->obj_unit)))
		return AMEBA_ENOMEM;
	for (uint32_t u = 0; u < st->nr_units; u++) {
		struct unit *un = &st->units[u];

		un->nr_live = un->is_line;
		un->live_bytes = un->is_line ? LINE_BYTES : 0;
		un->nr_ranges = 0;
		un->hull = 0;
		un->bin = NULL;
		un->owner = 0;
		if (un->is_line) {
			un->lo = un->obj.start;
			un->hi = un->obj.end;
		}
	}
	if (units_stale(st))
		return AMEBA_ENOMEM;
	st->kinds_apart = 0;
	if (st->use_bins)
		for (uint32_t b = 0; b < h->nr_bins; b++)
			st->kinds_apart |= ameba_host_bin(h, b)->kind == AMEBA_OBJ_STACK ||
					   ameba_host_bin(h, b)->kind == AMEBA_OBJ_TLS;
	for (uint32_t i = 0; i < h->nr_objects; i++) {
		const struct ameba_object *o = ameba_host_object(h, i);
		int kind_bin = st->kinds_apart && (o->kind == AMEBA_OBJ_STACK || o->kind == AMEBA_OBJ_TLS);
		struct unit *un;
		int64_t u;

		st->obj_unit[i] = 0;
		if (!obj_usable(o))
			continue;
		if (kind_bin)
			snprintf(key, sizeof(key), "k:%s", o->kind == AMEBA_OBJ_STACK ? "[stack]" : "[tls]");
		else if (is_site_kind(o))
			snprintf(key, sizeof(key), "s:%s", o->site);
		else
			snprintf(key, sizeof(key), "o:%llu", (unsigned long long)o->id);
		u = unit_get(st, key);
		if (u < 0)
			return AMEBA_ENOMEM;
		un = &st->units[u];
		if (un->retired)
			continue;	/* a stale label: its blocks are its deeper bins' */
		if (kind_bin || un->apart) {
			/* apart: counted for the unit, in no span */
			un->apart = 1;
			un->nr_live++;
			un->live_bytes += o->sz_bytes ? o->sz_bytes : o->end - o->start;
			continue;
		}
		st->obj_unit[i] = (uint32_t)u + 1;
		if (!un->nr_live) {
			un->lo = o->start;
			un->hi = o->end;
			un->obj_first = i;
		}
		un->nr_live++;
		un->live_bytes += o->sz_bytes ? o->sz_bytes : o->end - o->start;
		un->lo = o->start < un->lo ? o->start : un->lo;
		un->hi = o->end > un->hi ? o->end : un->hi;
		if (!merges(st, i))
			un->nr_ranges++;
	}
	if (units_apart(st))
		return AMEBA_ENOMEM;
	/* offsets into the unit range table (st->ranges is rebuilt per plan:
	 * the unit table goes first) */
	st->nr_ranges = 0;
	for (uint32_t u = 0; u < st->nr_units; u++) {
		struct unit *un = &st->units[u];

		if (un->apart) {
			un->range_off = total;
			un->nr_ranges = 0;
			continue;
		}
		/*
		 * A site with several blocks: its bin, resolved by the monitor
		 * per access, counts every block whole (new ones too) for no
		 * ranges, where ranges would list 10^5 interleaved blocks or
		 * fall back to an overlapping hull.
		 */
		if (st->use_bins && un->key[0] == 's' && un->nr_live) {
			const char *site = un->key + 2;

			/* a site that allocated more than once (in all: short-lived
			 * blocks come and go between listings, wl_thread_churn's
			 * scratch buffers, 4 live of 10,000) */
			for (uint32_t b = 0; b < h->nr_bins && !un->bin; b++)
				if (ameba_host_bin(h, b)->name && !strcmp(ameba_host_bin(h, b)->name, site) &&
				    (un->nr_live > 1 || ameba_host_bin(h, b)->nr_blocks > 1))
					un->bin = ameba_host_bin(h, b)->name;
			if (un->bin) {
				un->range_off = total;
				un->nr_ranges = 0;
				continue;
			}
		}
		if (un->nr_live && un->nr_ranges > st->max_ranges / 4) {
			un->hull = 1;
			un->nr_ranges = 1;
		}
		if (un->is_line)
			un->nr_ranges = 1;
		un->range_off = total;
		total += un->nr_ranges;
	}
	if (grow_array((void **)&st->ranges, &st->cap_ranges, 2 * (total + 1), sizeof(*st->ranges)))
		return AMEBA_ENOMEM;
	for (uint32_t u = 0; u < st->nr_units; u++) {
		struct unit *un = &st->units[u];

		if (un->hull || un->is_line) {
			st->ranges[2 * un->range_off] = un->lo;
			st->ranges[2 * un->range_off + 1] = un->hi;
		}
		un->nr_ranges = un->hull || un->is_line ? un->nr_ranges : 0;
	}
	for (uint32_t i = 0; i < h->nr_objects; i++) {
		uint32_t u = st->obj_unit[i];
		struct unit *un;
		uint32_t r;

		if (!u)
			continue;
		un = &st->units[u - 1];
		if (un->hull || un->bin)
			continue;
		if (merges(st, i)) {
			r = un->range_off + un->nr_ranges - 1;
			st->ranges[2 * r + 1] = ameba_host_object(h, i)->end;
			continue;
		}
		r = un->range_off + un->nr_ranges++;
		st->ranges[2 * r] = ameba_host_object(h, i)->start;
		st->ranges[2 * r + 1] = ameba_host_object(h, i)->end;
	}
	st->nr_ranges = total;
	return 0;
}

/* The presentation of unit u: its single object, its bin, or its line. */
int unit_describe(struct nway *st, uint32_t u)
{
	struct unit *un = &st->units[u];
	const struct ameba_host *h = st->host;
	struct ameba_object o;
	char *name, *site;

	if (un->is_line || !un->nr_live)
		return 0;
	if (un->apart) {
		/* by its bin: the oracle's bin, named as the host names it now */
		memset(&o, 0, sizeof(o));
		o.kind = un->key[0] == 'k' ? (un->key[3] == 's' ? AMEBA_OBJ_STACK : AMEBA_OBJ_TLS) :
			 AMEBA_OBJ_BIN;
		o.name = un->key + 2;
		o.site = o.kind == AMEBA_OBJ_BIN ? o.name : NULL;
		/* a kind bin has no count of its own: its live blocks' */
		o.sz_bytes = un->bin_bytes ? un->bin_bytes : un->live_bytes;
		o.nr_blocks = un->bin_blocks ? (uint32_t)un->bin_blocks : un->nr_live;
		o.live = 1;
		for (uint32_t b = 0; b < h->nr_bins; b++)
			if (ameba_host_bin(h, b)->name && !strcmp(ameba_host_bin(h, b)->name, o.name)) {
				o.id = ameba_host_bin(h, b)->id;
				break;
			}
	} else {
		o = *ameba_host_object(h, un->obj_first);
	}
	if (!un->apart && un->key[0] == 's' && un->nr_live > 1) {
		memset(&o, 0, sizeof(o));
		o.kind = AMEBA_OBJ_BIN;
		o.name = ameba_host_object(h, un->obj_first)->site;
		o.site = o.name;
		o.start = un->lo;
		o.end = un->hi;
		o.sz_bytes = un->live_bytes;
		o.nr_blocks = un->nr_live;
		o.live = 1;
		for (uint32_t b = 0; b < h->nr_bins; b++)
			if (ameba_host_bin(h, b)->name && !strcmp(ameba_host_bin(h, b)->name, o.name)) {
				o.id = ameba_host_bin(h, b)->id;
				break;
			}
	}
	name = strdup(o.name ? o.name : "?");
	site = o.site ? strdup(o.site) : NULL;
	if (!name || (o.site && !site)) {
		free(name);
		free(site);
		return AMEBA_ENOMEM;
	}
	free((char *)un->obj.name);
	free((char *)un->obj.site);
	un->obj = o;
	un->obj.name = name;
	un->obj.site = site;
	return 0;
}

/* A unit for the cache line at addr (memory outside every object). */
int64_t line_unit(struct nway *st, uintptr_t addr)
{
	char key[40];
	int64_t u;
	struct unit *un;

	snprintf(key, sizeof(key), "l:%lx", (unsigned long)addr);
	u = unit_get(st, key);
	if (u < 0)
		return -1;
	un = &st->units[u];
	if (!un->is_line) {
		un->is_line = 1;
		un->line_name = malloc(40);
		if (!un->line_name)
			return -1;
		snprintf(un->line_name, 40, "[line 0x%lx]", (unsigned long)addr);
		un->obj.kind = AMEBA_OBJ_OTHER;
		un->obj.name = un->line_name;
		un->obj.start = addr;
		un->obj.end = addr + LINE_BYTES;
		un->obj.sz_bytes = LINE_BYTES;
		un->obj.nr_blocks = 1;
		un->obj.live = 1;
		un->nr_live = 1;
		un->live_bytes = LINE_BYTES;
		un->lo = addr;
		un->hi = addr + LINE_BYTES;
	}
	return u;
}

/* Index of the first object whose end is above addr. */
uint32_t obj_first_after(const struct ameba_host *h, uintptr_t addr)
{
	uint32_t lo = 0, hi = h->nr_objects;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ameba_host_object(h, mid)->end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The usable object containing addr strictly inside (start < addr < end), or NULL. */
const struct ameba_object *obj_across(const struct nway *st, uintptr_t addr)
{
	const struct ameba_host *h = st->host;
	uint32_t i = obj_first_after(h, addr);

	for (; i < h->nr_objects && ameba_host_object(h, i)->start < addr; i++)
		if (st->obj_unit[i] && ameba_host_object(h, i)->start < addr && addr < ameba_host_object(h, i)->end)
			return ameba_host_object(h, i);
	return NULL;
}

/*
 * The distinct units with an object in [s, e), not found yet, up to max + 1
 * of them, into out; *multi says whether one is a site with several blocks.
 */
uint32_t span_units(const struct nway *st, uintptr_t s, uintptr_t e, uint32_t *out,
		    uint32_t max, int *multi)
{
	const struct ameba_host *h = st->host;
	uint32_t n = 0;

	*multi = 0;
	for (uint32_t i = obj_first_after(h, s); i < h->nr_objects && ameba_host_object(h, i)->start < e; i++) {
		uint32_t u = st->obj_unit[i], k;

		if (!u || st->units[u - 1].found)
			continue;
		for (k = 0; k < n && out[k] != u - 1; k++)
			;
		if (k < n)
			continue;
		if (n == max + 1)
			break;
		out[n++] = u - 1;
		*multi |= st->units[u - 1].key[0] == 's' && st->units[u - 1].nr_live > 1;
	}
	return n;
}

/* Emits [s, e) minus the objects of found units, as ranges; their count. */
static int span_emit(struct nway *st, uintptr_t s, uintptr_t e, uint32_t *nr)
{
	const struct ameba_host *h = st->host;
	uintptr_t at = s;
	uint32_t before = st->nr_ranges;

	for (uint32_t i = obj_first_after(h, s); i < h->nr_objects && ameba_host_object(h, i)->start < e; i++) {
		uint32_t u = st->obj_unit[i];
		uintptr_t os = ameba_host_object(h, i)->start, oe = ameba_host_object(h, i)->end;

		if (!u || !st->units[u - 1].found)
			continue;
		if (os > at && ranges_push(st, at, os))
			return AMEBA_ENOMEM;
		if (oe > at)
			at = oe;
	}
	if (at < e && ranges_push(st, at, e))
		return AMEBA_ENOMEM;
	*nr = st->nr_ranges - before;
	return 0;
}

int unit_emit(struct nway *st, uint32_t u, uint32_t *nr)
{
	const struct unit *un = &st->units[u];

	if (un->bin) {
		/* taken by the next counter_add() (bn_mark) */
		if (grow_array((void **)&st->bnames, &st->cap_bnames, st->nr_bnames + 1,
			       sizeof(*st->bnames)))
			return AMEBA_ENOMEM;
		st->bnames[st->nr_bnames++] = un->bin;
		return 0;
	}

	for (uint32_t r = 0; r < un->nr_ranges; r++) {
		uintptr_t a = st->ranges[2 * (un->range_off + r)];
		uintptr_t b = st->ranges[2 * (un->range_off + r) + 1];

		if (ranges_push(st, a, b))
			return AMEBA_ENOMEM;
	}
	*nr += un->nr_ranges;
	return 0;
}

int region_emit(struct nway *st, const struct region *r, uint32_t *off, uint32_t *nr)
{
	*off = st->nr_ranges;
	*nr = 0;
	if (r->kind == R_SPAN)
		return span_emit(st, r->start, r->end, nr);
	if (r->kind == R_UNIT)
		return unit_emit(st, r->unit, nr);
	for (uint32_t k = 0; k < r->nr_set; k++)
		if (unit_emit(st, r->set[k], nr))
			return AMEBA_ENOMEM;
	return 0;
}

int region_single(const struct region *r)
{
	return r->kind == R_UNIT;
}

void region_free(struct region *r)
{
	free(r->set);
	r->set = NULL;
	r->nr_set = 0;
}

/* Does region r hold any object (or is it a line)? */
int region_has_objects(const struct nway *st, const struct region *r)
{
	uint32_t tmp[2];
	int multi;

	if (r->kind != R_SPAN)
		return 1;
	return span_units(st, r->start, r->end, tmp, 0, &multi) > 0;
}
