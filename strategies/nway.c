/*
 * nway.c - the `nway` strategy: Buck & Hollingsworth's n-way priority-queue
 * search over the address space (seed 002, section 2.2), with the extensions
 * the paper suggests (continue into the remaining space, search per thread).
 *
 * Notes:
 *  - A *unit* is what the search can end at: a global, stack or TLS object
 *    (or all stacks / all TLS blocks: [stack], [tls], below), an allocation
 *    site (all live heap/mmap blocks of the site: its bin; a site with one
 *    live block is that block), or a single cache line of memory that
 *    belongs to no object. Units keep their identity across the
 *    agent's table refreshes (site label or object id, as in objects.c).
 *  - A *region* is a queue entry: an address span [start, end), a set of
 *    units, or one unit. Each interval measures n regions with n
 *    conditional counters plus one total counter (no ranges); a region's
 *    share is its count over the total of the same interval.
 *  - The priority queue holds every region measured so far, ranked by share
 *    (it is a sorted array: a few dozen entries, re-sorted per interval).
 *    Planning walks it from the top: a single unit (or a region kept after a
 *    zero count) is measured again as is, one counter; any other region is
 *    split in two halves, two counters; the walk stops when the n counters
 *    are used. With no singles this is "the top n/2 regions are split in
 *    halves"; a split parent leaves the queue and its halves enter it, so a
 *    region the search passed over stays ranked and the search backs up to
 *    it when its share beats everything found under the region it refined
 *    (seed 002, Fig. 2).
 *  - Halves: the split point is the middle of the part of the span that
 *    objects occupy (empty address space at either end is ignored, so the
 *    search does not spend intervals halving gaps), moved to the nearer end
 *    of the object it falls in, so no object spans two regions. The first n
 *    regions divide the hull of all objects into n equal parts, moved the
 *    same way; the first and last extend to the ends of the address space.
 *    Objects allocated after a boundary was drawn may straddle it: a span
 *    that holds parts of one unit only becomes that unit and is measured on
 *    its exact, whole extent from then on.
 *  - Bins: a span holding at most `group` units of which one is a site with
 *    several blocks (blocks of sites interleaved in the heap, which address
 *    halves cannot separate) becomes the set of those units and is split by
 *    unit from then on (each half a set of allocation sites, measured on
 *    all their blocks).
 *  - Units apart: what the address space cannot hold for long. A site
 *    whose blocks all were freed by a listing, or that allocated
 *    CHURN_FACTOR times more blocks than are alive (wl_thread_churn's
 *    scratch buffers: 10,000 of them, at most 4 alive, gone by the next
 *    listing) and, when the host lists them, the kind bins [stack] and [tls] (every
 *    thread's stack or TLS block: 10,000 TLS blocks of no common site) are
 *    units *apart*: their blocks map to no span, they are measured by their
 *    bins only (costing no ranges; the monitor counts every block of the
 *    bin, freed or not yet listed ones too), and they enter the queue as
 *    one set (fresh: measured as is next; first share 1/n) split by unit as
 *    any set, ranked with the rest. An apart site stays apart (its later
 *    blocks too). A set of them that counts nothing is dropped, and its
 *    units are not queued again by that search (until a new round of
 *    search_init): a site freed at start-up would be measured for ever.
 *    A queued unit that becomes apart is measured again first (its
 *    estimate came from its few live blocks' ranges).
 *  - Shares stay consistent: the units apart are counted by bin, and every
 *    counter with ranges (spans, units by range, the final measurement)
 *    leaves their blocks out (the experiment's counter_except: the
 *    monitor skips a range's access whose object is of an excepted site or
 *    kind). A freed block's address in a span still searched, or reused by
 *    a listed object, therefore counts once, for the unit apart, and the
 *    queue's shares still add up to at most the total (the unsearched
 *    share and the stale-estimate rule rely on that).
 *  - Names: a unit is named by its bin as the host names it now. A site
 *    that a later site with the same first frame deepened ("allocate@
 *    new_allocator.h:137" became "... <- main@cxx.cpp:140" and "... <-
 *    main@cxx.cpp:141", the oracle's names at exit) retires: blocks listed
 *    under the old label map to no unit, and the bins it became are units
 *    apart (which of them a stale-labelled block is cannot be told; their
 *    bins count them all). A found unit so deepened is replaced by one found
 *    entry per bin (each with a window of its own from then on).
 *  - Zero counts: a region that counts nothing in an interval is dropped,
 *    unless it holds an object and it or its parent was ranked in the top
 *    (selected for refinement): then it stays in the queue with half its
 *    parent's share (or its own past share) as its estimate, halved at each
 *    further zero count, and is measured again as is when its rank earns a
 *    counter; it is dropped once it counted nothing for `keep` intervals
 *    and `quiet_ms` in a row. When a region that had counted goes quiet,
 *    the interval grows by `grow` (once per interval, up to
 *    max_interval_ms): phases, seed 002 section 3.5. The n initial regions
 *    count as ranked (they are the whole search). Quiet regions are
 *    measured first, on up to n/2 counters (with n < 4, every other
 *    interval only: else no counters are left to split the top region,
 *    and a 2-way search stood still while a region was quiet), and while
 *    one may still come back the search does not end (a program's
 *    start-up is a sequence of phases too: arrays initialised one after
 *    the other).
 *  - A single unit measured again accumulates: its share is the sum of its
 *    counts over the sum of the totals of the intervals it was measured in
 *    (an average weighted by events, so longer intervals weigh more).
 *  - Termination (checked before each plan): the top n-1 regions are single
 *    units, each measured at least once as such; or the share of the
 *    regions still unsearched (not single) is under `unsearched` while at
 *    least one single was found; or `max_intervals` intervals were spent.
 *    The results are the singles among the top n regions (n-1, or n when
 *    the n-th is single too).
 *  - Stale estimates: when the queue's estimates add up to less than
 *    1 - `unsearched`, the region measured longest ago (at least
 *    STALE_INTERVALS) is measured again first, and the search does not end
 *    meanwhile (it was measured while the program worked elsewhere).
 *  - Final measurement: once every search ended, everything found is
 *    measured at once, on its exact extents, for `final_intervals`
 *    intervals (0: until the program exits or --duration is spent) at the
 *    longest interval a search grew to, extended by up
 *    to `keep` intervals, each longer by `grow`, while a found object counts
 *    nothing in an interval (a phase); every metric of `metrics`, per
 *    thread (only the ranking metric when the per-thread rows of all of
 *    them would not fit in one reply of the monitor: thousands of
 *    threads). The contexts carry these values and the program totals of the
 *    same window (confidence 1 on exact backends, halved when a site had to
 *    be measured on its hull). The window starts with an oracle mark
 *    (exp->mark "nway-N", docs/oracle.md: ignored unless the target runs
 *    with AMEBA_ORACLE), named in each context (extra: mark=nway-N), so
 *    that the window can be compared with the oracle over the same portion
 *    of the run. Before that (the program exited first), the
 *    found units and the singles of the queue are offered with the
 *    search's own counts (primary metric only, measured=search_intervals);
 *    so is a found unit that counted nothing over the whole window.
 *  - Rescan (a phase after the search): the final measurement also tells
 *    what share of each interval's total the found objects miss. The
 *    search ends in one phase of the program (e.g. while main() fills an
 *    input array) and the objects of a later phase counted nothing then,
 *    so they were dropped (true_sharing: the shared counter, 8% of the
 *    run, was never found). When the found objects miss more than
 *    `rescan` above what they missed at the search's end (its own
 *    estimate, or the least missed in a final interval since), a new
 *    phase began: the search starts again (a new round, from n regions
 *    over all objects minus the found ones) while the found objects are
 *    still measured (if the program exits first, their window stays
 *    whole). When the round found new objects, the window restarts for
 *    all of them (window_restart, a new mark): every share is over one
 *    window, so the shares add up to at most 1, rank against each other
 *    and match the program context (per-object windows gave true_sharing
 *    55.3% + 55.4% + 1.4%: samples over a window holding the fill, the
 *    shared counter over the workers' phase only). At most MAX_RESCANS
 *    times, and not again after a round that found nothing; not with
 *    per_thread=1 (each thread's search has its own phases).
 *  - Newcomers: while a rescan may still come, the final measurement also
 *    counts, on the counters the search had and the window leaves spare
 *    (n - 1 - found, at most MAX_WATCH), the site units first listed after
 *    the search's round began (its spans covered what was listed then;
 *    a later block may lie where a quiet span was dropped), newest first,
 *    then the sites that allocated again since, most blocks first (a site
 *    quiet in the search, dropped with its span or set, whose new blocks
 *    start a phase: million_live's second new_small caller).
 *    One that misses at least `unsearched` of a final interval starts a
 *    rescan by itself (a buffer under rescan's 10 points whose span the
 *    search dropped: wl_hash_table's `unknown`). When a rescan starts,
 *    each of them that counted in that interval enters the new queue as a
 *    single already measured once, so the rescan starts from it instead
 *    of finding it by halving again:
 *    a phase as short as million_live's second round (its last ~2%, a
 *    new site's 100,000 blocks) ends a few intervals after the rescan
 *    starts, and by then the halving has not reached it. A newcomer first
 *    listed in the interval that showed the phase (no final interval
 *    counted it) is measured, as a unit, in the rescan's first interval
 *    (search_newcomers).
 *  - An experiment holds at most max_ranges address ranges: beyond, the
 *    counters with the most ranges are measured on their hull (a site with
 *    more than max_ranges / 4 blocks always is).
 *  - more=1: after each round, the found units are cut out of the
 *    remaining regions (their spans are measured minus the found objects)
 *    and the search goes on, round after round, until the queue's share
 *    falls under `unsearched`, the queue is empty, a round finds nothing,
 *    or the budget is spent.
 *  - per_thread=1: one independent search per thread (its counters count
 *    that thread only; shares are of that thread's total), created when the
 *    thread first appears; the union of what they find is measured for all
 *    threads. A thread that counts nothing for 2 x keep intervals in a row,
 *    or exits, ends its search. The strategy finishes when every search did.
 *  - Carry: when a plan changes the counters, the agent carries what the
 *    old ones counted between the interval's reading and the switch into
 *    the identical new ones only (ameba_results.carried). Counters set
 *    against each other must cover one span: when one counter of a group
 *    (a search's total and slots; the final measurement's totals and
 *    units; the newcomers it watches, compared with the primary total
 *    over their span) was not carried, the interval uses the group's
 *    values without the carry, from the switch on. Otherwise a found unit whose
 *    where-set changed (a site measured by its bin from then on) loses
 *    the gap that the carried program total keeps: on wl_true_sharing
 *    under load the window's last interval carried 80,000 misses of the
 *    total and none of the units, and total_weight's share fell by 0.8
 *    points.
 *  - AMEBA_NWAY_TRACE=1 in the agent's environment dumps the queue after
 *    every interval on stderr (for working on the search itself).
 *  - Files: nway_int.h (the state above, shared), nway_units.c (units,
 *    spans, regions), nway_queue.c (the queue: seeding, ranking, splits),
 *    nway_plan.c (an interval's counters, the final measurement), and here
 *    observing, contexts and the plugin's entry points.
 */
