/*
 * nway_plan.c - the nway strategy: planning an interval: slots,
 * counters, the final measurement.
 * The algorithm and its invariants: the Notes of nway.c.
 */
#include "nway_int.h"

/* ---- planning ---- */

static int slot_add(struct search *s, int type, uint32_t qi, const struct region *child)
{
	struct slot *sl;

	if (grow_array((void **)&s->slots, &s->cap_slots, s->nr_slots + 1, sizeof(*s->slots)))
		return AMEBA_ENOMEM;
	sl = &s->slots[s->nr_slots++];
	memset(sl, 0, sizeof(*sl));
	sl->type = type;
	sl->qi = qi;
	if (child)
		sl->child = *child;
	return 0;
}

void slots_clear(struct search *s)
{
	for (uint32_t i = 0; i < s->nr_slots; i++)
		if (s->slots[i].type == SLOT_CHILD)
			region_free(&s->slots[i].child);
	s->nr_slots = 0;
}

static int found_add(struct nway *st, struct search *s, uint32_t u, double share, double v,
		     double t, uint64_t ns)
{
	struct found *f;
	uint64_t bit = s->thread < 0 ? 1ull << 63 : 1ull << (s->thread % 63);

	for (uint32_t i = 0; i < st->nr_found; i++)
		if (st->found[i].unit == u) {
			st->found[i].found_by |= bit;
			return 0;
		}
	if (grow_array((void **)&st->found, &st->cap_found, st->nr_found + 1, sizeof(*st->found)))
		return AMEBA_ENOMEM;
	f = &st->found[st->nr_found];
	memset(f, 0, sizeof(*f));
	f->unit = u;
	f->round = s->round;
	f->search_share = share;
	f->search_v = v;
	f->search_t = t;
	f->search_ns = ns;
	f->found_by = bit;
	for (uint32_t k = 0; k < st->nr_metrics; k++) {
		int m = st->metrics[k];

		if (st->nr_threads_cap && (strategy_grow_pt(&f->pt[m], 0, st->nr_threads_cap) ||
					   strategy_grow_pt(&f->program_pt[m], 0, st->nr_threads_cap)))
			return AMEBA_ENOMEM;
	}
	st->units[u].found = 1;
	if (unit_describe(st, u))
		return AMEBA_ENOMEM;
	st->nr_found++;
	return 0;
}

/*
 * Ends the current round of search s: the singles among the top n regions
 * are found. With more=1 the search goes on into what is left.
 */
static int search_terminate(struct nway *st, struct search *s, int why)
{
	uint32_t nr = 0;
	double left = 0;

	s->ended_by = why;
	for (uint32_t i = 0; i < s->nr_q && i < st->n && nr < st->n; i++) {
		struct region *r = &s->q[i];

		if (!region_single(r) || !r->nr_meas || r->share <= 0)
			continue;
		if (found_add(st, s, r->unit, r->share, r->sum_v, r->sum_t, r->sum_ns))
			return AMEBA_ENOMEM;
		r->dead = 1;
		nr++;
	}
	q_compact(s);
	for (uint32_t i = 0; i < s->nr_q; i++)
		left += s->q[i].share;
	st->host->log(st->host, "search%s round %u ended (%s): %u objects found, %.1f%% left",
		      s->who, s->round + 1, nway_end_names[why], nr, 100 * left);
	if (st->more && nr && s->nr_q && left >= st->unsearched &&
	    s->nr_intervals < st->max_intervals) {
		s->round++;
		for (uint32_t i = 0; i < s->nr_q; i++)
			s->q[i].fresh = 1;	/* measure the rest again, minus the found */
		return 0;
	}
	s->phase = S_DONE;
	return 0;
}

/*
 * The share the queue does not explain (1 - the sum of its estimates, each
 * from its own interval) and the stalest region not measured for
 * STALE_INTERVALS (index + 1, or 0). A large deficit means some region's
 * estimate is out of date (measured in another phase, e.g. while the
 * program initialised other arrays): it is measured again before the
 * search goes on or ends.
 */
