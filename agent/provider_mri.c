/*
 * provider_mri.c - the ContextProvider over the Monitoring Request Interface
 * (mri/mri.h): the agent as a separate process talking to the target's
 * monitor through its socket.
 *
 * Notes:
 *  - Objects: the first refresh lists every live object; later refreshes
 *    list only the objects created since (the object table grows: a
 *    listing from the previous next_offset returns the new slots), for at
 *    most AGENT_MRI_LIST_NS, going on at the next refresh. Frees are learnt
 *    by a sweep started every AGENT_MRI_FULL_EVERY refreshes if the
 *    monitor's count of freed records (nr_freed) moved since the last
 *    sweep began: it lists the live ids below the end of the listing at
 *    its start, AGENT_MRI_LIST_NS per refresh, adds the blocks that took a
 *    freed block's id since (the monitor recycles them: monitor/fold.c),
 *    and then drops the known objects it did not see live at their start.
 *    Listing
 *    a million blocks takes the target's server thread ~1 s under the sim
 *    backend on 2 vCPUs: a whole relisting every ten intervals (the former
 *    design) measured little else, and one listing that chased a program
 *    allocating 200,000 blocks held the interval, with the experiment of
 *    before the listing armed, for seconds (wl_cxx's tally, allocated
 *    next, went unmeasured while its threads ran). A
 *    new object overlapping an older one replaces it (the older one was
 *    freed and its memory reused). This keeps the agent's cost per interval
 *    proportional to what changed, not to the size of the heap.
 *  - Names are interned: every object of one site shares one string
 *    (200,000 blocks of a site are one name, not 200,000 copies; a
 *    strategy that groups blocks by site compares pointers first). The
 *    set only grows -- a program has a bounded number of symbols, sites
 *    and mapped files -- and is freed with the provider.
 *  - Experiments: an experiment whose counters are identical to the running
 *    one (the common case: the same objects every interval) is not re-armed;
 *    its values are read and differenced against the previous reading,
 *    per thread too. Otherwise the running experiment is stopped and the
 *    new one started.
 *  - The interval is waited in slices of at most 50 ms on the session's
 *    event stream, so a target exit (the MRI exit event, which carries the
 *    final counts) or a stop request ends it early.
 *  - A reading whose per-thread rows do not fit in one reply is taken
 *    without them (read_experiment); the rows being cumulative, the next
 *    reading with rows carries the threads' share of the interval.
 *  - When the exit event's final reading has no per-thread rows, the last
 *    slice of the run counts in the totals but not in the per-thread values.
 *  - An experiment with a sample stream (sample_period) arms it once and
 *    keeps it while later experiments ask for the same stream; the samples
 *    of each interval are drained after its reading.
 */
#include "provider_mri_int.h"
void mp_set_err(struct mri_prov *p, const char *what, int rc)
{
	snprintf(p->err, sizeof(p->err), "%s: %s%s%s", what, ameba_strerror(rc),
		 p->s && *mri_errmsg(p->s) ? ": " : "", p->s ? mri_errmsg(p->s) : "");
}

/* ---- experiments ---- */

/*
 * Reads the running experiment with its per-thread rows; when they do not
 * fit in one reply (ERANGE: thousands of threads counted in the interval,
 * e.g. a program that starts threads by the thousand), the totals alone.
 * The rows' values are cumulative, so the threads' share of this interval
 * shows up in the next reading that has rows.
 */
static int read_experiment(struct mri_prov *p, struct mri_reading *r, int *rows)
{
	int rc = mri_experiment_read(p->s, p->exp_id, MRI_READ_THREADS, r);

	*rows = 1;
	if (rc == AMEBA_ERANGE) {
		p->nr_rows_dropped++;
		*rows = 0;
		rc = mri_experiment_read(p->s, p->exp_id, 0, r);
	}
	return rc;
}

/* FNV-1a over one counter: what it counts, where, for whom. */
static uint64_t counter_signature(const struct ameba_counter *c, const struct ameba_counter_bins *bins,
				  const struct ameba_counter_bins *except)
{
	uint64_t h = 1469598103934665603ull;

#define MIX(v) (h = (h ^ (uint64_t)(v)) * 1099511628211ull)
	MIX(c->metric);
	MIX(c->nr_ranges);
	for (uint32_t r = 0; r < 2 * c->nr_ranges; r++)
		MIX(c->ranges[r]);
	MIX(c->nr_threads);
	for (uint32_t t = 0; t < c->nr_threads; t++)
		MIX(c->threads[t]);
	for (uint32_t b = 0; bins && b < bins->nr; b++)
		for (const char *q = bins->names[b]; *q; q++)
			MIX((unsigned char)*q);
	MIX('!');
	for (uint32_t b = 0; except && b < except->nr; b++)
		for (const char *q = except->names[b]; *q; q++)
			MIX((unsigned char)*q);
#undef MIX
	return h;
}

/* FNV-1a over the request, to tell whether an experiment changed. */
static uint64_t exp_signature(const struct ameba_experiment *exp)
{
	uint64_t h = 1469598103934665603ull;

#define MIX(v) (h = (h ^ (uint64_t)(v)) * 1099511628211ull)
	MIX(exp->nr_counters);
	for (uint32_t i = 0; i < exp->nr_counters; i++) {
		const struct ameba_counter *c = &exp->counters[i];

		MIX(c->metric);
		MIX(c->nr_ranges);
		for (uint32_t r = 0; r < 2 * c->nr_ranges; r++)
			MIX(c->ranges[r]);
		MIX(c->nr_threads);
		for (uint32_t t = 0; t < c->nr_threads; t++)
			MIX(c->threads[t]);
		for (uint32_t b = 0; exp->counter_bins && b < exp->counter_bins[i].nr; b++)
			for (const char *q = exp->counter_bins[i].names[b]; *q; q++)
				MIX((unsigned char)*q);
		MIX('!');
		for (uint32_t b = 0; exp->counter_except && b < exp->counter_except[i].nr; b++)
			for (const char *q = exp->counter_except[i].names[b]; *q; q++)
				MIX((unsigned char)*q);
	}
#undef MIX
	return h;
}