#include "nway_int.h"

static const struct ameba_param nway_params[] = {
	{ "n", AMEBA_PARAM_INT, "10", "range counters per interval (regions measured at once), >= 2" },
	{ "metric", AMEBA_PARAM_METRIC, "mem_ref", "metric the search ranks by (the run's --metric)" },
	{ "metrics", AMEBA_PARAM_STRING, "all",
	  "metrics of the final measurement: all, or names joined by '+'" },
	{ "interval_ms", AMEBA_PARAM_INT, "0", "search interval (0: the agent's --interval)" },
	{ "max_interval_ms", AMEBA_PARAM_INT, "1600", "the interval grows up to this (phases)" },
	{ "grow", AMEBA_PARAM_DOUBLE, "2", "interval factor when a zero-count region is kept" },
	{ "keep", AMEBA_PARAM_INT, "4", "intervals a top region may count zero before it is dropped" },
	{ "quiet_ms", AMEBA_PARAM_INT, "1000", "... and the time it must stay quiet (ms)" },
	{ "unsearched", AMEBA_PARAM_DOUBLE, "0.02",
	  "stop when the regions not yet refined hold less than this share" },
	{ "max_intervals", AMEBA_PARAM_INT, "200", "search intervals before the search stops (budget)" },
	{ "final_intervals", AMEBA_PARAM_INT, "2",
	  "intervals of the final measurement (0: until the program exits)" },
	{ "more", AMEBA_PARAM_INT, "0", "1: continue into the remaining space after each result" },
	{ "rescan", AMEBA_PARAM_DOUBLE, "0.1", "search again when, after the search, the found "
	  "objects miss this much more of an interval's total (a new phase); 0: never" },
	{ "per_thread", AMEBA_PARAM_INT, "0", "1: one search per thread" },
	{ "group", AMEBA_PARAM_INT, "8", "regions of at most this many units with interleaved "
	  "heap blocks are split by allocation site" },
	{ "max_ranges", AMEBA_PARAM_STRING, "host", "address ranges per experiment (host: what fits "
	  "in one 1 MiB monitor request, ~37 bytes a range)" },
	{ "bins", AMEBA_PARAM_INT, "1", "1: measure an allocation site with several blocks by its bin "
	  "(the monitor resolves the blocks, new ones included); 0: by its blocks' ranges" },
};