static uint32_t search_stale(const struct nway *st, const struct search *s)
{
	double sum = 0;
	uint32_t best = 0;

	for (uint32_t i = 0; i < s->nr_q; i++)
		sum += s->q[i].share;
	if (1 - sum <= st->unsearched)
		return 0;
	for (uint32_t i = 0; i < s->nr_q; i++) {
		const struct region *r = &s->q[i];

		if (region_single(r) || r->zero_streak || r->fresh ||
		    r->meas_at + STALE_INTERVALS > s->nr_intervals)
			continue;
		if (!best || r->meas_at < s->q[best - 1].meas_at)
			best = i + 1;
	}
	return best;
}

/* Checks the termination rules; 1 when the round ended. */
static int search_check_end(struct nway *st, struct search *s)
{
	uint32_t top = st->n - 1, k;
	double unsearched = 0;
	int any_single = 0, limbo = 0;

	if (s->nr_q == 0) {
		s->ended_by = END_EMPTY;
		s->phase = S_DONE;
		return 1;
	}
	/* a quiet region that may come back (a phase), or one measured long
	 * ago while the queue misses a good part of the total, holds it */
	for (uint32_t i = 0; i < s->nr_q; i++)
		limbo |= s->q[i].zero_streak > 0;
	limbo |= search_stale(st, s) > 0;
	for (k = 0; k < s->nr_q && k < top; k++)
		if (!region_single(&s->q[k]) || !s->q[k].nr_meas || s->q[k].zero_streak)
			break;
	if (!limbo && (k == top || k == s->nr_q))
		return search_terminate(st, s, END_SINGLES) ? -1 : 1;

	for (uint32_t i = 0; i < s->nr_q; i++) {
		if (region_single(&s->q[i]) && s->q[i].nr_meas)
			any_single = 1;
		else
			unsearched += s->q[i].share;
	}
	if (any_single && !limbo && s->nr_intervals > 1 && unsearched < st->unsearched)
		return search_terminate(st, s, END_UNSEARCHED) ? -1 : 1;
	if (s->nr_intervals >= st->max_intervals)
		return search_terminate(st, s, END_BUDGET) ? -1 : 1;
	return 0;
}

/* Chooses what search s measures this interval (its slots). */
static int search_select(struct nway *st, struct search *s)
{
	uint32_t left = st->n, limbo = st->n / 2 ? st->n / 2 : 1, stale = search_stale(st, s);

	slots_clear(s);
	/* with n < 4 a quiet or stale region's counter leaves too few to split
	 * the top region (2-way: none), and the search stood still while any
	 * region was quiet: they are measured every other interval only */
	if (st->n < 4 && (s->nr_intervals & 1)) {
		stale = 0;
		limbo = 0;
	}
	if (stale) {
		if (slot_add(s, SLOT_ASIS, stale - 1, NULL))
			return AMEBA_ENOMEM;
		left--;
		limbo -= limbo > 1;
	}
	/* quiet regions that may come back are measured first, on up to n/2
	 * counters: they must either come back or expire */
	for (uint32_t i = 0; i < s->nr_q && limbo; i++) {
		if (!s->q[i].zero_streak)
			continue;
		if (slot_add(s, SLOT_ASIS, i, NULL))
			return AMEBA_ENOMEM;
		limbo--;
		left--;
	}
	for (uint32_t i = 0; i < s->nr_q && left; i++) {
		struct region *r = &s->q[i];
		struct region a, b;
		int asis = region_single(r) || r->fresh;

		if (r->zero_streak || i + 1 == stale)
			continue;

		if (!asis) {
			if (left < 2)
				break;
			int rc = region_split(st, r, &a, &b);

			if (rc < 0)
				return rc;
			if (rc == 0) {
				if (slot_add(s, SLOT_CHILD, i, &a) || slot_add(s, SLOT_CHILD, i, &b)) {
					region_free(&a);
					region_free(&b);
					return AMEBA_ENOMEM;
				}
				left -= 2;
				r->protect = 1;
				continue;
			}
		}
		if (slot_add(s, SLOT_ASIS, i, NULL))
			return AMEBA_ENOMEM;
		if (!r->fresh || r->nr_meas)
			r->protect = 1;
		left--;
	}
	return 0;
}

