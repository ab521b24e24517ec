/*
 * nway_queue.c - the nway strategy: the priority queue of regions:
 * seeding, re-ranking, splitting.
 * The algorithm and its invariants: the Notes of nway.c.
 */
#include "nway_int.h"

/* ---- the queue ---- */

int q_push(struct search *s, const struct region *r)
{
	if (grow_array((void **)&s->q, &s->cap_q, s->nr_q + 1, sizeof(*s->q)))
		return AMEBA_ENOMEM;
	s->q[s->nr_q++] = *r;
	return 0;
}

static int cmp_share(const void *a, const void *b)
{
	const struct region *x = a, *y = b;

	if (x->share != y->share)
		return (x->share < y->share) - (x->share > y->share);
	/* ties: singles first, then lower addresses (deterministic) */
	if (region_single(x) != region_single(y))
		return region_single(y) - region_single(x);
	return (x->start > y->start) - (x->start < y->start);
}

void q_compact(struct search *s)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < s->nr_q; i++) {
		if (s->q[i].dead)
			region_free(&s->q[i]);
		else
			s->q[k++] = s->q[i];
	}
	s->nr_q = k;
	qsort(s->q, s->nr_q, sizeof(*s->q), cmp_share);
}

/* What r holds changed: it is measured as is next, its own counts from zero. */
static void region_remeasure(struct region *r)
{
	r->fresh = 1;
	r->nr_meas = 0;
	r->sum_v = r->sum_t = 0;
	r->sum_ns = 0;
}

/*
 * Puts the units apart that search s never queued into its apart set (a
 * new one when it has none left): measured as is next, then split by unit
 * as any set. A unit queued once and dropped (it counted nothing) is not
 * queued again: a site freed long ago would be measured for ever.
 */
static int search_apart(struct nway *st, struct search *s)
{
	uint64_t bit = 1ull << ((uint32_t)(s - st->searches) % 64);
	struct region *ap = NULL, r;
	uint32_t nr = 0;

	for (uint32_t u = 0; u < st->nr_units; u++) {
		struct unit *un = &st->units[u];

		if (!un->apart || un->retired || un->found || (un->queued & bit) || !un->bin ||
		    un->owner)
			continue;
		if (!ap) {
			for (uint32_t i = 0; i < s->nr_q && !ap; i++)
				if (s->q[i].apart && s->q[i].kind == R_SET && !s->q[i].dead)
					ap = &s->q[i];
			if (!ap) {
				memset(&r, 0, sizeof(r));
				r.kind = R_SET;
				r.apart = 1;
				r.start = UINTPTR_MAX;	/* ties: after the spans */
				r.share = 1.0 / st->n;
				if (q_push(s, &r))
					return AMEBA_ENOMEM;
				ap = &s->q[s->nr_q - 1];
			}
		}
		if (grow_array((void **)&ap->set, &nr, ap->nr_set + 1, sizeof(*ap->set)))
			return AMEBA_ENOMEM;
		ap->set[ap->nr_set++] = u;
		un->queued |= bit;
		region_remeasure(ap);
		ap->protect = 0;	/* quiet when first measured: dropped */
		un->owner = (uint32_t)(ap - s->q) + 1;
	}
	/* one unit: a unit region */
	if (ap && ap->nr_set == 1) {
		ap->kind = R_UNIT;
		ap->unit = ap->set[0];
		region_free(ap);
	}
	return 0;
}

/*
 * How much of a newcomer (Notes) unit u is: 0 for none; else blocks its
 * site allocated since the search's round began, plus 2^40 when the unit
 * was first listed since (those rank first, newest first, by born_plan).
 */
static uint64_t newcomer_rank(const struct nway *st, uint32_t u)
{
	const struct unit *un = &st->units[u];
	const struct ameba_object *hb;

	if (un->found || un->retired || un->is_line || !un->nr_live || un->key[0] != 's')
		return 0;
	hb = host_bin(st->host, un->key + 2);
	if (!hb)
		return 0;
	if (un->born_plan > st->round_plan)
		return (1ull << 40) + ((uint64_t)un->born_plan << 20) +
		       (hb->nr_blocks < (1u << 20) ? hb->nr_blocks : (1u << 20) - 1);
	/* nr_blocks is 32 bits: under 2^40 */
	return hb->nr_blocks > un->round_blocks ? hb->nr_blocks - un->round_blocks : 0;
}