const char *const nway_end_names[] = { "-", "top n-1 single", "unsearched share under threshold",
					 "budget", "queue empty", "thread idle" };

/* ---- observing ---- */

/* Lengthens the intervals of search s by the factor grow (phases). */
static void search_grow(struct nway *st, struct search *s, uint64_t elapsed_ns)
{
	uint64_t cur_ms = elapsed_ns / 1000000;
	double base = s->interval_ms ? s->interval_ms : cur_ms > 100 ? (double)cur_ms : 100;
	double next = base * st->grow;

	if (next > st->max_interval_ms)
		next = st->max_interval_ms;
	if (next > s->interval_ms)
		s->interval_ms = (uint32_t)next;
}

static void search_observe(struct nway *st, struct search *s, const uint64_t *slot_v, double total,
			   uint64_t elapsed_ns)
{
	int kept = 0;

	s->nr_intervals++;
	if (total <= 0) {
		/* nothing happened (an idle thread): nothing learned */
		s->idle++;
		if (st->per_thread && s->idle >= 2 * st->keep && s->thread >= 0) {
			s->ended_by = END_IDLE;
			s->phase = S_DONE;
		}
		slots_clear(s);
		return;
	}
	s->idle = 0;
	for (uint32_t k = 0; k < s->nr_slots; k++) {
		struct slot *sl = &s->slots[k];
		struct region *r = &s->q[sl->qi];
		double v = (double)slot_v[k];

		if (sl->type == SLOT_ASIS) {
			r->fresh = 0;
			r->meas_at = s->nr_intervals;
			if (region_single(r)) {
				r->sum_v += v;
				r->sum_t += total;
				r->sum_ns += elapsed_ns;
			}
			if (v > 0) {
				r->nr_meas++;
				r->zero_streak = 0;
				r->zero_ns = 0;
				r->share = region_single(r) ? r->sum_v / r->sum_t : v / total;
				continue;
			}
			if (r->protect && region_has_objects(st, r) &&
			    (r->zero_streak < st->keep || r->zero_ns < st->quiet_ns)) {
				/* kept: it (or its parent) ranked in the top before.
				 * Its estimate halves, so it sinks in the queue but
				 * stays there until it was quiet for keep intervals
				 * and quiet_ms; a region that counted before and
				 * went quiet is a phase: the interval grows */
				r->zero_streak++;
				r->zero_ns += elapsed_ns;
				if (region_single(r) && r->nr_meas)
					r->share = r->sum_v / r->sum_t;
				else
					r->share /= 2;
				kept |= r->nr_meas > 0;
			} else {
				r->dead = 1;
			}
			continue;
		}
		/* a half of a split parent */
		r->dead = 1;
		{
			struct region c = sl->child;

			sl->child.set = NULL;	/* moved into the queue */
			c.fresh = 0;
			c.meas_at = s->nr_intervals;
			if (v > 0) {
				c.share = v / total;
				c.nr_meas = 1;
				if (region_single(&c)) {
					c.sum_v = v;
					c.sum_t = total;
					c.sum_ns = elapsed_ns;
				}
			} else if (region_has_objects(st, &c) && st->keep) {
				/* a quiet half of a top region: kept for a few
				 * intervals (it may be in another phase), with half
				 * its parent's share as the estimate */
				c.share = r->share / 2;
				c.zero_streak = 1;
				c.zero_ns = elapsed_ns;
				if (region_single(&c)) {
					c.sum_t = total;
					c.sum_ns = elapsed_ns;
				}
			} else {
				region_free(&c);
				continue;
			}
			if (q_push(s, &c)) {
				region_free(&c);
				continue;
			}
			r = &s->q[sl->qi];	/* q may have moved */
		}
	}
	/* a quiet region not measured this interval (n < 4: every other
	 * one) stays quiet for the time of it: quiet_ms is time, not counts */
	for (uint32_t i = 0; i < s->nr_q; i++)
		if (s->q[i].zero_streak && s->q[i].meas_at != s->nr_intervals)
			s->q[i].zero_ns += elapsed_ns;
	slots_clear(s);
	q_compact(s);
	if (kept)
		search_grow(st, s, elapsed_ns);
}