static int exp_stop(struct mri_prov *p)
{
	int rc = 0;

	if (p->running)
		rc = mri_experiment_stop(p->s, p->exp_id, NULL);
	p->running = 0;
	return rc == AMEBA_EEXITED ? 0 : rc;
}

struct old_counts;
static int old_take(struct mri_prov *p, const struct mri_reading *r, struct old_counts *oc);
static void prev_reset(struct mri_prov *p);

/*
 * Starts exp. With oc, in place of the running experiment in one step
 * (mri_experiment_replace), its last reading taken into *oc (*have = 1);
 * a monitor that cannot replace: stopped first, *have = 0.
 */
static int exp_start(struct mri_prov *p, const struct ameba_experiment *exp,
		     struct agent_exp_result *res, struct old_counts *oc, int *have)
{
	uint32_t nr_ranges = 0, k = 0;
	int rc;

	for (uint32_t i = 0; i < exp->nr_counters; i++)
		nr_ranges += exp->counters[i].nr_ranges;
	if (exp->nr_counters > p->cap_mc) {
		struct mri_counter *mc = realloc(p->mc, exp->nr_counters * sizeof(*mc));

		if (!mc)
			return AMEBA_ENOMEM;
		p->mc = mc;
		p->cap_mc = exp->nr_counters;
	}
	if (nr_ranges > p->cap_mranges) {
		struct mri_range *r = realloc(p->mranges, nr_ranges * sizeof(*r));

		if (!r)
			return AMEBA_ENOMEM;
		p->mranges = r;
		p->cap_mranges = nr_ranges;
	}
	for (uint32_t i = 0; i < exp->nr_counters; i++) {
		const struct ameba_counter *c = &exp->counters[i];
		struct mri_counter *m = &p->mc[i];

		memset(m, 0, sizeof(*m));
		m->metric = c->metric;
		m->nr_ranges = c->nr_ranges;
		m->ranges = p->mranges + k;
		for (uint32_t r = 0; r < c->nr_ranges; r++, k++) {
			p->mranges[k].start = c->ranges[2 * r];
			p->mranges[k].end = c->ranges[2 * r + 1];
		}
		m->nr_threads = c->nr_threads;
		m->threads = c->threads;
		if (exp->counter_bins) {
			m->nr_bins = exp->counter_bins[i].nr;
			m->bins = exp->counter_bins[i].names;
		}
		if (exp->counter_except) {
			m->nr_except = exp->counter_except[i].nr;
			m->except = exp->counter_except[i].names;
		}
	}
	if (exp->mark) {
		/* the mark at the instant the counters start (docs/oracle.md) */
		rc = mri_experiment_start_marked(p->s, p->mc, exp->nr_counters, 0, exp->mark,
						 &p->exp_id, &res->mark_written, res->mark_note,
						 sizeof(res->mark_note));
		res->mark_taken = !rc;
	} else if (oc && p->running) {
		struct mri_reading fin;
		uint64_t id;

		rc = mri_experiment_replace(p->s, p->exp_id, p->mc, exp->nr_counters, 0, &id, &fin);
		if (rc == AMEBA_ENOTSUP) {
			rc = exp_stop(p);
			if (!rc)
				rc = mri_experiment_start(p->s, p->mc, exp->nr_counters, 0, &p->exp_id);
		} else if (!rc) {
			p->exp_id = id;
			if (fin.nr == p->exp_nr && !(rc = old_take(p, &fin, oc)))
				*have = 1;
		}
	} else {
		rc = mri_experiment_start(p->s, p->mc, exp->nr_counters, 0, &p->exp_id);
	}
	if (rc) {
		mp_set_err(p, "starting the experiment", rc);
		return rc;
	}
	p->running = 1;
	p->fresh = 1;
	if (p->base.armed) {
		p->base.armed(p->base.armed_arg);
		p->base.armed = NULL;
	}
	p->exp_nr = exp->nr_counters;
	p->exp_sig = exp_signature(exp);
	free(p->prev);
	free(p->prev_pt);
	free(p->ctr_sig);
	p->prev = calloc(exp->nr_counters + 1, sizeof(*p->prev));
	p->ctr_sig = malloc((exp->nr_counters + 1) * sizeof(*p->ctr_sig));
	p->prev_pt = NULL;
	prev_reset(p);
	p->prev_nt_cap = 0;
	if (!p->prev || !p->ctr_sig)
		return AMEBA_ENOMEM;
	for (uint32_t i = 0; i < exp->nr_counters; i++)
		p->ctr_sig[i] = counter_signature(&exp->counters[i],
						   exp->counter_bins ? &exp->counter_bins[i] : NULL,
						   exp->counter_except ? &exp->counter_except[i] : NULL);
	return 0;
}

struct sig_idx {
	uint64_t sig;
	uint32_t idx;
};

/* What the running experiment counted since its last reading, by counter
 * signature (old_take), to be given to the same counters of another one. */
struct old_counts {
	struct sig_idx *idx;		/* [nr], sorted by sig */
	uint64_t *d;			/* [nr] */
	uint64_t *d_pt;			/* [nt * nr], thread-major: thread ids[k]'s at k * nr */
	uint32_t *ids;			/* [nt] */
	uint32_t nr, nt;
};

static int cmp_sig(const void *a, const void *b)
{
	const struct sig_idx *x = a, *y = b;

	return (x->sig > y->sig) - (x->sig < y->sig);
}

static void old_free(struct old_counts *oc)
{
	free(oc->idx);
	free(oc->d);
	free(oc->d_pt);
	free(oc->ids);
	memset(oc, 0, sizeof(*oc));
}