int counter_add(struct nway *st, int metric, uint32_t off, uint32_t nr,
		const struct search *s, int per_thread, uint64_t tag)
{
	struct ameba_counter *c;

	if (grow_array((void **)&st->counters, &st->cap_counters, st->nr_counters + 1,
		       sizeof(*st->counters)) ||
	    grow_array((void **)&st->cbins, &st->cap_cbins, st->nr_counters + 1, sizeof(*st->cbins)))
		return AMEBA_ENOMEM;
	/* the bins emitted since the last counter are this counter's */
	st->cbins[st->nr_counters].nr = st->nr_bnames - st->bn_mark;
	st->cbins[st->nr_counters].names = (const char *const *)(uintptr_t)st->bn_mark;
	st->bn_mark = st->nr_bnames;
	c = &st->counters[st->nr_counters++];
	memset(c, 0, sizeof(*c));
	c->metric = metric;
	c->nr_ranges = nr;
	c->ranges = (const uintptr_t *)(uintptr_t)off;	/* fixed up at the end */
	if (s && s->thread >= 0) {
		c->nr_threads = 1;
		c->threads = &s->tid_storage;
	}
	c->per_thread = per_thread;
	c->tag = tag;
	return 0;
}

static uint64_t mktag(int kind, uint32_t a, uint32_t b)
{
	return ((uint64_t)kind << 56) | ((uint64_t)(a & 0xffffff) << 32) | b;
}

static int search_counters(struct nway *st, uint32_t si)
{
	struct search *s = &st->searches[si];

	if (counter_add(st, st->primary, 0, 0, s, 0, mktag(TAG_TOTAL, si, 0)))
		return AMEBA_ENOMEM;
	for (uint32_t k = 0; k < s->nr_slots; k++) {
		struct slot *sl = &s->slots[k];
		const struct region *r = sl->type == SLOT_CHILD ? &sl->child : &s->q[sl->qi];

		if (region_emit(st, r, &sl->range_off, &sl->nr_ranges))
			return AMEBA_ENOMEM;
		if (counter_add(st, st->primary, sl->range_off, sl->nr_ranges, s, 0,
				mktag(TAG_SLOT, si, k)))
			return AMEBA_ENOMEM;
	}
	return 0;
}

/*
 * Keeps an experiment within max_ranges address ranges: the counters with
 * the most ranges are measured on the hull of their ranges instead, until
 * the rest fits (a found unit measured so is marked: confidence halves).
 * Counter ranges are still offsets here.
 */
static void ranges_cap(struct nway *st)
{
	uint64_t total = 0;

	for (uint32_t i = 0; i < st->nr_counters; i++)
		total += st->counters[i].nr_ranges;
	while (total > st->max_ranges) {
		struct ameba_counter *c = NULL;
		uintptr_t lo = UINTPTR_MAX, hi = 0, *r;

		for (uint32_t i = 0; i < st->nr_counters; i++)
			if (st->counters[i].nr_ranges > 1 &&
			    (!c || st->counters[i].nr_ranges > c->nr_ranges))
				c = &st->counters[i];
		if (!c)
			break;
		r = st->ranges + 2 * (size_t)(uintptr_t)c->ranges;
		for (uint32_t k = 0; k < c->nr_ranges; k++) {
			lo = r[2 * k] < lo ? r[2 * k] : lo;
			hi = r[2 * k + 1] > hi ? r[2 * k + 1] : hi;
		}
		r[0] = lo;
		r[1] = hi;
		total -= c->nr_ranges - 1;
		c->nr_ranges = 1;
		if ((int)(c->tag >> 56) == TAG_FUNIT) {
			uint32_t f = (uint32_t)(c->tag >> 32) & 0xffffff;

			if (f < st->nr_found)
				st->found[f].hull = 1;
		}
	}
}

static int search_add(struct nway *st, int32_t thread)
{
	struct search *s;

	if (st->nr_searches == MAX_SEARCHES)
		return 0;
	s = &st->searches[st->nr_searches++];
	memset(s, 0, sizeof(*s));
	s->thread = thread;
	s->tid_storage = thread < 0 ? 0 : (uint32_t)thread;
	if (thread >= 0)
		snprintf(s->who, sizeof(s->who), " of thread %d", thread);
	s->interval_ms = st->interval_ms;
	return 0;
}

/*
 * Starts the final measurement's window (again): every found object, the
 * program's totals and the window's length from zero, one oracle mark for
 * all (Notes: final measurement). Rescans call it when a round found new
 * objects, so that every share is over one window and they add up.
 */