static void search_log(struct nway *st, uint32_t si)
{
	struct search *s = &st->searches[si];
	uint32_t nr_single = 0;
	char best[120] = "-", who[24] = "";

	for (uint32_t i = 0; i < s->nr_q; i++)
		nr_single += region_single(&s->q[i]) && s->q[i].nr_meas;
	if (s->nr_q) {
		const struct region *r = &s->q[0];

		if (region_single(r))
			snprintf(best, sizeof(best), "%s %.1f%%", st->units[r->unit].obj.name ?
				 st->units[r->unit].obj.name : st->units[r->unit].key + 2, 100 * r->share);
		else if (r->kind == R_SET)
			snprintf(best, sizeof(best), "%u sites %.1f%%", r->nr_set, 100 * r->share);
		else
			snprintf(best, sizeof(best), "[0x%lx, 0x%lx) %.1f%%", (unsigned long)r->start,
				 (unsigned long)r->end, 100 * r->share);
	}
	if (getenv("AMEBA_NWAY_TRACE"))
		for (uint32_t i = 0; i < s->nr_q; i++) {
			const struct region *r = &s->q[i];

			fprintf(stderr, "  q%u kind %d [%lx,%lx) unit %s set %u share %.4f meas %u "
				"zero %u fresh %d prot %d\n", i, r->kind, (unsigned long)r->start, (unsigned long)r->end,
				r->kind == R_UNIT ? st->units[r->unit].key : "-", r->nr_set, r->share,
				r->nr_meas, r->zero_streak, r->fresh, r->protect);
		}
	if (s->thread >= 0)
		snprintf(who, sizeof(who), " (thread %d)", s->thread);
	st->host->log(st->host, "interval %u%s: %u regions queued, %u single, best %s, next "
		      "interval %u ms", s->nr_intervals, who, s->nr_q, nr_single, best,
		      s->interval_ms);
}

/*
 * After the search: does the interval just measured (primary total
 * `total`; over the watched newcomers' span, watch_total) show a new
 * phase the found objects miss? Then the search starts again (Notes:
 * rescan); 1 when it did.
 */
int rescan_check(struct nway *st, double total, double watch_total)
{
	struct search *s = &st->searches[0];
	double found = 0, missed, base, top_new = 0;

	if (!rescan_may(st) || total <= 0)
		return 0;
	for (uint32_t f = 0; f < st->nr_found; f++)
		if (st->found[f].measuring)
			found += st->found[f].iv;
	missed = 1 - found / total;
	if (st->missed_min < 0) {
		/* what the search itself left unexplained at its end */
		double sum = 0;

		for (uint32_t f = 0; f < st->nr_found; f++)
			if (st->found[f].round >= st->rescan_round)
				sum += st->found[f].search_share;
		st->missed_min = sum < 1 ? 1 - sum : 0;
	}
	base = st->missed_min;
	if (missed < st->missed_min)
		st->missed_min = missed;
	for (uint32_t w = 0; w < st->nr_watch && watch_total > 0; w++)
		if (st->watch_v[w] / watch_total > top_new)
			top_new = st->watch_v[w] / watch_total;
	if (missed <= base + st->rescan && (top_new <= 0 || top_new < st->unsearched))
		return 0;
	if (missed > base + st->rescan)
		st->host->log(st->host, "the %u found objects miss %.1f%% of an interval (%.1f%% at "
			      "the search's end): a new phase, searching again", st->nr_found,
			      100 * missed, 100 * base);
	else
		st->host->log(st->host, "a site first listed or allocating again after the search "
			      "began misses %.1f%% of an interval (at least unsearched=%g): searching "
			      "again", 100 * top_new, st->unsearched);
	for (uint32_t i = 0; i < s->nr_q; i++)
		region_free(&s->q[i]);
	s->nr_q = 0;
	/* the newcomers that counted in this interval: singles measured once
	 * (Notes), by bin from now on and so in no span */
	for (uint32_t w = 0; w < st->nr_watch; w++) {
		struct unit *un = &st->units[st->watch[w]];
		struct region r;

		if (st->watch_v[w] <= 0 || un->found)
			continue;
		memset(&r, 0, sizeof(r));
		r.kind = R_UNIT;
		r.unit = st->watch[w];
		r.sum_v = st->watch_v[w];
		r.sum_t = total;
		r.sum_ns = st->watch_ns;
		r.share = r.sum_v / total;
		r.nr_meas = 1;
		r.meas_at = s->nr_intervals;
		r.protect = 1;
		if (q_push(s, &r))
			break;
		unit_apart_now(st, st->watch[w]);
		st->host->log(st->host, "newcomer %s (%s after the search began): %.1f%% of "
			      "that interval, measured first", un->obj.name ? un->obj.name :
			      un->key + 2, un->born_plan > st->round_plan ? "first listed" :
			      "allocating again", 100 * r.share);
	}
	st->nr_watch = 0;
	s->started = 0;
	s->phase = S_SEARCH;
	s->ended_by = END_NONE;
	s->idle = 0;
	s->round++;
	st->rescan_round = s->round;
	st->final = F_NONE;
	st->nr_rescans++;
	st->found_before_rescan = st->nr_found;
	return 1;
}