/* The column of thread id in prev_pt, or UINT32_MAX. */
static uint32_t prev_col(const struct mri_prov *p, uint32_t id)
{
	return id < p->prev_col_cap && p->prev_col[id] ? p->prev_col[id] - 1 : UINT32_MAX;
}

/* The deltas of reading r (of the running experiment) since p's last one. */
static int old_take(struct mri_prov *p, const struct mri_reading *r, struct old_counts *oc)
{
	uint32_t nr = p->exp_nr, nt = r->nr_threads;

	memset(oc, 0, sizeof(*oc));
	oc->d = calloc(nr + 1, sizeof(*oc->d));
	oc->d_pt = calloc((size_t)nr * nt + 1, sizeof(*oc->d_pt));
	oc->ids = malloc((nt + 1) * sizeof(*oc->ids));
	oc->idx = malloc((nr + 1) * sizeof(*oc->idx));
	if (!oc->d || !oc->d_pt || !oc->ids || !oc->idx) {
		old_free(oc);
		return AMEBA_ENOMEM;
	}
	oc->nr = nr;
	oc->nt = nt;
	for (uint32_t i = 0; i < nr; i++) {
		oc->d[i] = r->values[i] >= p->prev[i] ? r->values[i] - p->prev[i] : 0;
		oc->idx[i].sig = p->ctr_sig[i];
		oc->idx[i].idx = i;
	}
	for (uint32_t k = 0; k < nt; k++) {
		uint32_t c = prev_col(p, r->thread_ids[k]);

		oc->ids[k] = r->thread_ids[k];
		for (uint32_t i = 0; i < nr; i++) {
			uint64_t cum = r->thread_values[(size_t)k * r->nr + i];
			uint64_t prev = c != UINT32_MAX ? p->prev_pt[(size_t)c * nr + i] : 0;

			oc->d_pt[(size_t)k * nr + i] = cum >= prev ? cum - prev : 0;
		}
	}
	qsort(oc->idx, nr, sizeof(*oc->idx), cmp_sig);
	return 0;
}

/* Gives counter j of nr_new, of signature sig, what the old one of that
 * signature counted: *v and, thread-major, v_pt[k * nr_new + j] for the
 * threads oc->ids[k]; nothing when there was none. Whether there was. */
static int old_give(const struct old_counts *oc, uint64_t sig, uint64_t *v, uint64_t *v_pt,
		    uint32_t j, uint32_t nr_new)
{
	struct sig_idx key = { sig, 0 }, *hit;

	hit = bsearch(&key, oc->idx, oc->nr, sizeof(*oc->idx), cmp_sig);
	if (!hit)
		return 0;
	*v = oc->d[hit->idx];
	for (uint32_t k = 0; k < oc->nt; k++)
		v_pt[(size_t)k * nr_new + j] = oc->d_pt[(size_t)k * oc->nr + hit->idx];
	return 1;
}

/*
 * Replaces the running experiment by exp without losing counts: the monitor
 * arms exp in place of the old one and reads the old one (per thread) in
 * the same instant, and what the old one counted since the interval's
 * reading is carried into the counters of exp that are identical (same
 * metric, ranges and threads: most of them, since the objects change
 * little between intervals). No access goes uncounted between the two (a
 * stop and a start left 40-90 ms uncounted on a busy 2-vCPU machine). The
 * others count from the switch only, and the next results say which
 * (ameba_results.carried): a share of a carried total in a counter that
 * was not carried would fall by the gap (nway's window on wl_true_sharing
 * under load: 0.8 points).
 */
static int exp_switch(struct mri_prov *p, const struct ameba_experiment *exp,
		      struct agent_exp_result *res)
{
	struct old_counts oc = { 0 };
	int rc = 0, have = 0;

	free(p->carry);
	free(p->carry_pt);
	free(p->carry_ids);
	p->carry = NULL;
	p->carry_pt = NULL;
	p->carry_ids = NULL;
	p->carry_nt = 0;
	/* with a mark the new counters start from zero at the mark: nothing of
	 * the old experiment is carried into them */
	if (p->running && !exp->mark) {
		rc = exp_start(p, exp, res, &oc, &have);
	} else {
		rc = exp_stop(p);
		if (!rc)
			rc = exp_start(p, exp, res, NULL, NULL);
	}
	if (rc || !have)
		goto out;
	p->carry = calloc(exp->nr_counters + 1, sizeof(*p->carry));
	p->carry_pt = calloc((size_t)exp->nr_counters * oc.nt + 1, sizeof(*p->carry_pt));
	if (!p->carry || !p->carry_pt) {
		rc = AMEBA_ENOMEM;
		goto out;
	}
	p->carry_ids = oc.ids;	/* the old reading's threads, thread-major rows */
	oc.ids = NULL;
	p->carry_nt = oc.nt;
	for (uint32_t j = 0; j < exp->nr_counters; j++)
		if (!old_give(&oc, p->ctr_sig[j], &p->carry[j], p->carry_pt, j, exp->nr_counters))
			p->carry[j] = AMEBA_NOT_CARRIED;
out:
	old_free(&oc);
	return rc;
}

/* Pages of samples one drain reads at most (see samples_drain). */
#define SAMPLE_PAGES_MAX 64

/* Starts, changes or stops the sample stream as exp asks. */
static int samples_arm(struct mri_prov *p, const struct ameba_experiment *exp)
{
	int rc = 0;

	if (exp->sample_period == p->smp_period && exp->sample_metric == p->smp_metric &&
	    exp->sample_random == p->smp_random)
		return 0;
	if (exp->sample_period) {
		rc = mri_samples_start(p->s, exp->sample_metric, exp->sample_period,
				       exp->sample_random, 0x616d656261ull);
		if (!rc && p->smp_page) {
			/* what an earlier stream took after its last drain would
			 * be read as this one's (a sample names no metric on the
			 * wire, and the monitor reads rings only while a stream
			 * is armed): drop what the rings hold now */
			uint64_t lost = 0;
			int n, pages = 0;

			do
				n = mri_samples_read(p->s, p->smp_page, AGENT_MRI_PAGE, &lost);
			while (n == AGENT_MRI_PAGE && ++pages < SAMPLE_PAGES_MAX);
		}
	} else {
		rc = mri_samples_stop(p->s);
	}
	if (rc) {
		mp_set_err(p, "arming the sample stream", rc);
		return rc;
	}
	p->smp_metric = exp->sample_metric;
	p->smp_period = exp->sample_period;
	p->smp_random = exp->sample_random;
	return 0;
}