static void window_restart(struct nway *st)
{
	uint32_t nt = st->nr_threads_cap;

	st->nr_marks++;
	st->final_ns = 0;
	for (int m = 0; m < AMEBA_M_NR; m++) {
		st->prog[m] = 0;
		if (st->prog_pt[m] && nt)
			memset(st->prog_pt[m], 0, nt * sizeof(double));
	}
	for (uint32_t i = 0; i < st->nr_found; i++) {
		struct found *f = &st->found[i];

		f->mark = st->nr_marks;
		f->window_ns = 0;
		for (int m = 0; m < AMEBA_M_NR; m++) {
			f->values[m] = f->program[m] = 0;
			if (f->pt[m] && nt)
				memset(f->pt[m], 0, nt * sizeof(double));
			if (f->program_pt[m] && nt)
				memset(f->program_pt[m], 0, nt * sizeof(double));
		}
	}
}

/*
 * A found site whose name a later site deepened ("allocate@new_allocator.h:137"
 * became "... <- make_a@x.cpp:3" and "... <- make_b@x.cpp:9": two bins, as
 * the oracle names them at exit) is replaced by one found entry per bin it
 * became, each measured by its own bin and named by it. The figures under
 * the old name were the sum of the bins: each new entry starts its own
 * window (as the found objects of a rescan do).
 */
static int found_deepen(struct nway *st)
{
	const struct ameba_host *h = st->host;
	char key[4200];
	int changed = 0;

	if (!st->use_bins || !h->nr_bins)
		return 0;
	for (uint32_t f = 0; f < st->nr_found; f++) {
		struct unit *un = &st->units[st->found[f].unit];
		const char *name = un->key + 2;
		size_t len = strlen(name);
		uint32_t nr = 0, old = st->found[f].unit;

		if (un->key[0] != 's' || host_bin(h, name))
			continue;
		for (uint32_t b = 0; b < h->nr_bins; b++) {
			const char *bn = ameba_host_bin(h, b)->name;
			struct found *fd;
			int64_t u;

			if (!bn || strncmp(bn, name, len) || strncmp(bn + len, " <- ", 4))
				continue;
			snprintf(key, sizeof(key), "s:%s", bn);
			u = unit_get(st, key);
			if (u < 0)
				return AMEBA_ENOMEM;
			un = &st->units[old];	/* units may have moved */
			if (st->units[u].found)
				continue;
			if (nr++ == 0) {
				fd = &st->found[f];
			} else {
				struct found tmp = st->found[f];

				if (grow_array((void **)&st->found, &st->cap_found, st->nr_found + 1,
					       sizeof(*st->found)))
					return AMEBA_ENOMEM;
				fd = &st->found[st->nr_found++];
				*fd = tmp;
				for (uint32_t k = 0; k < st->nr_metrics; k++) {
					int m = st->metrics[k];

					fd->pt[m] = fd->program_pt[m] = NULL;
					if (st->nr_threads_cap &&
					    (strategy_grow_pt(&fd->pt[m], 0, st->nr_threads_cap) ||
					     strategy_grow_pt(&fd->program_pt[m], 0, st->nr_threads_cap)))
						return AMEBA_ENOMEM;
				}
			}
			fd->unit = (uint32_t)u;
			/* the old name's figures were the sum: not measuring
			 * makes the next plan restart the common window, which
			 * zeroes every found object's figures (window_restart) */
			fd->window_ns = 0;
			fd->measuring = 0;
			fd->search_v /= 2;	/* no better split known */
			fd->search_share /= 2;
			st->units[u].found = 1;
			st->units[old].found = 0;
			st->units[old].retired = 1;
			st->host->log(st->host, "found %s: the site is now the bin %s", name, bn);
			changed = 1;
		}
	}
	return changed;
}

/* Can a rescan still come (Notes: rescan)? */
int rescan_may(const struct nway *st)
{
	return st->rescan > 0 && !st->per_thread && st->nr_searches == 1 &&
	       st->nr_rescans < MAX_RESCANS &&
	       !(st->nr_rescans && st->nr_found == st->found_before_rescan);
}