/* The counters set against each other in an interval: search si's total
 * and slots (si), the final measurement's totals and units (MAX_SEARCHES),
 * its newcomers watched (GROUP_WATCH); -1 none. The watches are a group
 * of their own: a newcomer's counter is new more often than not (a block
 * first listed, a watch slot given to another site), and in the final
 * group it dropped the carry of every total and unit - the report's
 * counts, exact against the oracle otherwise, lost the slice between the
 * interval's reading and the switch (test strategy_served_exact_batch,
 * ~1 run in 10: the stdout buffer listed in the program's last interval).
 * A watch is compared with the primary total over its own span instead
 * (watch_total). */
#define GROUP_WATCH (MAX_SEARCHES + 1)
static int span_group(uint64_t tag)
{
	int kind = (int)(tag >> 56);
	uint32_t a = (uint32_t)(tag >> 32) & 0xffffff;

	if ((kind == TAG_TOTAL || kind == TAG_SLOT) && a < MAX_SEARCHES)
		return (int)a;
	if (kind == TAG_FTOTAL || kind == TAG_FUNIT)
		return MAX_SEARCHES;
	if (kind == TAG_FWATCH)
		return GROUP_WATCH;
	return -1;
}

/*
 * After a switch, a group of which one counter was not carried keeps none
 * of the carry (Notes: carry): ungroup[g] for those. Counter i's value over
 * the group's span is then *v, and its per-thread carry to subtract *ptc
 * (NULL: none).
 */
/* Counter i's value from the switch on: without what was carried into it */
static uint64_t value_uncarried(const struct ameba_results *res, uint32_t i)
{
	uint64_t c = res->carried[i], v = res->values[i];

	return c == AMEBA_NOT_CARRIED ? v : v - (c < v ? c : v);
}

static void span_value(const struct ameba_results *res, const struct ameba_experiment *exp,
		       const int *ungroup, uint32_t i, uint64_t *v, const uint64_t **ptc)
{
	int g = span_group(exp->counters[i].tag);

	*v = res->values[i];
	*ptc = NULL;
	if (g < 0 || !ungroup[g] || res->carried[i] == AMEBA_NOT_CARRIED)
		return;
	*v = value_uncarried(res, i);
	*ptc = res->per_thread_carried ? res->per_thread_carried[i] : NULL;
}

static int nway_observe(void *state, const struct ameba_experiment *exp,
			const struct ameba_results *res)
{
	struct nway *st = state;
	uint64_t *slot_v[MAX_SEARCHES] = { 0 };
	double totals[MAX_SEARCHES] = { 0 };
	int rc = threads_grow(st, strategy_results_width(res)), final_seen = 0;
	int ungroup[GROUP_WATCH + 1] = { 0 };
	double final_total = 0, watch_total = 0;

	if (rc)
		return rc;
	if (AMEBA_HAS(struct ameba_results, res, per_thread_carried) && res->carried)
		for (uint32_t i = 0; i < exp->nr_counters && i < res->nr_counters; i++) {
			int g = span_group(exp->counters[i].tag);

			if (g >= 0 && res->carried[i] == AMEBA_NOT_CARRIED)
				ungroup[g] = 1;
		}
	for (uint32_t si = 0; si < st->nr_searches; si++) {
		struct search *s = &st->searches[si];

		if (s->planned && s->phase == S_SEARCH && s->nr_slots) {
			slot_v[si] = calloc(s->nr_slots, sizeof(uint64_t));
			if (!slot_v[si]) {
				rc = AMEBA_ENOMEM;
				goto out;
			}
		}
	}
	for (uint32_t i = 0; i < exp->nr_counters && i < res->nr_counters; i++) {
		uint64_t tag = exp->counters[i].tag, v;
		int kind = (int)(tag >> 56);
		uint32_t a = (uint32_t)(tag >> 32) & 0xffffff, b = (uint32_t)tag;
		const uint64_t *pt = res->per_thread ? res->per_thread[i] : NULL, *ptc;

		span_value(res, exp, ungroup, i, &v, &ptc);
#define PT(k) ((double)pt[k] - (ptc ? (double)ptc[k] : 0.0))
		if (kind == TAG_TOTAL && a < st->nr_searches) {
			totals[a] = (double)v;
		} else if (kind == TAG_SLOT && a < st->nr_searches && slot_v[a] &&
			   b < st->searches[a].nr_slots) {
			slot_v[a][b] = v;
		} else if (kind == TAG_FTOTAL && b < st->nr_metrics) {
			int m = st->metrics[b];

			final_seen = 1;
			if (m == st->primary) {
				/* the watches' span: from the switch, when
				 * one of them was not carried */
				final_total = (double)v;
				watch_total = (double)(ungroup[GROUP_WATCH] ?
						       value_uncarried(res, i) : res->values[i]);
			}
			st->prog[m] += (double)v;
			for (uint32_t k = 0; pt && k < res->nr_threads; k++)
				st->prog_pt[m][ameba_results_thread(res, k)] += PT(k);
			for (uint32_t f = 0; f < st->nr_found; f++) {
				struct found *fd = &st->found[f];

				if (!fd->measuring)
					continue;
				fd->program[m] += (double)v;
				for (uint32_t k = 0; pt && k < res->nr_threads; k++)
					fd->program_pt[m][ameba_results_thread(res, k)] += PT(k);
			}
		} else if (kind == TAG_FUNIT && a < st->nr_found && b < st->nr_metrics) {
			struct found *fd = &st->found[a];
			int m = st->metrics[b];

			fd->values[m] += (double)v;
			if (m == st->primary)
				fd->iv = (double)v;
			for (uint32_t k = 0; pt && k < res->nr_threads; k++)
				fd->pt[m][ameba_results_thread(res, k)] += PT(k);
		} else if (kind == TAG_FWATCH && a < st->nr_watch) {
			st->watch_v[a] = (double)v;
		}
#undef PT
	}
	if (final_seen) {
		st->watch_ns = res->elapsed_ns;
		st->final_ns += res->elapsed_ns;
		for (uint32_t f = 0; f < st->nr_found; f++)
			if (st->found[f].measuring)
				st->found[f].window_ns += res->elapsed_ns;
	}
	for (uint32_t si = 0; si < st->nr_searches; si++) {
		struct search *s = &st->searches[si];

		if (!s->planned)
			continue;
		if (s->phase == S_SEARCH) {
			search_observe(st, s, slot_v[si] ? slot_v[si] : (uint64_t[1]){ 0 }, totals[si],
				       res->elapsed_ns);
			search_log(st, si);
		}
	}
	if (final_seen && st->final == F_MEASURING && rescan_check(st, final_total, watch_total))
		goto out;
	if (final_seen && st->final == F_MEASURING) {
		int quiet = 0;

		for (uint32_t f = 0; f < st->nr_found; f++)
			quiet |= st->found[f].iv <= 0;
		if (quiet && st->final_ext < st->keep) {
			/* a found object went quiet: a phase; measure longer */
			uint64_t cur_ms = res->elapsed_ns / 1000000;
			double next = (double)(st->final_interval_ms ? st->final_interval_ms :
					       cur_ms > 100 ? cur_ms : 100) * st->grow;

			st->final_ext++;
			st->final_interval_ms = next > st->max_interval_ms ? st->max_interval_ms :
						(uint32_t)next;
		} else if (st->final_intervals && !--st->final_left) {
			st->final = F_DONE;	/* final_intervals=0: until the program exits */
		}
	}
out:
	for (uint32_t si = 0; si < st->nr_searches; si++)
		free(slot_v[si]);
	return rc;
}