/*
 * Moves the samples the monitor has into the interval's store (appending:
 * the wait for the interval drains too, so that a target that exits keeps
 * the samples taken until then; the exit event carries counters, not
 * samples) and points res at the store.
 */
static int samples_drain(struct mri_prov *p, struct agent_exp_result *res)
{
	uint64_t lost = 0;
	int n, pages = 0;

	if (!p->smp_period)
		return 0;
	if (!p->smp_page && !(p->smp_page = calloc(AGENT_MRI_PAGE, sizeof(*p->smp_page))))
		return AMEBA_ENOMEM;
	do {
		n = mri_samples_read(p->s, p->smp_page, AGENT_MRI_PAGE, &lost);
		if (n < 0) {
			mp_set_err(p, "reading samples", n);
			return n;
		}
		p->smp_lost += lost;
		lost = 0;
		if (p->nr_samples + (uint32_t)n > p->cap_samples) {
			uint32_t cap = (p->nr_samples + (uint32_t)n) * 2;
			struct ameba_sample *v = realloc(p->samples, cap * sizeof(*v));

			if (!v)
				return AMEBA_ENOMEM;
			p->samples = v;
			p->cap_samples = cap;
		}
		for (int i = 0; i < n; i++) {
			struct ameba_sample *a = &p->samples[p->nr_samples++];

			a->addr = (uintptr_t)p->smp_page[i].addr;
			a->pc = (uintptr_t)p->smp_page[i].pc;
			a->thread = p->smp_page[i].thread_id;
			a->metric = (uint16_t)p->smp_metric;
			a->weight = p->smp_page[i].weight > UINT16_MAX ? UINT16_MAX :
				    (uint16_t)p->smp_page[i].weight;
			a->site = p->smp_page[i].site;	/* the session's: lives as long */
		}
		/* threads that sample faster than one reader drains would keep
		 * the pages full for ever: the rest waits for the next drain
		 * (or is lost, counted, when the rings fill) */
	} while (n == AGENT_MRI_PAGE && ++pages < SAMPLE_PAGES_MAX);
	res->r.nr_samples = p->nr_samples;
	res->r.samples = p->samples;
	res->r.nr_samples_lost = p->smp_lost;
	return 0;
}

/*
 * Per-thread rows (ABI 3: ameba_results.thread_ids). The monitor sends a
 * row for each thread that counted anything, but an exited thread's only
 * once (docs/mri.md, read): the rows of a reading are the threads alive
 * since the last one, a few hundred for a program that starts threads by
 * the thousand. So everything here is sized by those: prev_pt keeps each
 * such thread's cumulative row (a column per thread, thread-major) and
 * drops the threads a reading with rows no longer lists; the results list
 * the reading's threads (and those carried over from the old experiment).
 */

/* Widens a map indexed by thread id (*map, *cap entries) to hold id, the
 * new entries 0. 0 or AMEBA_ENOMEM. */
static int id_map_grow(uint32_t **map, uint32_t *cap, uint32_t id)
{
	uint32_t n = id + 1 > 2 * *cap ? id + 1 : 2 * *cap;
	uint32_t *v;

	if (id < *cap)
		return 0;
	if (!(v = realloc(*map, n * sizeof(*v))))
		return AMEBA_ENOMEM;
	memset(v + *cap, 0, (n - *cap) * sizeof(*v));
	*map = v;
	*cap = n;
	return 0;
}

/* res_at[id]: the result entry of thread id + 1 (0: none), sized for id. */
static int res_at_grow(struct mri_prov *p, uint32_t id)
{
	return id_map_grow(&p->res_at, &p->res_at_cap, id);
}

/* prev_pt's column for thread id, made (zero) when it has none; UINT32_MAX
 * when out of memory. */
static uint32_t prev_col_get(struct mri_prov *p, uint32_t id)
{
	uint32_t c = prev_col(p, id), nr = p->exp_nr;

	if (c != UINT32_MAX)
		return c;
	if (id_map_grow(&p->prev_col, &p->prev_col_cap, id))
		return UINT32_MAX;
	if (p->prev_nt == p->prev_nt_cap) {
		uint32_t cap = p->prev_nt_cap ? 2 * p->prev_nt_cap : 64;
		uint64_t *v = realloc(p->prev_pt, ((size_t)cap * nr + 1) * sizeof(*v));
		uint32_t *ids = v ? realloc(p->prev_ids, cap * sizeof(*ids)) : NULL;

		if (v)
			p->prev_pt = v;
		if (!ids)
			return UINT32_MAX;
		p->prev_ids = ids;
		p->prev_nt_cap = cap;
	}
	c = p->prev_nt++;
	memset(p->prev_pt + (size_t)c * nr, 0, nr * sizeof(*p->prev_pt));
	p->prev_ids[c] = id;
	p->prev_col[id] = c + 1;
	return c;
}

/* Forgets every thread's cumulative row (new counters start at zero). */
static void prev_reset(struct mri_prov *p)
{
	for (uint32_t c = 0; c < p->prev_nt; c++)
		p->prev_col[p->prev_ids[c]] = 0;
	p->prev_nt = 0;
}

/* Drops the columns of the threads a reading with rows did not list (they
 * counted nothing, or exited and sent their last row before): res_at
 * marks the listed ones. */