/*
 * The newcomers (Notes), at most max into out: site units, not found, that
 * the host has a bin for, first listed since the search's round began
 * (newest first, then by blocks allocated), then those whose site
 * allocated again since (most blocks first).
 */
uint32_t newcomers(const struct nway *st, uint32_t *out, uint32_t max)
{
	uint64_t rank[MAX_WATCH];
	uint32_t nr = 0;

	max = max < MAX_WATCH ? max : MAX_WATCH;
	for (uint32_t u = 0; u < st->nr_units && max; u++) {
		uint64_t v = newcomer_rank(st, u);
		uint32_t k;

		if (!v)
			continue;
		/* insertion into the sorted few */
		for (k = nr; k > 0 && rank[k - 1] < v; k--)
			if (k < max) {
				out[k] = out[k - 1];
				rank[k] = rank[k - 1];
			}
		if (k < max) {
			out[k] = u;
			rank[k] = v;
			nr += nr < max;
		}
	}
	return nr;
}

/* Unit u is measured by its bin from now on, in no span (units apart). */
void unit_apart_now(struct nway *st, uint32_t u)
{
	struct unit *un = &st->units[u];
	const struct ameba_object *hb = host_bin(st->host, un->key + 2);

	un->apart = 1;
	if (hb) {
		un->bin = hb->name;
		un->bin_blocks = hb->nr_blocks;
		un->bin_bytes = hb->sz_bytes;
	}
}

/*
 * A rescan's first plan: the newcomers that no final interval counted (first
 * listed in the interval that showed the new phase) are measured first too,
 * each as a unit by its bin, apart from the spans from now on (Notes).
 */
static int search_newcomers(struct nway *st, struct search *s)
{
	uint64_t bit = 1ull << ((uint32_t)(s - st->searches) % 64);
	uint32_t nc[MAX_WATCH], nr = newcomers(st, nc, st->n / 2 < MAX_WATCH ? st->n / 2 : MAX_WATCH);

	for (uint32_t i = 0; i < nr; i++) {
		struct unit *un = &st->units[nc[i]];
		struct region r;

		if (un->queued & bit)
			continue;	/* seeded with its count already */
		memset(&r, 0, sizeof(r));
		r.kind = R_UNIT;
		r.unit = nc[i];
		r.share = 1.0 / st->n;
		r.fresh = 1;
		if (q_push(s, &r) ||
		    grow_array((void **)&st->xnames, &st->cap_xnames, st->nr_xnames + 1,
			       sizeof(*st->xnames)))
			return AMEBA_ENOMEM;
		unit_apart_now(st, nc[i]);
		un->queued |= bit;
		un->owner = s->nr_q;
		/* the spans leave its blocks out from this interval on */
		st->xnames[st->nr_xnames++] = un->key + 2;
		if (unit_describe(st, nc[i]))
			return AMEBA_ENOMEM;
	}
	return 0;
}