/* ---- contexts ---- */

static double found_share(const struct nway *st, const struct found *f)
{
	return f->program[st->primary] > 0 ? f->values[st->primary] / f->program[st->primary] : 0;
}

static int cmp_found(const void *a, const void *b, void *arg)
{
	const struct nway *st = arg;
	const struct found *x = &st->found[*(const uint32_t *)a], *y = &st->found[*(const uint32_t *)b];
	double sx = x->window_ns ? found_share(st, x) : x->search_share;
	double sy = y->window_ns ? found_share(st, y) : y->search_share;

	if (x->round != y->round)
		return (x->round > y->round) - (x->round < y->round);
	return (sx < sy) - (sx > sy);
}

static void found_extra(const struct nway *st, struct found *f)
{
	size_t o = (size_t)snprintf(f->extra, sizeof(f->extra), "strategy=nway\nsearch_share=%.6f\n"
				    "round=%u\nfound_by=", f->search_share, f->round + 1);

	if (f->found_by >> 63)
		o += (size_t)snprintf(f->extra + o, sizeof(f->extra) - o, "all");
	for (uint32_t t = 0; t < 63 && o < sizeof(f->extra); t++)
		if (f->found_by & (1ull << t))
			o += (size_t)snprintf(f->extra + o, sizeof(f->extra) - o, "%sT%u",
					      (f->found_by & ((1ull << t) - 1)) ? "," : "", t);
	if (f->hull && o < sizeof(f->extra))
		o += (size_t)snprintf(f->extra + o, sizeof(f->extra) - o, "\nmeasured=hull");
	if (f->mark && o < sizeof(f->extra))
		snprintf(f->extra + o, sizeof(f->extra) - o, "\nmark=nway-%u", f->mark);
	(void)st;
}