static void prev_drop_unlisted(struct mri_prov *p)
{
	uint32_t nr = p->exp_nr;

	for (uint32_t c = 0; c < p->prev_nt;) {
		uint32_t id = p->prev_ids[c], last = p->prev_nt - 1;

		if (id < p->res_at_cap && p->res_at[id]) {
			c++;
			continue;
		}
		p->prev_col[id] = 0;
		if (c != last) {
			memcpy(p->prev_pt + (size_t)c * nr, p->prev_pt + (size_t)last * nr,
			       nr * sizeof(*p->prev_pt));
			p->prev_ids[c] = p->prev_ids[last];
			p->prev_col[p->prev_ids[c]] = c + 1;
		}
		p->prev_nt--;
	}
}

/* The first reading's "before" into res (rows over the result's threads). */
static int take_before(struct mri_prov *p, const struct ameba_experiment *exp,
		       const struct mri_reading *r, struct agent_exp_result *res)
{
	uint32_t nr = p->exp_nr, nt = p->rb.nt;

	p->fresh = 0;
	free(p->before);
	free(p->before_pt);
	free(p->before_rows);
	p->before = calloc(nr + 1, sizeof(*p->before));
	p->before_pt = calloc((size_t)nr * nt + 1, sizeof(*p->before_pt));
	p->before_rows = calloc(nr + 1, sizeof(*p->before_rows));
	if (!p->before || !p->before_pt || !p->before_rows)
		return AMEBA_ENOMEM;
	for (uint32_t i = 0; i < nr && i < r->nr; i++)
		p->before[i] = r->before[i];
	for (uint32_t k = 0; r->thread_before && k < r->nr_threads; k++) {
		uint32_t e = r->thread_ids[k] < p->res_at_cap ? p->res_at[r->thread_ids[k]] : 0;

		for (uint32_t i = 0; e && i < nr && i < r->nr; i++)
			p->before_pt[(size_t)i * nt + e - 1] = r->thread_before[(size_t)k * r->nr + i];
	}
	for (uint32_t i = 0; i < nr; i++)
		p->before_rows[i] = exp->counters[i].per_thread ? p->before_pt + (size_t)i * nt : NULL;
	res->r.before = p->before;
	res->r.per_thread_before = p->before_rows;
	return 0;
}

/* Turns a cumulative reading into the interval's values (deltas); rows:
 * the reading was asked for per-thread rows and has them all. */
/* What a sampled reading says about itself, for the report. */
static void note_sampled(struct mri_prov *p, const struct mri_reading *r)
{
	uint32_t best = UINT32_MAX;

	if (!r->sampled)
		return;
	if (r->bursts > p->bursts)
		p->bursts = r->bursts;	/* since sampled mode began */
	p->fraction = r->fraction;
	for (uint32_t i = 0; i < r->nr; i++)
		if (best == UINT32_MAX || r->deltas[i] > r->deltas[best])
			best = i;
	if (best != UINT32_MAX && r->deltas[best] > 0 && r->ci_deltas[best] >= 0) {
		p->rel_ci_sum += r->ci_deltas[best] / (double)r->deltas[best];
		p->nr_rel_ci++;
	}
	mp_world_sampling(p);
}

static int take_reading(struct mri_prov *p, const struct ameba_experiment *exp,
			const struct mri_reading *r, int rows, struct agent_exp_result *res)
{
	uint32_t nr = p->exp_nr, nt = 0, *ids;
	int rc = 0;

	note_sampled(p, r);
	res->ci = NULL;
	if (r->sampled && r->ci_deltas) {
		if (p->ci_cap < nr + 1) {
			double *c = realloc(p->ci, (nr + 1) * sizeof(*c));

			if (c) {
				p->ci = c;
				p->ci_cap = nr + 1;
			}
		}
		if (p->ci_cap >= nr + 1) {
			for (uint32_t i = 0; i < nr; i++)
				p->ci[i] = i < r->nr ? r->ci_deltas[i] : -1;
			res->ci = p->ci;
		}
	}
	/* the result's threads: the reading's, then the carried ones */
	ids = malloc((r->nr_threads + p->carry_nt + 1) * sizeof(*ids));
	if (!ids)
		return AMEBA_ENOMEM;
	for (uint32_t k = 0; k < r->nr_threads + p->carry_nt && !rc; k++) {
		uint32_t id = k < r->nr_threads ? r->thread_ids[k] : p->carry_ids[k - r->nr_threads];

		if ((rc = res_at_grow(p, id)) || p->res_at[id])
			continue;
		ids[nt++] = id;
		p->res_at[id] = nt;
	}
	if (!rc)
		rc = agent_resbuf_reset(&p->rb, nr, nt, ids);
	free(ids);
	if (rc) {
		/* the marks made so far (res_ids may lack them) */
		for (uint32_t k = 0; k < r->nr_threads + p->carry_nt; k++) {
			uint32_t id = k < r->nr_threads ? r->thread_ids[k] : p->carry_ids[k - r->nr_threads];

			if (id < p->res_at_cap)
				p->res_at[id] = 0;
		}
		p->rb.nt = 0;
	}
	if (rc)
		return rc;
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t cum = i < r->nr ? r->values[i] : p->prev[i];

		p->rb.values[i] = cum >= p->prev[i] ? cum - p->prev[i] : 0;
		p->prev[i] = cum;
	}
	for (uint32_t k = 0; k < r->nr_threads; k++) {
		uint32_t e = p->res_at[r->thread_ids[k]] - 1, c = prev_col_get(p, r->thread_ids[k]);

		if (c == UINT32_MAX) {
			rc = AMEBA_ENOMEM;
			goto out;
		}
		for (uint32_t i = 0; i < nr && i < r->nr; i++) {
			uint64_t cum = r->thread_values[(size_t)k * r->nr + i];
			uint64_t *prev = &p->prev_pt[(size_t)c * nr + i];

			p->rb.pt[(size_t)i * nt + e] = cum >= *prev ? cum - *prev : 0;
			*prev = cum;
		}
	}
	if (rows)
		prev_drop_unlisted(p);
	if (p->carry) {
		/* handed out too (ameba_results.carried): the counters not
		 * carried count a shorter span than the others */
		rc = agent_resbuf_carry(&p->rb);
		if (rc)
			goto out;
		for (uint32_t i = 0; i < nr; i++) {
			p->rb.carried[i] = p->carry[i];
			if (p->carry[i] != AMEBA_NOT_CARRIED)
				p->rb.values[i] += p->carry[i];
		}
		for (uint32_t k = 0; k < p->carry_nt; k++) {
			uint32_t e = p->res_at[p->carry_ids[k]] - 1;

			for (uint32_t i = 0; i < nr; i++) {
				p->rb.pt[(size_t)i * nt + e] += p->carry_pt[(size_t)k * nr + i];
				p->rb.carried_pt[(size_t)i * nt + e] += p->carry_pt[(size_t)k * nr + i];
			}
		}
		free(p->carry);
		free(p->carry_pt);
		free(p->carry_ids);
		p->carry = p->carry_pt = NULL;
		p->carry_ids = NULL;
		p->carry_nt = 0;
	}
	agent_resbuf_publish(&p->rb, exp, res);
	if (p->fresh && r->before)
		rc = take_before(p, exp, r, res);
	else
		p->fresh = 0;