/* The initial n regions: the hull of all objects in n equal parts. */
int search_init(struct nway *st, struct search *s)
{
	const struct ameba_host *h = st->host;
	uintptr_t lo = UINTPTR_MAX, hi = 0, prev = 0;

	for (uint32_t i = 0; i < h->nr_objects; i++)
		if (st->obj_unit[i]) {
			lo = ameba_host_object(h, i)->start < lo ? ameba_host_object(h, i)->start : lo;
			hi = ameba_host_object(h, i)->end > hi ? ameba_host_object(h, i)->end : hi;
		}
	s->started = 1;
	for (uint32_t u = 0; u < st->nr_units; u++)
		st->units[u].queued &= ~(1ull << ((uint32_t)(s - st->searches) % 64));
	/* a rescan's newcomers, queued already (rescan_check) */
	for (uint32_t i = 0; i < s->nr_q; i++)
		if (s->q[i].kind == R_UNIT) {
			st->units[s->q[i].unit].queued |= 1ull << ((uint32_t)(s - st->searches) % 64);
			st->units[s->q[i].unit].owner = i + 1;
		}
	if (st->nr_rescans && s->round == st->rescan_round && search_newcomers(st, s))
		return AMEBA_ENOMEM;
	if (lo >= hi) {
		lo = 0;
		hi = UINTPTR_MAX;
	}
	for (uint32_t k = 1; k <= st->n; k++) {
		struct region r;
		uintptr_t b = k == st->n ? UINTPTR_MAX : lo + (hi - lo) / st->n * k;

		if (k < st->n) {
			const struct ameba_object *o = obj_across(st, b);

			if (o)
				b = b - o->start <= o->end - b ? o->start : o->end;
		}
		if (b <= prev)
			continue;
		memset(&r, 0, sizeof(r));
		r.kind = R_SPAN;
		r.start = prev;
		r.end = b;
		r.share = 1.0 / st->n;
		r.fresh = 1;
		r.protect = 1;	/* all of the search: as if ranked on top */
		if (q_push(s, &r))
			return AMEBA_ENOMEM;
		prev = b;
	}
	st->round_plan = st->nr_plans + 1;	/* what is listed now, these spans cover */
	for (uint32_t u = 0; u < st->nr_units; u++) {
		const struct ameba_object *hb = st->units[u].key[0] == 's' ?
						host_bin(h, st->units[u].key + 2) : NULL;

		st->units[u].round_blocks = hb ? hb->nr_blocks : 0;
	}
	return search_apart(st, s);
}

/*
 * Resolution before each plan: spans holding one unit become that unit,
 * spans of few units with interleaved site blocks become sets, and every
 * unit has at most one owner in the queue (a later duplicate is dropped).
 */
int search_resolve(struct nway *st, struct search *s)
{
	uint32_t buf[64];

	for (uint32_t u = 0; u < st->nr_units; u++)
		st->units[u].owner = 0;
	for (uint32_t i = 0; i < s->nr_q; i++) {
		struct region *r = &s->q[i];

		if (r->kind != R_UNIT)
			continue;
		if (st->units[r->unit].found || !st->units[r->unit].nr_live ||
		    st->units[r->unit].owner) {
			r->dead = 1;
			continue;
		}
		st->units[r->unit].owner = i + 1;
		if (st->units[r->unit].apart_plan == st->nr_plans + 1 && r->nr_meas + r->zero_streak) {
			/* measured on its few live blocks' ranges until now, by
			 * its bin from now on: the old estimate says nothing
			 * (wl_thread_churn's scratch buffers: 0.35% on 4
			 * blocks, 69% by bin); measured again first */
			region_remeasure(r);
			r->zero_streak = 0;
			r->zero_ns = 0;
			r->share = r->share > 1.0 / st->n ? r->share : 1.0 / st->n;
		}
	}
	for (uint32_t i = 0; i < s->nr_q; i++) {
		struct region *r = &s->q[i];
		uint32_t k = 0;

		if (r->kind != R_SET || r->dead)
			continue;
		for (uint32_t j = 0; j < r->nr_set; j++) {
			struct unit *un = &st->units[r->set[j]];

			if (!un->found && un->nr_live && !un->owner) {
				un->owner = i + 1;
				r->set[k++] = r->set[j];
			}
		}
		r->nr_set = k;
		if (k == 0)
			r->dead = 1;
		else if (k == 1) {
			r->kind = R_UNIT;
			r->unit = r->set[0];
			region_free(r);
			r->nr_meas = 0;
			r->fresh = 1;
		}
	}
	for (uint32_t i = 0; i < s->nr_q; i++) {
		struct region *r = &s->q[i];
		uint32_t max = st->group < 63 ? st->group : 63, nr, k = 0;
		int multi;

		if (r->kind != R_SPAN || r->dead)
			continue;
		nr = span_units(st, r->start, r->end, buf, max, &multi);
		if (nr == 0) {
			if (r->end - r->start <= LINE_BYTES) {
				int64_t u = line_unit(st, r->start);

				if (u < 0)
					return AMEBA_ENOMEM;
				r->kind = R_UNIT;
				r->unit = (uint32_t)u;
				r->fresh = 1;
			}
			continue;
		}
		if (nr > 1 && !(nr <= max && multi))
			continue;
		for (uint32_t j = 0; j < nr; j++)
			if (!st->units[buf[j]].owner)
				buf[k++] = buf[j];
		if (k == 0) {
			r->dead = 1;
			continue;
		}
		for (uint32_t j = 0; j < k; j++)
			st->units[buf[j]].owner = i + 1;
		region_remeasure(r);
		if (k == 1) {
			r->kind = R_UNIT;
			r->unit = buf[0];
		} else {
			r->kind = R_SET;
			r->set = malloc(k * sizeof(*r->set));
			if (!r->set)
				return AMEBA_ENOMEM;
			memcpy(r->set, buf, k * sizeof(*r->set));
			r->nr_set = k;
		}
	}
	if (search_apart(st, s))
		return AMEBA_ENOMEM;
	q_compact(s);
	/* names for the progress line and the contexts, while the tables are valid */
	for (uint32_t i = 0; i < s->nr_q; i++)
		if (s->q[i].kind == R_UNIT && unit_describe(st, s->q[i].unit))
			return AMEBA_ENOMEM;
	return 0;
}