static int nway_contexts(void *state, const struct ameba_context **out, uint32_t *nr)
{
	struct nway *st = state;
	uint32_t n = 0, nr_prov = 0, cap = st->nr_found + 2, *order, *seen;

	for (uint32_t si = 0; si < st->nr_searches; si++)
		cap += st->searches[si].nr_q;
	free(st->ctxs);
	free(st->prov_objs);
	free(st->prov_extra);
	st->ctxs = strategy_ctxs_alloc(cap);
	st->prov_objs = calloc(cap, sizeof(*st->prov_objs));
	st->prov_extra = calloc(cap, sizeof(*st->prov_extra));
	order = malloc(cap * sizeof(*order));
	seen = malloc(cap * sizeof(*seen));
	if (!st->ctxs || !st->prov_objs || !st->prov_extra || !order || !seen) {
		free(order);
		free(seen);
		return AMEBA_ENOMEM;
	}
	/*
	 * A window that saw nothing of the ranking metric (a rescan restarted
	 * it as the program ended: the 2-way on million_live, window from
	 * 100% of the run) is no window: the found objects keep the search's
	 * figures, as if the program had ended before it.
	 */
	int window = st->final_ns && st->prog[st->primary] > 0;

	if (window) {
		struct ameba_context *c = &st->ctxs[n++];
		struct ameba_context_data *d = strategy_ctx_data(c);

		c->kind = AMEBA_CTX_PROGRAM;
		for (uint32_t k = 0; k < st->nr_metrics; k++) {
			int m = st->metrics[k];

			if (!st->final_has[m])
				continue;
			d->has[m] = 1;
			d->values[m] = d->program[m] = st->prog[m];
			d->per_thread[m] = st->prog_pt[m];
		}
		c->nr_threads = st->nr_threads_cap;
		c->thread_ids = st->thread_ids;
		c->window_ns = st->final_ns;
		c->confidence = st->host->exact ? 1.0 : 0.5;
	}
	for (uint32_t f = 0; f < st->nr_found; f++)
		order[f] = f;
	qsort_r(order, st->nr_found, sizeof(*order), cmp_found, st);
	for (uint32_t i = 0; i < st->nr_found; i++) {
		struct found *f = &st->found[order[i]];
		/* hot while the search ran, nothing in the whole window: a phase
		 * that ended as the window began (wl_cxx's tally, whose window
		 * was the teardown after the workers joined) */
		int quiet = window && f->window_ns && f->values[st->primary] <= 0 &&
			    f->search_v > 0;
		struct ameba_context *c;
		struct ameba_context_data *d;

		if (!f->window_ns || !window || quiet) {
			/*
			 * Found, but the program ended before the final
			 * measurement - or before a window that a rescan
			 * restarted just before the exit saw anything (above):
			 * the search's own figures, over the time of the
			 * intervals that measured it (its window_ns). Beside a
			 * window that did run, an object without one is left
			 * out once the final measurement runs; while a rescan
			 * searches, it is reported as provisional (the agent
			 * lists it after the window's objects, the report
			 * flags it) with half the confidence: a share over a
			 * few intervals at the end of the run, not over the
			 * window the others share. So is one the window saw
			 * quiet (above): left out, a table would rank it last at
			 * 0% when it held a third of the misses before.
			 */
			if ((st->final != F_NONE && window && !quiet) || f->search_v <= 0)
				continue;
			c = &st->ctxs[n++];
			d = strategy_ctx_data(c);
			c->kind = AMEBA_CTX_OBJECT;
			c->object = &st->units[f->unit].obj;
			d->has[st->primary] = 1;
			d->values[st->primary] = f->search_v;
			d->program[st->primary] = f->search_t;
			c->window_ns = f->search_ns;
			c->confidence = (st->host->exact ? 1.0 : 0.5) * (window ? 0.5 : 1.0);
			c->extra = "strategy=nway\nmeasured=search_intervals";
			continue;
		}
		c = &st->ctxs[n++];
		d = strategy_ctx_data(c);
		c->kind = AMEBA_CTX_OBJECT;
		c->object = &st->units[f->unit].obj;
		for (uint32_t k = 0; k < st->nr_metrics; k++) {
			int m = st->metrics[k];

			if (!st->final_has[m])
				continue;
			d->has[m] = 1;
			d->values[m] = f->values[m];
			d->program[m] = f->program[m];
			d->per_thread[m] = f->pt[m];
		}
		c->nr_threads = st->nr_threads_cap;
		c->thread_ids = st->thread_ids;
		c->window_ns = f->window_ns;
		c->confidence = (st->host->exact ? 1.0 : 0.5) * (f->hull ? 0.5 : 1.0);
		found_extra(st, f);
		c->extra = f->extra;
	}
	/* not finally measured yet: the search's own figures */
	for (uint32_t si = 0; st->final == F_NONE && si < st->nr_searches; si++) {
		const struct search *s = &st->searches[si];

		for (uint32_t i = 0; i < s->nr_q; i++) {
			const struct region *r = &s->q[i];
			struct ameba_context *c;
			struct ameba_context_data *d;
			struct unit *un;
			int dup = 0;

			if (!region_single(r) || !r->nr_meas || r->sum_v <= 0)
				continue;
			un = &st->units[r->unit];
			for (uint32_t j = 0; j < nr_prov; j++)
				dup |= seen[j] == r->unit;
			if (dup || un->found || !un->obj.name)
				continue;
			seen[nr_prov] = r->unit;
			c = &st->ctxs[n++];
			d = strategy_ctx_data(c);
			st->prov_objs[nr_prov] = un->obj;
			c->kind = AMEBA_CTX_OBJECT;
			c->object = &st->prov_objs[nr_prov];
			d->has[st->primary] = 1;
			d->values[st->primary] = r->sum_v;
			d->program[st->primary] = r->sum_t;
			c->window_ns = r->sum_ns;
			/* beside a window's objects (a rescan's queue): provisional */
			c->confidence = (st->host->exact ? 1.0 : 0.5) * (window ? 0.5 : 1.0);
			snprintf(st->prov_extra[nr_prov], sizeof(st->prov_extra[0]),
				 "strategy=nway\nmeasured=search_intervals\nsearch_share=%.6f", r->share);
			c->extra = st->prov_extra[nr_prov];
			nr_prov++;
		}
	}
	free(order);
	free(seen);
	*out = st->ctxs;
	*nr = n;
	return 0;
}

static void nway_progress(void *state, char *buf, size_t len)
{
	struct nway *st = state;
	const struct search *s = st->nr_searches ? &st->searches[0] : NULL;
	uint32_t nr_single = 0;

	if (!s) {
		snprintf(buf, len, "nway: starting");
		return;
	}
	for (uint32_t i = 0; i < s->nr_q; i++)
		nr_single += region_single(&s->q[i]) && s->q[i].nr_meas;
	if (s->phase == S_SEARCH && s->nr_q) {
		const struct region *r = &s->q[0];
		const char *name = region_single(r) && st->units[r->unit].obj.name ?
				   st->units[r->unit].obj.name : "a region";

		snprintf(buf, len, "nway interval %u: %u regions, %u single, best %s %.1f%%",
			 s->nr_intervals, s->nr_q, nr_single, name, 100 * r->share);
	} else {
		snprintf(buf, len, "nway %s: %u objects found (%s)", st->final == F_DONE ? "done" :
			 "final measurement", st->nr_found, nway_end_names[s->ended_by]);
	}
}

static void nway_destroy(void *state)
{
	struct nway *st = state;

	for (uint32_t si = 0; si < st->nr_searches; si++) {
		struct search *s = &st->searches[si];

		slots_clear(s);
		for (uint32_t i = 0; i < s->nr_q; i++)
			region_free(&s->q[i]);
		free(s->q);
		free(s->slots);
	}
	for (uint32_t u = 0; u < st->nr_units; u++) {
		free(st->units[u].key);
		if (!st->units[u].is_line) {
			free((char *)st->units[u].obj.name);
			free((char *)st->units[u].obj.site);
		}
		free(st->units[u].line_name);
	}
	for (uint32_t f = 0; f < st->nr_found; f++)
		for (int m = 0; m < AMEBA_M_NR; m++) {
			free(st->found[f].pt[m]);
			free(st->found[f].program_pt[m]);
		}
	for (int m = 0; m < AMEBA_M_NR; m++)
		free(st->prog_pt[m]);
	free(st->found);
	free(st->units);
	free(st->index);
	free(st->obj_unit);
	free(st->thread_ids);
	free(st->ranges);
	free(st->counters);
	free(st->cbins);
	free(st->xnames);
	free(st->cexcept);
	free(st->bnames);
	free(st->ctxs);
	free(st->prov_objs);
	free(st->prov_extra);
	free(st);
}