out:
	for (uint32_t k = 0; k < p->rb.nt; k++)
		p->res_at[p->rb.ids[k]] = 0;
	if (rc)
		p->rb.nt = 0;
	return rc;
}

/*
 * The target exited before exp replaced the running experiment (the switch
 * found it gone): the old counters counted until the exit. (A final reading
 * is used only when it is of the experiment the agent knows is running, by
 * its id: one whose replace the monitor made but could not reply to would
 * be the new experiment's, read as the old one's; the monitor sends every
 * reply before its exit event, mri_server.c.) Each counter of
 * exp identical to an old one gets what that one counted since its last
 * reading (the final reading's deltas; what the program did last: in a
 * rescan's first interval, million_live's last loop over its table); the
 * others, which never ran, count nothing. Without a final reading, nothing
 * at all.
 */
static int exit_unswitched(struct mri_prov *p, const struct ameba_experiment *exp,
			   struct agent_exp_result *res)
{
	struct old_counts oc = { 0 };
	struct mri_reading r;
	uint32_t nr = exp->nr_counters, nt;
	uint64_t *v_pt = NULL;
	int rc;

	if (p->ctr_sig && p->exp_nr && mri_final_reading(p->s, &r) == 0 && r.nr == p->exp_nr &&
	    r.experiment == p->exp_id) {
		rc = old_take(p, &r, &oc);
		if (rc)
			return rc;
	}
	nt = oc.nt;
	if (agent_resbuf_reset(&p->rb, nr, nt, oc.ids) ||
	    !(v_pt = calloc((size_t)nr * nt + 1, sizeof(*v_pt)))) {
		old_free(&oc);
		return AMEBA_ENOMEM;
	}
	/* all of it carried: the counters of exp never ran */
	if (oc.nr && agent_resbuf_carry(&p->rb)) {
		free(v_pt);
		old_free(&oc);
		return AMEBA_ENOMEM;
	}
	for (uint32_t j = 0; j < nr && oc.nr; j++) {
		uint64_t sig = counter_signature(&exp->counters[j],
						 exp->counter_bins ? &exp->counter_bins[j] : NULL,
						 exp->counter_except ? &exp->counter_except[j] : NULL);

		p->rb.carried[j] = old_give(&oc, sig, &p->rb.values[j], v_pt, j, nr) ?
				   p->rb.values[j] : AMEBA_NOT_CARRIED;
	}
	/* thread-major to the result's rows */
	for (uint32_t k = 0; k < nt; k++)
		for (uint32_t j = 0; j < nr; j++) {
			p->rb.pt[(size_t)j * nt + k] = v_pt[(size_t)k * nr + j];
			if (oc.nr)
				p->rb.carried_pt[(size_t)j * nt + k] = v_pt[(size_t)k * nr + j];
		}
	free(v_pt);
	old_free(&oc);
	agent_resbuf_publish(&p->rb, exp, res);
	return 0;
}

/* AGENT_AUTO: the run has been exact for after_ms; from now on it is
 * sampled (the running experiment goes on: its estimates add to its exact
 * counts). A monitor that cannot stays exact, and says so once. */
static void maybe_sample(struct mri_prov *p)
{
	struct mri_sampling c = { p->smp.period_us, p->smp.warm_us, p->smp.burst_us, 0 };
	uint64_t now = mp_now_ns();
	char note[512];
	int rc;

	if (p->smp.mode != AGENT_AUTO || p->sampled || strcmp(p->backend, "sim") ||
	    now - p->t_attach_ns < p->smp.after_ms * 1000000ull)
		return;
	p->smp.mode = AGENT_EXACT;	/* one try */
	rc = mri_sampled(p->s, &c);
	if (rc) {
		snprintf(note, sizeof(note), "the run stays exact: the monitor cannot go sampled "
			 "(%s: %s)", ameba_strerror(rc), mri_errmsg(p->s));
	} else {
		p->sampled = 1;
		p->sampled_since_s = (double)(now - p->t_attach_ns) / 1e9;
		mp_world_sampling(p);
		snprintf(note, sizeof(note), "sampled simulation from %.0f s on (the run is long; "
			 "--exact keeps it exact): a %.1f ms burst every %.0f ms, counts are "
			 "estimates", p->sampled_since_s, c.burst_us / 1e3, c.period_us / 1e3);
	}
	if (p->base.warn)
		p->base.warn(p->base.warn_arg, note);
}

static int mri_experiment(struct agent_provider *base, const struct ameba_experiment *exp,
			  uint32_t interval_ms, const volatile sig_atomic_t *stop,
			  struct agent_exp_result *res)
{
	struct mri_prov *p = (struct mri_prov *)base;
	struct mri_reading reading;
	struct mri_event ev;
	uint64_t t0, deadline;
	int rc, have = 0, rows = 0;