/* Adds the counters of the newcomers watched this interval (Notes). */
static int watch_plan(struct nway *st)
{
	uint32_t spare = st->n > st->nr_found + 1 ? st->n - st->nr_found - 1 : 0;

	st->nr_watch = newcomers(st, st->watch, spare < MAX_WATCH ? spare : MAX_WATCH);
	for (uint32_t w = 0; w < st->nr_watch; w++) {
		uint32_t off = st->nr_ranges, nr = 0;

		st->watch_v[w] = 0;
		if (unit_emit(st, st->watch[w], &nr) ||
		    counter_add(st, st->primary, off, nr, NULL, 0, mktag(TAG_FWATCH, w, 0)) ||
		    unit_describe(st, st->watch[w]))
			return AMEBA_ENOMEM;
	}
	return 0;
}

int nway_plan(void *state, struct ameba_experiment *exp)
{
	struct nway *st = state;
	const struct ameba_host *h = st->host;
	uint32_t interval = 0;
	int rc, active = 0;

	rc = threads_grow(st, h->nr_threads);
	if (rc)
		return rc;
	rc = units_refresh(st);
	if (rc)
		return rc;
	rc = found_deepen(st);
	if (rc < 0)
		return rc;
	if (rc) {
		/* the deeper units' bins, ranges and names */
		rc = units_refresh(st);
		for (uint32_t f = 0; !rc && f < st->nr_found; f++)
			rc = unit_describe(st, st->found[f].unit);
		if (rc)
			return rc;
	}
	if (st->per_thread) {
		int all_done = st->nr_searches > 0;

		for (uint32_t i = 0; i < st->nr_searches; i++)
			all_done &= st->searches[i].phase == S_DONE;
		/* once every search ended, later threads are not searched */
		for (uint32_t t = 0; t < h->nr_threads && !all_done; t++) {
			int have = 0;

			for (uint32_t i = 0; i < st->nr_searches; i++)
				have |= st->searches[i].thread == (int32_t)ameba_host_thread(h, t)->id;
			if (!have && !ameba_host_thread(h, t)->exited)
				search_add(st, (int32_t)ameba_host_thread(h, t)->id);
		}
	} else if (!st->nr_searches) {
		search_add(st, -1);
	}
	st->nr_counters = 0;
	st->nr_bnames = 0;
	st->bn_mark = 0;
	for (uint32_t si = 0; si < st->nr_searches; si++) {
		struct search *s = &st->searches[si];

		s->planned = 0;
		slots_clear(s);
		if (s->phase == S_SEARCH && st->per_thread && s->thread >= 0) {
			for (uint32_t t = 0; t < h->nr_threads; t++)
				if (ameba_host_thread(h, t)->id == (uint32_t)s->thread && ameba_host_thread(h, t)->exited) {
					s->ended_by = END_IDLE;
					s->phase = S_DONE;
				}
		}
		if (s->phase == S_SEARCH) {
			rc = s->started ? search_resolve(st, s) : search_init(st, s);
			if (rc)
				return rc;
			rc = s->nr_intervals ? search_check_end(st, s) : 0;
			if (rc < 0)
				return AMEBA_ENOMEM;
		}
		if (s->phase == S_SEARCH) {
			rc = search_select(st, s);
			if (rc)
				return rc;
			rc = search_counters(st, si);
			if (rc)
				return rc;
			s->planned = 1;
			active = 1;
		}
		if (s->interval_ms > st->final_interval_ms)
			st->final_interval_ms = s->interval_ms;	/* grown: phases */
		if (s->planned && s->interval_ms > interval)
			interval = s->interval_ms;
	}
	if (!active && (st->final == F_DONE || !st->nr_found))
		return 1;
	if (!active || st->nr_rescans) {
		/*
		 * Every search ended: the final measurement of everything found,
		 * on the exact extents, all at once (one window for all):
		 * every metric, one total and one counter per found unit. It
		 * goes on while a rescan searches (Notes), so the windows of
		 * what was found stay whole.
		 */
		if (st->final == F_NONE && !active) {
			st->final = F_MEASURING;
			st->final_plan = st->nr_plans + 1;
			st->final_left = st->final_intervals;
			st->final_ext = 0;
			st->missed_min = -1;
		}
		if (!active)
			interval = st->final_interval_ms;
		/*
		 * Objects found since the last plan (the search's end, or a
		 * rescan's): the common window starts (again) now, with an
		 * oracle mark (Notes: final measurement).
		 */
		for (uint32_t f = 0; f < st->nr_found && !st->mark_now; f++)
			st->mark_now = !st->found[f].measuring;
		if (st->mark_now)
			window_restart(st);
		for (uint32_t f = 0; f < st->nr_found; f++) {
			st->found[f].measuring = 1;
			st->found[f].hull = st->units[st->found[f].unit].hull;
			st->found[f].iv = 0;
		}
		/*
		 * The monitor answers a read with a row per thread and counter
		 * in one message of at most ~1 MiB (about 21 bytes a value):
		 * with thousands of threads, only the ranking metric.
		 */
		uint64_t cost = (uint64_t)h->nr_threads *
				((uint64_t)st->nr_metrics * (st->nr_found + 1) * 21 + 24);

		for (uint32_t k = 0; k < st->nr_metrics; k++)
			st->final_has[st->metrics[k]] = cost <= READ_BUDGET(st) ||
							 st->metrics[k] == st->primary;
		for (uint32_t k = 0; k < st->nr_metrics; k++) {
			int m = st->metrics[k];

			if (!st->final_has[m])
				continue;
			if (counter_add(st, m, 0, 0, NULL, 1, mktag(TAG_FTOTAL, 0, k)))
				return AMEBA_ENOMEM;
			for (uint32_t f = 0; f < st->nr_found; f++) {
				uint32_t off = st->nr_ranges, nr = 0;

				if (unit_emit(st, st->found[f].unit, &nr) ||
				    counter_add(st, m, off, nr, NULL, 1, mktag(TAG_FUNIT, f, k)))
					return AMEBA_ENOMEM;
			}
		}
		st->nr_watch = 0;
		if (!active && rescan_may(st)) {
			rc = watch_plan(st);
			if (rc)
				return rc;
		}
	}
	ranges_cap(st);
	/* ranges are stable now: turn offsets into pointers */
	for (uint32_t i = 0; i < st->nr_counters; i++)
		st->counters[i].ranges = st->counters[i].nr_ranges ?
			st->ranges + 2 * (size_t)(uintptr_t)st->counters[i].ranges : NULL;
	ameba_experiment_reset(exp);
	exp->nr_counters = st->nr_counters;
	exp->counters = st->counters;
	if (st->nr_bnames) {
		for (uint32_t i = 0; i < st->nr_counters; i++)
			st->cbins[i].names = st->bnames + (uintptr_t)st->cbins[i].names;
		exp->counter_bins = st->cbins;
	}
	/* every ranged counter leaves out the blocks of the units apart, which
	 * their own bins count: so a freed block's address in a searched span
	 * (or reused by a listed object) does not count twice (Notes) */
	if (st->nr_xnames) {
		uint32_t nr_ranged = 0, keep = 0;
		uint64_t bytes = 0;

		if (grow_array((void **)&st->cexcept, &st->cap_cexcept, st->nr_counters + 1,
			       sizeof(*st->cexcept)))
			return AMEBA_ENOMEM;
		for (uint32_t i = 0; i < st->nr_counters; i++)
			nr_ranged += st->counters[i].nr_ranges > 0;
		/*
		 * The lists go with every ranged counter in one request under
		 * the host's message limit: at most an eighth of it in names.
		 * Beyond, the first units apart keep theirs (the kind bins and
		 * the sites found apart earliest); the rest, sites of freed
		 * blocks by the hundred, may count twice where a span holds
		 * their old addresses.
		 */
		while (keep < st->nr_xnames &&
		       (bytes + strlen(st->xnames[keep]) + 4) * nr_ranged <= EXCEPT_BYTES(st))
			bytes += strlen(st->xnames[keep++]) + 4;
		for (uint32_t i = 0; i < st->nr_counters; i++) {
			st->cexcept[i].nr = st->counters[i].nr_ranges ? keep : 0;
			st->cexcept[i].names = st->xnames;
		}
		exp->counter_except = keep ? st->cexcept : NULL;
	}
	exp->interval_ms = interval;
	if (st->mark_now) {
		snprintf(st->mark_label, sizeof(st->mark_label), "nway-%u", st->nr_marks);
		exp->mark = st->mark_label;
		st->mark_now = 0;
	}
	st->nr_plans++;
	return 0;
}