/* ---- creation ---- */

static long long param_int(const struct ameba_params *p, const char *name, long long def)
{
	const char *v = ameba_param_get(p, name);

	return v ? atoll(v) : def;
}

static double param_double(const struct ameba_params *p, const char *name, double def)
{
	const char *v = ameba_param_get(p, name);

	return v ? atof(v) : def;
}

static int nway_create(const struct ameba_host *host, const struct ameba_params *params,
		       void **state, char *msg)
{
	struct nway *st;
	const char *metric = ameba_param_get(params, "metric");
	const char *metrics = ameba_param_get(params, "metrics");
	long long n = param_int(params, "n", 10), keep = param_int(params, "keep", 4);
	long long quiet = param_int(params, "quiet_ms", 1000);
	long long interval = param_int(params, "interval_ms", 0);
	long long max_interval = param_int(params, "max_interval_ms", 1600);
	long long max_intervals = param_int(params, "max_intervals", 200);
	long long final_intervals = param_int(params, "final_intervals", 2);
	long long group = param_int(params, "group", 8);
	long long max_ranges = strategy_limit(ameba_param_get(params, "max_ranges"),
					      AMEBA_HOST_HAS(host, max_ranges) ? host->max_ranges : 0,
					      AMEBA_MAX_RANGES);
	long long use_bins = param_int(params, "bins", 1);
	long long more = param_int(params, "more", 0), per_thread = param_int(params, "per_thread", 0);
	double grow = param_double(params, "grow", 2);
	double unsearched = param_double(params, "unsearched", 0.02);
	double rescan = param_double(params, "rescan", 0.1);

	if (host->abi_version != AMEBA_PLUGIN_ABI_VERSION) {
		snprintf(msg, 256, "host speaks plugin ABI %u, nway.so was built for %d",
			 host->abi_version, AMEBA_PLUGIN_ABI_VERSION);
		return AMEBA_EABI;
	}
	if (n < 2 || n > 1000) {
		snprintf(msg, 256, "n must be from 2 to 1000, got %lld", n);
		return AMEBA_EINVAL;
	}
	if (keep < 0 || quiet < 0 || interval < 0 || max_interval < 1 || max_intervals < 1 ||
	    final_intervals < 0 || group < 2 || max_ranges < 16 || (more != 0 && more != 1) ||
	    (per_thread != 0 && per_thread != 1) || (use_bins != 0 && use_bins != 1)) {
		snprintf(msg, 256, "want keep >= 0, quiet_ms >= 0, interval_ms >= 0, max_interval_ms >= 1, "
			 "max_intervals >= 1, final_intervals >= 0, group >= 2, max_ranges >= 16, "
			 "more, per_thread and bins 0 or 1");
		return AMEBA_EINVAL;
	}
	if (grow < 1 || unsearched < 0 || unsearched >= 1 || rescan < 0 || rescan > 1) {
		snprintf(msg, 256, "grow must be >= 1 (got %g), unsearched in [0, 1) (got %g) "
			 "and rescan in [0, 1] (got %g)", grow, unsearched, rescan);
		return AMEBA_EINVAL;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return AMEBA_ENOMEM;
	st->host = host;
	st->n = (uint32_t)n;
	st->keep = (uint32_t)keep;
	st->quiet_ns = (uint64_t)quiet * 1000000ull;
	st->interval_ms = (uint32_t)interval;
	st->max_interval_ms = (uint32_t)max_interval;
	st->max_intervals = (uint32_t)max_intervals;
	st->final_intervals = (uint32_t)final_intervals;
	st->group = (uint32_t)group;
	st->max_ranges = (uint32_t)max_ranges;
	st->use_bins = use_bins != 0;
	st->more = (int)more;
	st->per_thread = (int)per_thread;
	st->grow = grow;
	st->unsearched = unsearched;
	st->rescan = rescan;
	st->missed_min = -1;
	st->primary = ameba_metric_by_name(metric ? metric : "mem_ref");
	if (st->primary < 0 || !strategy_host_has(host, st->primary)) {
		snprintf(msg, 256, "metric=%s: the backend does not measure it", metric ? metric : "?");
		free(st);
		return AMEBA_ENOTSUP;
	}
	if (strategy_metrics_select(host, metrics, st->primary, st->metrics, &st->nr_metrics,
				    msg)) {
		free(st);
		return AMEBA_EINVAL;
	}
	*state = st;
	return 0;
}

static const struct ameba_strategy_desc nway_desc = {
	.abi_version = AMEBA_PLUGIN_ABI_VERSION,
	.struct_size = sizeof(struct ameba_strategy_desc),
	.name = "nway",
	.summary = "n-way priority-queue search of the address space for the hottest objects "
		   "(Buck & Hollingsworth)",
	.params = nway_params,
	.nr_params = sizeof(nway_params) / sizeof(nway_params[0]),
	.create = nway_create,
	.plan = nway_plan,
	.observe = nway_observe,
	.contexts = nway_contexts,
	.progress = nway_progress,
	.destroy = nway_destroy,
};

AMEBA_API const struct ameba_strategy_desc *ameba_strategy_entry(void)
{
	return &nway_desc;
}