	memset(res, 0, sizeof(*res));
	p->nr_samples = 0;
	p->smp_lost = 0;
	if (!p->exited)
		maybe_sample(p);
	if (p->exited) {
		t0 = mp_now_ns();
		if (!p->final_pending || p->exp_sig != exp_signature(exp) ||
		    p->exp_nr != exp->nr_counters)
			return AMEBA_EEXITED;
		p->final_pending = 0;
		goto exited;
	}
	if (exp->nr_counters == 0) {
		snprintf(p->err, sizeof(p->err), "the strategy planned an experiment without counters");
		return AMEBA_EINVAL;
	}
	t0 = mp_now_ns();
	rc = samples_arm(p, exp);
	if (rc == AMEBA_EEXITED)
		goto exited;
	if (rc)
		return rc;
	if (!p->running || p->exp_sig != exp_signature(exp) || p->exp_nr != exp->nr_counters) {
		rc = exp_switch(p, exp, res);
		if (rc == AMEBA_EEXITED && exp->mark) {
			res->mark_written = 0;
			snprintf(res->mark_note, sizeof(res->mark_note),
				 "the target exited before it replied (the snapshot took the "
				 "rest of the run)");
		}
		if (rc == AMEBA_EEXITED)
			goto exited;
		if (rc)
			return rc;
	}
	if (exp->mark && !res->mark_taken) {
		/* right after arming: the mark and the new counters start together */
		rc = mri_mark(p->s, exp->mark, &res->mark_written, res->mark_note,
			      sizeof(res->mark_note));
		if (rc == AMEBA_EEXITED) {
			/* the snapshot took the rest of the run (a million-object
			 * program's ~1 GB): the file may be whole, but no window
			 * followed it */
			res->mark_written = 0;
			snprintf(res->mark_note, sizeof(res->mark_note),
				 "the target exited before it replied (the snapshot took the "
				 "rest of the run)");
			goto exited;
		}
		if (rc) {
			/* a mark is evidence for benches, never a reason to stop */
			res->mark_written = 0;
			snprintf(res->mark_note, sizeof(res->mark_note), "%s", mri_errmsg(p->s));
		}
	}
	deadline = t0 + (uint64_t)(interval_ms ? interval_ms : 100) * 1000000ull;
	for (;;) {
		uint64_t now = mp_now_ns();
		int slice;

		if (stop && *stop) {
			res->interrupted = 1;
			break;
		}
		if (now >= deadline)
			break;
		slice = (int)((deadline - now + 999999) / 1000000);
		if (slice > AGENT_MRI_SLICE_MS)
			slice = AGENT_MRI_SLICE_MS;
		rc = mri_next_event(p->s, &ev, slice);
		if (rc == AMEBA_ETIMEDOUT) {
			/* samples as they come: a target exiting takes its
			 * undrained samples with it */
			rc = samples_drain(p, res);
			if (rc == AMEBA_EEXITED)
				goto exited;
			if (rc)
				return rc;
			continue;
		}
		if (rc == AMEBA_EEXITED)
			goto exited;
		if (rc) {
			mp_set_err(p, "waiting for the interval", rc);
			return rc;
		}
		if (ev.kind == MRI_EV_EXIT) {
			p->exited = 1;
			if (ev.reading.nr && ev.reading.experiment == p->exp_id) {
				rc = take_reading(p, exp, &ev.reading, 0, res);
				if (rc)
					return rc;
				have = 1;
			}
			goto exited;
		}
	}
	rc = read_experiment(p, &reading, &rows);
	if (rc == AMEBA_EEXITED)
		goto exited;
	if (rc) {
		mp_set_err(p, "reading the experiment", rc);
		return rc;
	}
	rc = take_reading(p, exp, &reading, rows, res);
	if (rc)
		return rc;
	rc = samples_drain(p, res);
	if (rc == AMEBA_EEXITED)
		goto exited;
	if (rc)
		return rc;
	res->r.elapsed_ns = mp_now_ns() - t0;
	return 0;
exited:
	p->exited = 1;
	p->running = 0;
	p->final_pending = 0;
	/* the final reading belongs to the experiment that ran: use it only
	 * for the same counters */
	if (!have && p->exp_sig == exp_signature(exp) && p->exp_nr == exp->nr_counters &&
	    mri_final_reading(p->s, &reading) == 0 && reading.nr == exp->nr_counters &&
	    reading.experiment == p->exp_id) {
		rc = take_reading(p, exp, &reading, 0, res);
		if (rc)
			return rc;
		have = 1;
	}
	if (!have) {
		rc = exit_unswitched(p, exp, res);
		if (rc)
			return rc;
	}
	/* what was drained before the exit (the rest went with the target) */
	res->r.nr_samples = p->nr_samples;
	res->r.samples = p->samples;
	res->r.nr_samples_lost = p->smp_lost;
	res->r.elapsed_ns = mp_now_ns() - t0;
	res->r.target_exited = 1;
	return 0;
}

static const char *mri_prov_error(struct agent_provider *base)
{
	return ((struct mri_prov *)base)->err;
}

static void mri_prov_close(struct agent_provider *base)
{
	struct mri_prov *p = (struct mri_prov *)base;

	if (p->s && !p->exited) {
		exp_stop(p);
		if (p->smp_period)
			mri_samples_stop(p->s);
		mri_detach(p->s);
	}
	mri_close(p->s);
	mp_objs_clear(p);
	for (uint32_t i = 0; i < p->cap_names; i++)
		free(p->names[i]);
	free(p->names);
	mp_bins_free(p->bins, p->nr_bins);
	free(p->objs);
	free(p->page);
	free(p->seen);
	free(p->known);
	free(p->bin_page);
	free(p->threads);
	free(p->thread_page);
	free(p->prev);
	free(p->prev_pt);
	free(p->prev_ids);
	free(p->prev_col);
	free(p->ci);
	free(p->carry_ids);
	free(p->res_at);
	free(p->mc);
	free(p->mranges);
	free(p->smp_page);
	free(p->samples);
	free(p->ctr_sig);
	free(p->carry);
	free(p->carry_pt);
	agent_resbuf_free(&p->rb);
	free(p->before);
	free(p->before_pt);
	free(p->before_rows);
	free(p->program);
	free(p->backend);
	free(p);
}