/* Splits r into two halves a and b; 0, or 1 when r cannot be split. */
int region_split(struct nway *st, const struct region *r, struct region *a,
		 struct region *b)
{
	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	a->protect = b->protect = 1;
	if (r->kind == R_SET) {
		uint64_t total = 0, acc = 0;
		uint32_t cut = 1;

		/* halves by bytes, in address order of the units */
		for (uint32_t k = 0; k < r->nr_set; k++)
			total += st->units[r->set[k]].live_bytes;
		for (uint32_t k = 0; k + 1 < r->nr_set; k++) {
			acc += st->units[r->set[k]].live_bytes;
			cut = k + 1;
			if (2 * acc >= total)
				break;
		}
		a->kind = b->kind = R_SET;
		a->set = malloc(cut * sizeof(*a->set));
		b->set = malloc((r->nr_set - cut) * sizeof(*b->set));
		if (!a->set || !b->set) {
			region_free(a);
			region_free(b);
			return AMEBA_ENOMEM;
		}
		memcpy(a->set, r->set, cut * sizeof(*a->set));
		memcpy(b->set, r->set + cut, (r->nr_set - cut) * sizeof(*b->set));
		a->nr_set = cut;
		b->nr_set = r->nr_set - cut;
		if (a->nr_set == 1) {
			a->kind = R_UNIT;
			a->unit = a->set[0];
			region_free(a);
		}
		if (b->nr_set == 1) {
			b->kind = R_UNIT;
			b->unit = b->set[0];
			region_free(b);
		}
		return 0;
	}
	if (r->kind != R_SPAN)
		return 1;
	{
		const struct ameba_host *h = st->host;
		uintptr_t lo = 0, hi = 0, mid;
		int any = 0;

		for (uint32_t i = obj_first_after(h, r->start);
		     i < h->nr_objects && ameba_host_object(h, i)->start < r->end; i++) {
			uintptr_t os = ameba_host_object(h, i)->start, oe = ameba_host_object(h, i)->end;

			if (!st->obj_unit[i] || st->units[st->obj_unit[i] - 1].found)
				continue;
			os = os < r->start ? r->start : os;
			oe = oe > r->end ? r->end : oe;
			if (!any)
				lo = os;
			hi = oe > hi ? oe : hi;
			any = 1;
		}
		if (!any) {
			lo = r->start;
			hi = r->end;
		}
		mid = lo + (hi - lo) / 2;
		if (!any && hi - lo > LINE_BYTES)
			mid &= ~(uintptr_t)(LINE_BYTES - 1);
		if (any) {
			const struct ameba_object *o = obj_across(st, mid);

			if (o) {
				uintptr_t near = mid - o->start <= o->end - mid ? o->start : o->end;
				uintptr_t far = near == o->start ? o->end : o->start;

				if (near <= lo || near >= hi)
					near = far;
				if (near > lo && near < hi)
					mid = near;
			}
		}
		if (mid <= r->start || mid >= r->end)
			return 1;
		a->kind = b->kind = R_SPAN;
		a->start = r->start;
		a->end = mid;
		b->start = mid;
		b->end = r->end;
	}
	return 0;
}