static const struct agent_provider_ops mri_prov_ops = {
	.name = "mri",
	.refresh = mp_refresh,
	.experiment = mri_experiment,
	.error = mri_prov_error,
	.close = mri_prov_close,
};

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Where the runtime puts its socket, for messages. */
static void socket_hint(int32_t pid, char *buf, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (xdg && *xdg)
		snprintf(buf, len, "%s/ameba/%d.sock (or /tmp/ameba-%u/%d.sock)", xdg, (int)pid,
			 (unsigned)getuid(), (int)pid);
	else
		snprintf(buf, len, "/tmp/ameba-%u/%d.sock", (unsigned)getuid(), (int)pid);
}

struct agent_provider *agent_provider_mri_open(int32_t pid, const char *backend, uint32_t wait_ms,
					       int32_t child_pid, int *child_status,
					       const struct agent_sampling *sampling,
					       const volatile sig_atomic_t *stop, int *err,
					       char *msg, size_t len)
{
	struct mri_prov *p = calloc(1, sizeof(*p));
	struct mri_process_info pi;
	struct mri_backend_info bi;
	uint64_t deadline = mp_now_ns() + (uint64_t)wait_ms * 1000000ull;
	char where[512];
	int rc;

	*err = AMEBA_ENOMEM;
	if (!p)
		return NULL;
	p->base.ops = &mri_prov_ops;
	p->pid = pid;
	p->sweep_offset = MRI_END;
	p->sweep_freed = UINT64_MAX;
	socket_hint(pid, where, sizeof(where));
	for (;;) {
		rc = mri_open_pid(&p->s, pid, AGENT_MRI_TIMEOUT_MS);
		if (rc == 0)
			break;
		if (rc != AMEBA_ENOENT || mp_now_ns() >= deadline || (stop && *stop)) {
			if (rc == AMEBA_ENOENT && kill(pid, 0) && errno == ESRCH)
				snprintf(msg, len, "no process %d", (int)pid);
			else if (rc == AMEBA_ENOENT)
				snprintf(msg, len, "process %d has no MRI socket at %s after %u ms: "
					 "build it with `ameba cc`, and run it without AMEBA_MRI=0",
					 (int)pid, where, wait_ms);
			else if (stop && *stop)
				snprintf(msg, len, "interrupted while connecting to process %d", (int)pid);
			else
				snprintf(msg, len, "cannot connect to the monitor of process %d: %s%s%s",
					 (int)pid, ameba_strerror(rc), p->s && *mri_errmsg(p->s) ? ": " : "",
					 p->s ? mri_errmsg(p->s) : "");
			*err = (stop && *stop) ? AMEBA_EEXITED : rc;
			goto fail;
		}
		mri_close(p->s);
		p->s = NULL;
		if (child_pid > 0) {
			int status;

			if (waitpid(child_pid, &status, WNOHANG) == child_pid) {
				if (child_status)
					*child_status = status;
				snprintf(msg, len, "process %d exited (status %d) before its monitor "
					 "opened %s: was it built with `ameba cc`?", (int)child_pid,
					 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
					 where);
				*err = AMEBA_EEXITED;
				free(p);
				return NULL;
			}
		}
		sleep_ms(5);
	}
	if (sampling)
		p->smp = *sampling;
	/* sampled mode is the simulator's: the count backend is cheap anyway */
	if (p->smp.mode == AGENT_SAMPLED && (!backend || !*backend || !strcmp(backend, "sim"))) {
		struct mri_sampling c = { p->smp.period_us, p->smp.warm_us, p->smp.burst_us, 0 };

		rc = mri_attach_sampled(p->s, backend && *backend ? backend : NULL, &c);
		p->sampled = !rc;
		if (rc == AMEBA_ENOTSUP)	/* an oracle run stays exact */
			rc = mri_attach(p->s, backend && *backend ? backend : NULL);
	} else {
		rc = mri_attach(p->s, backend && *backend ? backend : NULL);
	}
	p->t_attach_ns = mp_now_ns();
	if (rc) {
		snprintf(msg, len, "cannot attach to process %d: %s: %s", (int)pid, ameba_strerror(rc),
			 mri_errmsg(p->s));
		*err = rc;
		goto fail;
	}
	rc = mri_process(p->s, &pi);
	if (!rc)
		rc = mri_backend(p->s, &bi);
	if (rc) {
		snprintf(msg, len, "process %d: cannot read its monitor's description: %s: %s",
			 (int)pid, ameba_strerror(rc), mri_errmsg(p->s));
		*err = rc;
		goto fail;
	}
	p->program = strdup(pi.program ? pi.program : "?");
	p->backend = strdup(bi.name ? bi.name : "?");
	for (uint32_t i = 0; i < bi.nr_metrics && i < AMEBA_M_NR; i++)
		p->metrics[p->nr_metrics++] = bi.metrics[i];
	p->page = calloc(AGENT_MRI_PAGE, sizeof(*p->page));
	p->bin_page = calloc(AGENT_MRI_PAGE, sizeof(*p->bin_page));
	p->thread_page = calloc(AGENT_MRI_PAGE, sizeof(*p->thread_page));
	if (!p->program || !p->backend || !p->page || !p->bin_page || !p->thread_page) {
		snprintf(msg, len, "out of memory");
		*err = AMEBA_ENOMEM;
		goto fail;
	}
	*err = 0;
	return &p->base;
fail:
	mri_prov_close(&p->base);
	return NULL;
}
