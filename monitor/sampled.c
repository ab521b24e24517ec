/*
 * sampled.c - sampled simulation: bursts of exact simulation, each after a
 * warm-up, the program tallying its accesses in between; the conditional
 * counters read as estimates with 95% intervals (docs/simulator.md,
 * "Sampled simulation").
 *
 * Notes:
 * - A cycle, driven by one controller thread in wall time:
 *     tally   a gap drawn uniformly from [p/2, 3p/2] (the jitter keeps
 *             the bursts from locking onto a loop's phases): the hooks
 *             count each access in the thread's tally slot and return;
 *     replay  the threads that tallied replay the addresses their hooks
 *             kept through the gap (tally.c, mon_tally_replay_ask; in host
 *             order only);
 *     warm    warm_us, less the replay's time, of simulation whose
 *             counts are not used: the caches, TLBs and directory, stale
 *             from the last burst, refill; in host order until each
 *             thread simulated warm_min accesses too (warm_floor), the
 *             time it adds taken out of the burst;
 *     S0      the hooks tally again while the set is read (the ordered
 *             mode's merger first merges what was logged: mon_seq_pause,
 *             mon_seq_sync), so the snapshot has exactly the warm-up's end;
 *     burst   burst_us of simulation (less what warm_floor added, half
 *             of it at most), measured;
 *     S1      as S0; the burst's counts are S1 - S0, per counter and per
 *             thread, and its accesses the simulated tally's growth.
 *   Time rather than accesses sets the lengths: the hooks then cost the
 *   same whatever the simulation costs per access, so the run is slower
 *   than a dormant one by about (warm + burst) / period whatever the
 *   program does.
 * - Estimates: a burst's own accesses count as measured; the G accesses
 *   of the gap before it (the warm-up's included) are estimated by the two
 *   bursts around the gap: those before its phase change by the burst
 *   before, the rest by the burst after (gap_phi finds the change from the
 *   controller's snapshots of the accesses through the gap: where the
 *   program's rate of accesses changes, else the gap's midpoint). A burst
 *   with fewer than SMP_FULL_BURST accesses simulated lends its side part
 *   of the other's ratio; one the ordered mode's cut left nearly empty
 *   (too_few) is no burst. So a program that changes phase is estimated
 *   phase by phase (a ratio pooled over a window or the run gave each
 *   phase the others' behaviour). A gap's accesses wait for the burst
 *   after it, so a reading has one measured first (burst_first) unless
 *   the last is recent, and lags by little; once no burst will
 *   follow (the exit, the set's swap) what waits is estimated by the last
 *   burst, and a burst that simulated nothing (the threads asleep) closes
 *   its gap by the last ratio.
 * - Sets: the accesses before a counter's first burst are estimated by
 *   it; while a set's bursts are small (under SMP_FULL_BURST accesses
 *   simulated in all: threads starting, a program mostly asleep) they are
 *   measured and the rest waits for a ratio worth it (a 256-access burst
 *   of threads being born gave a churning program 6% of its count). A
 *   swap has a burst measured for the old set first (burst_first). A
 *   counter that
 *   goes on from the set a swap replaced (the same key: mri_server.c's
 *   cond_keys) takes its ratios and the accesses that waited (carry_give),
 *   so its gap across the swap is estimated like any other: an agent
 *   re-arms about every interval (the objects strategy's turns), and each
 *   set's tail estimated by its last burst alone gave a phase beginning
 *   after it the old phase's behaviour.
 * - Intervals: the difference d = r' - r of the two bursts' ratios
 *   measures both their noise and a phase change between them. With w the
 *   weight of the burst before (1/2 between full bursts), the gap adds
 *   G^2 d^2 max(w (1 - w), 1/12) to the variance: the error of placing a
 *   change that falls uniformly in the gap at its midpoint is G^2 d^2 / 12,
 *   and with independent noise in the two bursts G^2 s^2 / 2, E d^2 =
 *   2 s^2. Accesses after the last burst add (G d)^2 / 2. While a counter
 *   has had one burst, its count is taken as a Poisson count (variance X,
 *   scaled by the accesses it stands for). Values only grow; a reading's
 *   delta is what it estimated, its delta's interval the variance it
 *   added.
 * - Per-thread rows: the same with the thread's own counts and accesses
 *   in each burst, no interval; a thread no burst has seen yet has no row
 *   (the others' ratio would be a guess) and its accesses wait.
 * - The served counters' `before` (counts until the arm) is not estimated:
 *   0 in sampled mode.
 * - Locks: smp.lock orders the controller's steps, the arm and the reads;
 *   the hooks take none (their slots have one writer each).
 */
#include <errno.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mon.h"
#include "sampled_cost.h"
#include "sampled_est.h"
#include "seq.h"

/* what the per-thread rows may hold at most, in doubles over all threads */
#define SMP_ROW_BUDGET (4u << 20)

struct smp_thread {
	uint64_t base;		/* its accesses (both slots) at the last reading */
	uint64_t mark;		/* its accesses the totals have estimated */
	uint64_t rmark;		/* its accesses its row has estimated */
	uint64_t s0c, s1c;	/* its accesses at S0, at S1 */
	uint64_t s0_sim;	/* its simulated tally at S0 */
	double a;		/* its accesses simulated in the burst just ended */
	uint64_t s0_burst;	/* the burst whose S0 s0 holds (0: none) */
	uint64_t *s0;		/* [nr] its counts at S0 */
	double *bx;		/* [nr] its counts in the burst just ended */
	double *r, *rp;		/* [nr] the ratio of the last burst that saw it; pooled */
	double ap;		/* that burst's accesses simulated of it (0: none yet) */
	double *est;		/* [nr] its row's estimate */
	int sent_exited;	/* its last row went out after it exited */
};

enum smp_phase { PH_TALLY, PH_WARM, PH_MEASURE };


static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int running, stop;
	int cond_ready;		/* wake waits on CLOCK_MONOTONIC */
	pthread_t ctl;
	struct mon_sampled_cfg cfg;
	uint64_t rng;
	int phase;
	uint64_t burst_id;	/* bursts begun (the current one's id) */
	uint64_t bursts_ended;	/* measured bursts ended (burst_first waits on it) */
	uint64_t last_end_ns;	/* when the last ended, CLOCK_MONOTONIC */
	int swapped;		/* a swap just had a usable burst: no kick at the arm */
	double snap[2 * SMP_SNAPS + 1];	/* the gap's accesses: at its start, then at each
					 * step's end (a due ends the last one early) */
	uint64_t snap_ns[2 * SMP_SNAPS + 1];	/* when each was taken */
	uint64_t gap_ns, end_ns;	/* when the last gap began and ended (0: none) */
	uint32_t nsnap;
	double phi;		/* the gap's fraction before its phase change (gap_phi) */
	int closing;		/* no burst will follow: estimate all that waits */
	/* the armed set's estimates */
	uint64_t gen;		/* 0: none */
	uint32_t nr;
	uint64_t s0_gen;	/* the set S0 was taken of */
	uint64_t *s0tot, *tmp;	/* [nr] */
	uint32_t nall;		/* bursts measured of this set */
	double a_all;		/* their accesses simulated */
	double held;		/* accesses waiting for the set's first ratio */
	double extrap;		/* accesses estimated by a ratio (not measured) */
	double *x_all;		/* [nr] the bursts' counts */
	double *r, *rp, *d2;	/* [nr] the last burst's ratio, pooled with the one
				 * before; their difference, squared */
	double *apj;		/* [nr] the last burst's accesses simulated */
	double *dn;		/* [nr] differences seen (0: the Poisson interval) */
	double *known;		/* [nr] 1: has a ratio (a burst, or carried) */
	double *carry;		/* [nr] accesses carried from the last set's counter */
	double *cont;		/* [nr] 1: the next set has this counter (a swap) */
	double *cout;		/* [nr] its accesses that wait, for the next set */
	double *wx;		/* [nr] the counts of the set's first, small bursts */
	double wa;		/* their accesses simulated (< SMP_FULL_BURST) */
	uint64_t *keys;		/* [nr] what each counter counts (mon_sampled_armed) */
	double *est, *var;	/* [nr] the values; their variance */
	double *west, *wvar, *pe, *pv;	/* [nr] sampled_cost.c's (struct smp_cost_set) */
	double *vrep;		/* [nr] the variance the last reading reported */
	double *ci, *ci_delta;	/* [nr] of the last reading */
	uint32_t bursts_win;	/* bursts closed since the last reading */
	uint32_t bursts_read;	/* bursts closed in the last reading's window */
	double sim_all, calls_all;	/* for the fraction simulated (since the start) */
	struct smp_cost cost;	/* the gaps' stretch (sampled_cost.c) */
	uint64_t sim_ns;	/* wall time spent replaying, warming and measuring */
	uint64_t start_ns;	/* when the controller started */
	double floor_all;	/* simulated in warm_floor's extensions (counted by
				 * gap_stretch as the burst time they took) */
	int replay;		/* the threads replay their rings before a warm-up
				 * (AMEBA_SAMPLED_REPLAY=0: not) */
	uint64_t warm_min;	/* the warm-up's floor in accesses per thread
				 * (warm_floor; AMEBA_SAMPLED_WARM_MIN) */
	int kick;		/* a set was armed: the next burst now */
	uint64_t swap_burst_us;	/* a swap's bursts after an unusable one last this
				 * (0: cfg.burst_us; mon_sampled_swap) */
	uint32_t bursts_total;	/* measured since the start, over all sets */
	uint32_t bursts_empty;	/* since the start, too few accesses to be one, or
				 * none simulated */
	/* the replaced set's last reading (a swap reads it, then arms) */
	uint64_t prev_gen;
	uint32_t prev_nr;
	double *prev_ci;	/* [2 * prev_nr]: ci, then ci_delta */
	struct mon_sampled_info prev_info;
	struct smp_thread *thr;
	uint32_t nr_thr;
	int rows_off;		/* over SMP_ROW_BUDGET: no per-thread rows */
	uint64_t *row;		/* [nr] scratch */
} smp = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER };

/* Wakes the controller wherever it waits (smp.lock held). */
static void poke(void)
{
	pthread_cond_broadcast(&smp.wake);
	__atomic_add_fetch(&mon_smp_word, 2, __ATOMIC_SEQ_CST);
	mon_smp_word_wake();
}
/* The controller's mon_self: in the runtime for ever, never registered. */
static struct mon_thread ctl_self = { .id = UINT32_MAX - 2, .in_rt = 1 };

int mon_sampled_on(void)
{
	return __atomic_load_n(&mon_hot.sampling, __ATOMIC_ACQUIRE);
}

static uint64_t rng_next(void)
{
	uint64_t x = smp.rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	smp.rng = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static uint64_t calls_of(uint32_t id)
{
	const struct mon_tally *c = &mon_tally_tab[id];

	return __atomic_load_n(&c->sim, __ATOMIC_RELAXED) + mon_tally_sum(c);
}

/* Accesses simulated: counted by the hooks, less those the merger dropped. */
static uint64_t sim_of(uint32_t id)
{
	return __atomic_load_n(&mon_tally_tab[id].sim, __ATOMIC_RELAXED) -
	       __atomic_load_n(&mon_tally_tab[id].dropped, __ATOMIC_RELAXED);
}

/* ---- the set's state ---- */

static void thr_arrays_free(struct smp_thread *t)
{
	mon_free(t->s0);
	mon_free(t->bx);
	mon_free(t->r);
	mon_free(t->rp);
	mon_free(t->est);
	t->s0 = NULL;
	t->bx = t->r = t->rp = t->est = NULL;
	t->ap = 0;
}

/* The set's per-counter vectors of doubles, made and freed together. */
#define SET_VECS 20
static double **set_vec(size_t i)
{
	double **v[SET_VECS] = { &smp.x_all, &smp.r, &smp.rp, &smp.d2, &smp.est,
				 &smp.var, &smp.vrep, &smp.ci, &smp.ci_delta, &smp.apj,
				 &smp.dn, &smp.known, &smp.carry, &smp.cont,
				 &smp.cout, &smp.wx, &smp.west, &smp.wvar,
				 &smp.pe, &smp.pv };

	return v[i];
}

static void set_free(void)
{
	for (size_t i = 0; i < SET_VECS; i++) {
		double **d = set_vec(i);

		mon_free(*d);
		*d = NULL;
	}
	mon_free(smp.s0tot);
	mon_free(smp.tmp);
	mon_free(smp.row);
	mon_free(smp.keys);
	smp.s0tot = smp.tmp = smp.row = smp.keys = NULL;
	for (uint32_t i = 0; i < smp.nr_thr; i++)
		thr_arrays_free(&smp.thr[i]);
	smp.gen = smp.s0_gen = 0;
	smp.nr = 0;
}

/* A thread's marks start at c: what it did before is not this set's. */
static void thr_start(struct smp_thread *t, uint64_t c)
{
	t->base = t->mark = t->rmark = t->s0c = c;
	t->s0_burst = 0;
	t->sent_exited = 0;
}

/* The thread ids with a tally slot. */
static uint32_t tally_nr(void)
{
	uint32_t nr = mon_tally_tab ? mon_thread_nr() : 0;

	return nr > MON_TALLY_MAX ? MON_TALLY_MAX : nr;
}

/* Grows smp.thr to cover every registered thread; new ones start with
 * their accesses so far (what they did before the arm is not this set's;
 * one born since counts from 0). 0 or AMEBA_ENOMEM. */
static int thr_cover(void)
{
	uint32_t nr = tally_nr();
	struct smp_thread *t;

	if (nr <= smp.nr_thr)
		return 0;
	t = mon_realloc(smp.thr, nr * sizeof(*t));
	if (!t)
		return AMEBA_ENOMEM;
	memset(t + smp.nr_thr, 0, (nr - smp.nr_thr) * sizeof(*t));
	for (uint32_t i = smp.nr_thr; i < nr; i++)
		thr_start(&t[i], smp.gen ? 0 : calls_of(i));
	smp.thr = t;
	smp.nr_thr = nr;
	return 0;
}

static void info_of(struct mon_sampled_info *info)
{
	info->bursts = smp.bursts_total;
	info->bursts_empty = smp.bursts_empty;
	info->bursts_read = smp.bursts_read;
	info->accesses = (uint64_t)smp.calls_all;
	info->fraction = smp.calls_all > 0 ? smp.sim_all / smp.calls_all : 0;
	info->stretch = smp.cost.stretch;
	info->time_share = (double)smp.sim_ns / (double)(mon_mono_ns() - smp.start_ns + 1);
	info->precision = smp.cost.prec;
}

static void armed_locked(uint64_t gen, uint32_t nr, const uint64_t *keys);

/* A row callback's thread (mon_cond_row_fn; before and arg unused), or
 * NULL when its rows are not kept. */
static struct smp_thread *row_thread(uint32_t id, const uint64_t *before, void *arg)
{
	(void)before;
	(void)arg;
	return id < smp.nr_thr && !smp.rows_off ? &smp.thr[id] : NULL;
}

void mon_sampled_armed(uint64_t gen, uint32_t nr, const uint64_t *keys)
{
	if (!mon_sampled_on())
		return;
	pthread_mutex_lock(&smp.lock);
	armed_locked(gen, nr, keys);
	pthread_mutex_unlock(&smp.lock);
}

/* A row of the exact counts a set had when sampled mode started. */
static void row_seed(uint32_t id, const uint64_t *vals, const uint64_t *before, uint32_t nr, void *arg)
{
	struct smp_thread *t = row_thread(id, before, arg);

	if (!t || (!t->est && !(t->est = mon_calloc(nr, sizeof(double)))))
		return;
	for (uint32_t i = 0; i < nr; i++)
		t->est[i] = (double)vals[i];
}

/* Sampled mode starts while the set gen is armed: its estimates start from
 * the exact counts so far (intervals 0: they are exact). */
static void adopt_locked(uint64_t gen, uint32_t nr)
{
	armed_locked(gen, nr, NULL);
	if (smp.gen != gen || mon_cond_read(gen, smp.tmp, NULL, nr, row_seed, NULL))
		return;
	for (uint32_t i = 0; i < nr; i++)
		smp.est[i] = (double)smp.tmp[i];
}

/*
 * The last set's counters that go on in the new one (the same key, a swap
 * having read the last set): each takes the old counter's ratios and the
 * accesses that waited, so that its gap across the swap is pooled with the
 * new set's first burst like any other gap. An agent that re-arms every
 * interval (the objects strategy's turns) would otherwise have every set's
 * tail estimated by its last burst alone: a phase beginning after it was
 * given the old phase's behaviour.
 */
struct smp_carry {
	uint32_t nr;
	uint64_t *keys;
	double *cont, *cout, *r, *rp, *d2, *apj, *known, *dn;
};

static void carry_take(struct smp_carry *c)
{
	*c = (struct smp_carry){ .nr = smp.nr, .keys = smp.keys, .cont = smp.cont,
				 .cout = smp.cout, .r = smp.r, .rp = smp.rp, .d2 = smp.d2,
				 .apj = smp.apj, .known = smp.known, .dn = smp.dn };
	if (!smp.gen || !smp.keys) {
		c->nr = 0;
		return;
	}
	smp.keys = NULL;
	smp.cont = smp.cout = smp.r = smp.rp = smp.d2 = smp.apj = smp.known = smp.dn = NULL;
}

static void carry_free(struct smp_carry *c)
{
	if (!c->nr)
		return;
	mon_free(c->keys);
	mon_free(c->cont);
	mon_free(c->cout);
	mon_free(c->r);
	mon_free(c->rp);
	mon_free(c->d2);
	mon_free(c->apj);
	mon_free(c->known);
	mon_free(c->dn);
}

/* The new set's counters that go on from c; how many. */
static uint32_t carry_give(const struct smp_carry *c, const uint64_t *keys, uint32_t nr)
{
	uint32_t cap, got = 0, *tab;

	if (!c->nr || !keys || !(tab = smp_ktab_make(c->keys, c->nr, c->cont, &cap)))
		return 0;
	for (uint32_t j = 0; j < nr; j++) {
		uint32_t i = smp_ktab_find(tab, cap, c->keys, keys[j]);

		if (!i--)
			continue;
		smp.carry[j] = c->cout[i];
		if (!c->known[i])
			continue;	/* no ratio yet: its accesses wait here */
		smp.r[j] = c->r[i];
		smp.rp[j] = c->rp[i];
		smp.d2[j] = c->d2[i];
		smp.apj[j] = c->apj[i];
		smp.dn[j] = c->dn[i];
		smp.known[j] = 1;
		got++;
	}
	mon_free(tab);
	return got;
}

static void armed_locked(uint64_t gen, uint32_t nr, const uint64_t *keys)
{
	struct smp_carry carry;
	uint32_t carried = 0, nr_old = smp.nr_thr;
	/* a swap: the old set's last reading took each thread's accesses
	 * until then, and the new set takes the rest (the MRI server reads
	 * the old set, then builds and arms the new one: on a busy host the
	 * accesses in between were nobody's, 1% of a test's over 20 swaps) */
	int go_on = smp.gen && smp.closing;
	int ok = 1;

	mon_free(smp.prev_ci);
	smp.prev_ci = NULL;
	smp.prev_gen = 0;
	if (smp.gen && (smp.prev_ci = mon_calloc(2 * (size_t)smp.nr, sizeof(double)))) {
		smp.prev_gen = smp.gen;
		smp.prev_nr = smp.nr;
		info_of(&smp.prev_info);
		memcpy(smp.prev_ci, smp.ci, smp.nr * sizeof(double));
		memcpy(smp.prev_ci + smp.nr, smp.ci_delta, smp.nr * sizeof(double));
	}
	carry_take(&carry);
	set_free();
	if (nr) {
		for (size_t i = 0; i < SET_VECS; i++)
			ok &= (*set_vec(i) = mon_calloc(nr, sizeof(double))) != NULL;
		if (keys && (smp.keys = mon_calloc(nr, sizeof(uint64_t))))
			memcpy(smp.keys, keys, nr * sizeof(uint64_t));
		ok &= (smp.s0tot = mon_calloc(nr, sizeof(uint64_t))) != NULL;
		ok &= (smp.tmp = mon_calloc(nr, sizeof(uint64_t))) != NULL;
		ok &= (smp.row = mon_calloc(nr, sizeof(uint64_t))) != NULL;
		ok &= thr_cover() == 0;
	}
	if (ok && nr) {
		smp.gen = gen;
		smp.nr = nr;
		smp.nall = 0;
		smp.a_all = smp.held = smp.extrap = smp.wa = 0;
		smp.closing = 0;
		smp.bursts_read = smp.bursts_win = 0;
		carried = carry_give(&carry, keys, nr);
		/* a new experiment starts with a burst (its accesses until the
		 * first burst have no ratio to be estimated by), unless each of
		 * its counters goes on from the last set or a swap just had one */
		if (carried < nr && !smp.swapped) {
			smp.kick = 1;
			poke();
		}
		for (uint32_t i = 0; i < smp.nr_thr; i++) {
			struct smp_thread *t = &smp.thr[i];

			if (!go_on) {
				thr_start(t, calls_of(i));
			} else if (i >= nr_old) {
				thr_start(t, 0);	/* born since: all of it */
			} else {
				t->rmark = t->s0c = t->mark;
				t->s0_burst = 0;
				t->sent_exited = 0;
			}
		}
		smp.rows_off = (uint64_t)nr * 5 * (smp.nr_thr + 1) > SMP_ROW_BUDGET;
	} else {
		if (nr)
			mon_log("sampled mode: no memory for the estimates of %u counters; their "
				"readings are the raw counts", nr);
		set_free();
	}
	carry_free(&carry);
	smp.swapped = 0;
}

/* ---- snapshots (smp.lock held) ---- */

/* The hooks stop delivering; what the burst or warm-up logged is merged. */
static void hold(void)
{
	__atomic_store_n(&mon_hot.tally, 1, __ATOMIC_SEQ_CST);
	mon_seq_pause(1);
	mon_seq_sync();
}

static void release(void)
{
	mon_seq_pause(0);
	__atomic_store_n(&mon_hot.tally, 0, __ATOMIC_SEQ_CST);
}

static double *thr_vec(double **v)
{
	if (!*v)
		*v = mon_calloc(smp.nr, sizeof(double));
	return *v;
}

static void row_s0(uint32_t id, const uint64_t *vals, const uint64_t *before, uint32_t nr, void *arg)
{
	struct smp_thread *t = row_thread(id, before, arg);

	if (!t || (!t->s0 && !(t->s0 = mon_calloc(nr, sizeof(uint64_t)))))
		return;
	memcpy(t->s0, vals, nr * sizeof(uint64_t));
	t->s0_burst = smp.burst_id;
}

static void burst_begin(void)
{
	hold();
	if (smp.cfg.slow_begin_us)
		usleep(smp.cfg.slow_begin_us);
	smp.burst_id++;
	smp.s0_gen = 0;
	if (smp.gen && !thr_cover() &&
	    !mon_cond_read(smp.gen, smp.s0tot, NULL, smp.nr, row_s0, NULL)) {
		smp.s0_gen = smp.gen;
		for (uint32_t i = 0; i < smp.nr_thr; i++) {
			smp.thr[i].s0_sim = sim_of(i);
			smp.thr[i].s0c = calls_of(i);
		}
	}
	smp.phase = PH_MEASURE;
	pthread_cond_broadcast(&smp.wake);	/* a swap may wait for it */
	release();
}

static void row_s1(uint32_t id, const uint64_t *vals, const uint64_t *before, uint32_t nr, void *arg)
{
	struct smp_thread *t = row_thread(id, before, arg);

	if (!t || !(t->bx || (t->bx = mon_calloc(nr, sizeof(double)))))
		return;
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t s0 = t->s0_burst == smp.burst_id && t->s0 ? t->s0[i] : 0;

		t->bx[i] = vals[i] >= s0 ? (double)(vals[i] - s0) : 0;
	}
}

/* Every thread's accesses (both tally slots), summed. */
static double calls_sum(void)
{
	double c = 0;

	for (uint32_t i = 0; i < smp.nr_thr; i++)
		c += (double)calls_of(i);
	return c;
}

/* A burst ended: each thread's row, what it did since its row's mark
 * estimated by the pooled ratio of its last burst and this one (one the
 * thread did not take part in: by the last pooled ratio); a thread no
 * burst has seen yet waits. */
static void rows_close(void)
{
	for (uint32_t id = 0; id < smp.nr_thr && !smp.rows_off; id++) {
		struct smp_thread *t = &smp.thr[id];
		uint64_t s1c = t->s1c;
		double a = t->a, b = s1c > t->s0c ? (double)(s1c - t->s0c) : 0;
		double n = (t->s0c > t->rmark ? (double)(t->s0c - t->rmark) : 0) + b - a;

		if (smp_too_few(a, b) || (a <= 0 && !t->ap) || !thr_vec(&t->r) || !thr_vec(&t->rp) ||
		    !thr_vec(&t->est))
			continue;
		for (uint32_t i = 0; i < smp.nr; i++)
			t->est[i] += a > 0 ? smp_pool(n, t->bx ? t->bx[i] : 0, a, t->ap, smp.phi, &t->r[i],
						  &t->rp[i])
					   : n * t->rp[i];
		if (a > 0)
			t->ap = a;
		t->rmark = s1c;
	}
}

/* The burst being measured counts for no set: its S0 was taken before
 * the set was armed (or for none, or an older one). */
static int burst_lost(void)
{
	return !smp.s0_gen || smp.s0_gen != smp.gen || thr_cover();
}

/* A burst ended less than a quarter period before now (ns). */
static int burst_recent(uint64_t now)
{
	return now < smp.last_end_ns + smp.cfg.period_us * 250ull;
}

/* The set's small bursts pooled hold enough accesses to be a ratio. */
static int small_ratio(void)
{
	return smp.wa >= SMP_MIN_BURST;
}

static void burst_end(void)
{
	double a = 0, n = 0, b = 0;
	uint32_t nr_s0 = smp.nr_thr;

	hold();
	if (smp.phase != PH_MEASURE)
		return;		/* ended already (a swap took it) */
	smp.phase = PH_TALLY;
	smp.bursts_ended++;
	pthread_cond_broadcast(&smp.wake);	/* a swap may wait for it */
	if (burst_lost())
		return;		/* the set changed meanwhile (not a recent burst) */
	smp.last_end_ns = mon_mono_ns();
	for (uint32_t i = 0; i < smp.nr_thr; i++)
		if (smp.thr[i].bx)	/* a thread with no row at S1 counted nothing */
			memset(smp.thr[i].bx, 0, smp.nr * sizeof(double));
	if (mon_cond_read(smp.gen, smp.tmp, NULL, smp.nr, row_s1, NULL))
		return;
	for (uint32_t i = 0; i < smp.nr_thr; i++) {
		struct smp_thread *t = &smp.thr[i];
		uint64_t now = sim_of(i), was = i < nr_s0 ? t->s0_sim : 0;
		uint64_t s1c = t->s1c = calls_of(i);

		if (i >= nr_s0)
			t->s0c = t->mark;	/* born in the burst: all of it there */
		t->a = now >= was ? (double)(now - was) : 0;
		a += t->a;
		b += s1c > t->s0c ? (double)(s1c - t->s0c) : 0;
		n += t->s0c > t->mark ? (double)(t->s0c - t->mark) : 0;
	}
	if (smp_too_few(a, b) || smp.bursts_ended <= smp.cfg.empty_bursts) {
		smp.sim_all += a;
		smp.s0_gen = 0;
		smp.bursts_empty++;
		return;		/* no burst: all of it waits for the next */
	}
	{
		double s0 = 0;

		for (uint32_t i = 0; i < smp.nr_thr; i++)
			s0 += (double)smp.thr[i].s0c;
		smp.phi = smp_gap_phi(smp.snap, smp.snap_ns, smp.nsnap, s0);
	}
	/* to estimate: the gap and what the cut dropped */
	n += b - (a > 0 ? a : 0);
	smp.extrap += n;
	if (a <= 0 && !smp.nall) {
		smp.held += n;	/* nothing simulated, no ratio yet: all waits */
	} else {
		for (uint32_t i = 0; i < smp.nr; i++) {
			double x = smp.tmp[i] >= smp.s0tot[i] ? (double)(smp.tmp[i] - smp.s0tot[i]) : 0;
			double nn = n + smp.carry[i] + smp.held, r0 = smp.r[i], d2;

			smp.carry[i] = 0;
			if (a <= 0 && !smp.known[i] && small_ratio()) {
				/* asleep, only small bursts so far: what they give
				 * (a few accesses are no ratio: a 1-access burst
				 * of threads starved by a busy host gave a churning
				 * program's A 0 for 2.8M accesses, -40%) */
				smp.est[i] += nn * smp.wx[i] / smp.wa;
				smp.var[i] += nn * nn * smp.wx[i] / (smp.wa * smp.wa);
			} else if (a <= 0 && !smp.known[i]) {
				smp.carry[i] = nn;	/* no ratio yet: it waits */
			} else if (a <= 0) {
				/* nothing simulated (the threads asleep): by the
				 * last pooled ratio */
				smp.est[i] += nn * smp.rp[i];
				smp.var[i] += nn * nn * smp.d2[i] / 4;
			} else if (!smp.known[i] && smp.wa + a < SMP_FULL_BURST) {
				/* its first bursts, small ones (threads starting,
				 * a program mostly asleep): their counts are
				 * measured, the rest waits for a ratio worth the
				 * gap (these small ones pooled, or a full one) */
				smp.est[i] += x;
				smp.wx[i] += x;
				smp.carry[i] = nn;
			} else if (!smp.known[i]) {
				/* its first ratio: this burst, and the small ones
				 * before it pooled with it */
				double rw = smp.wa > 0 ? smp.wx[i] / smp.wa : 0;

				smp.est[i] += smp_pool(nn, x, a, smp.wa, smp.phi, &rw, &smp.rp[i]);
				smp.r[i] = rw;
			} else {
				smp.est[i] += smp_pool(nn, x, a, smp.apj[i], smp.phi, &smp.r[i], &smp.rp[i]);
				d2 = (smp.r[i] - r0) * (smp.r[i] - r0);
				smp.var[i] += nn * nn * d2 * smp_gap_weight(smp.apj[i], a);
				smp.d2[i] = d2;
				smp.dn[i]++;
			}
		}
		for (uint32_t i = 0; a > 0 && i < smp.nr; i++) {
			smp.x_all[i] += smp.tmp[i] >= smp.s0tot[i] ? (double)(smp.tmp[i] - smp.s0tot[i]) : 0;
			if (smp.known[i] || smp.wa + a >= SMP_FULL_BURST) {
				smp.apj[i] = a;
				smp.known[i] = 1;
			}
		}
		if (a > 0 && smp.wa + a < SMP_FULL_BURST) {
			/* the small bursts' ratio, pooled: wx / wa */
			smp.wa += a;
		} else if (a > 0) {
			smp.wa = 0;
		}
		smp.held = 0;
	}
	rows_close();
	smp.snap[0] = 0;
	smp.snap_ns[0] = mon_mono_ns();
	for (uint32_t i = 0; i < smp.nr_thr; i++) {
		smp.thr[i].mark = smp.thr[i].s1c;
		smp.snap[0] += (double)smp.thr[i].s1c;
	}
	smp.nsnap = 1;
	smp.s0_gen = 0;
	if (a <= 0) {
		smp.bursts_empty++;	/* nothing simulated (the threads asleep) */
		return;
	}
	smp.a_all += a;
	smp.sim_all += a;
	smp.bursts_total++;
	smp.bursts_win++;
	smp.nall++;
}

/* ---- reading ---- */

static void burst_first(int force);
static void burst_reading(void);

int mon_sampled_read(uint64_t gen, uint64_t *total, uint64_t *before, uint32_t nr,
		     mon_cond_row_fn per_thread, void *arg)
{
	double n_all = 0, f = 0;

	pthread_mutex_lock(&smp.lock);
	if (!smp.gen || gen != smp.gen || nr != smp.nr || thr_cover()) {
		pthread_mutex_unlock(&smp.lock);
		return mon_cond_read(gen, total, before, nr, per_thread, arg);
	}
	/* a reading has a burst measured first when the last ended over a
	 * quarter period ago, so that it lags by little: a counter that a
	 * swap then ends had the gap its last reading left waiting given to
	 * the swap's reading, which the agent keeps only for the counters the
	 * next experiment has too (the objects strategy's units lost up to a
	 * gap of each turn) */
	if (!smp.closing)
		burst_reading();
	for (uint32_t i = 0; i < smp.nr_thr; i++) {
		struct smp_thread *t = &smp.thr[i];
		uint64_t c = calls_of(i);

		n_all += c >= t->base ? (double)(c - t->base) : 0;
		t->base = c;
		/* no burst will follow: what waits is estimated by the last */
		if (smp.closing && c > t->mark) {
			f += (double)(c - t->mark);
			t->mark = c;
		}
	}
	smp.calls_all += n_all;
	smp.bursts_read = smp.bursts_win;
	smp.bursts_win = 0;
	smp.extrap += f;
	for (uint32_t i = 0; i < nr; i++) {
		double v, nn;

		if (smp.closing) {
			nn = f + smp.carry[i] + smp.held;
			if (smp.cont[i]) {
				smp.cout[i] += nn;	/* the next set's counter goes on */
				if (!smp.known[i] && small_ratio()) {
					/* with what its small bursts give */
					smp.r[i] = smp.rp[i] = smp.wx[i] / smp.wa;
					smp.apj[i] = smp.wa;
					smp.known[i] = 1;
				}
			} else if (smp.known[i]) {
				smp.est[i] += nn * smp.rp[i];
				smp.var[i] += nn * nn * smp.d2[i] / 2;	/* one side only */
			} else if (smp.wa > 0) {
				/* only small bursts: what they give (their counts
				 * as a Poisson count, for the interval) */
				smp.est[i] += nn * smp.wx[i] / smp.wa;
				smp.var[i] += nn * nn * smp.wx[i] / (smp.wa * smp.wa);
			}
			smp.carry[i] = 0;
		}
		/* the bursts' counts as a Poisson count, scaled to what they
		 * stand for: the variance with one burst, and the least one
		 * after (a loop whose bursts all see the same ratio has d = 0,
		 * yet its estimate is off by what the warm-up and the bursts'
		 * places leave: gemm's main array 0.01% with an interval of
		 * +-0.006%, 25 of the 73 intervals of bench/sampled_accuracy
		 * missed their exact share, most by under 0.2 points) */
		double pv = smp.a_all > 0 ? smp.x_all[i] * (smp.extrap / smp.a_all) *
						(smp.extrap / smp.a_all) : -1;

		if (!smp.known[i])	/* no ratio yet: what it counted so far
					 * was measured (a small burst's counts, or
					 * exact ones before sampled mode began), the
					 * rest waits (-1 there made jacobi's array,
					 * 3,712 at the first reading, an object with
					 * no interval for the whole run) */
			v = smp.var[i];
		else if (!smp.dn[i])	/* one burst */
			v = pv >= 0 ? pv : smp.var[i];	/* a set with no burst of its own: carried on */
		else
			v = smp.var[i] > pv ? smp.var[i] : pv;
		smp.ci[i] = v >= 0 ? 1.96 * sqrt(v) : -1;
		smp.ci_delta[i] = v >= 0 ? 1.96 * sqrt(v > smp.vrep[i] ? v - smp.vrep[i] : 0) : -1;
		if (v >= 0)
			smp.vrep[i] = v;
		total[i] = (uint64_t)llround(smp.est[i]);
		if (before)
			before[i] = 0;
	}
	/* rows: each thread by its own ratio */
	for (uint32_t id = 0; id < smp.nr_thr && !smp.rows_off; id++) {
		struct smp_thread *t = &smp.thr[id];
		struct mon_thread *mt = mon_thread_get(id);
		uint64_t c = calls_of(id);
		int any = 0;

		if (smp.closing && t->ap && t->est && t->rp && c > t->rmark) {
			for (uint32_t i = 0; i < nr; i++)
				t->est[i] += (double)(c - t->rmark) * t->rp[i];
			t->rmark = c;
		}
		if (!t->est || !per_thread || t->sent_exited)
			continue;
		for (uint32_t i = 0; i < nr; i++) {
			smp.row[i] = (uint64_t)llround(t->est[i]);
			any |= smp.row[i] != 0;
		}
		if (any)
			per_thread(id, smp.row, NULL, nr, arg);
		if (mt && __atomic_load_n(&mt->exited, __ATOMIC_ACQUIRE))
			t->sent_exited = 1;
	}
	if (smp.closing)
		smp.held = 0;
	pthread_mutex_unlock(&smp.lock);
	return 0;
}

/*
 * A reading of the armed set, and a swap, have a burst measured first
 * when the last ended more than a quarter period ago (burst_first), and
 * wait for it; a swap also ends a burst being measured (it counts for the
 * old set) (warm-up and burst: 6 ms by default; a burst of
 * more than 10 ms is cut there). So the
 * old set's last reading estimates little by its last burst alone: the
 * provider keeps a replaced experiment's last reading only for the
 * counters the new one has too, and a counter that does not go on (the
 * objects strategy's cold group, a unit whose turn ends) lost the whole
 * tail since its last burst - in a three-phase program once, most of a
 * phase. While a counter that ends has no ratio, the swap measures more
 * (swap_unknown, SMP_SWAP_WAIT_US at most). When a usable burst just
 * ended the new set waits for the next one (no kick).
 */
static struct timespec deadline(struct timespec now, uint64_t us)
{
	now.tv_sec += (time_t)(us / 1000000);
	now.tv_nsec += (long)(us % 1000000) * 1000;
	if (now.tv_nsec >= 1000000000) {
		now.tv_sec++;
		now.tv_nsec -= 1000000000;
	}
	return now;
}

#define SMP_SWAP_BURST_US 10000	/* a swap's burst lasts this at most */

/* The next burst's length in us: the configured one, or a swap's longer. */
static uint64_t burst_len(void)
{
	return smp.swap_burst_us > smp.cfg.burst_us ? smp.swap_burst_us : smp.cfg.burst_us;
}

static void burst_first(int force)
{
	struct timespec now, until;
	uint64_t want, b = burst_len();

	if (!smp.running || smp.stop || !smp.gen || (!force && burst_recent(mon_mono_ns())))
		return;
	if (smp.phase == PH_MEASURE && burst_lost())
		/* a burst begun before the set was armed counts for none: cut
		 * it, and wait for one of the set's (its end once satisfied
		 * the wait below: an attach's first reading was empty);
		 * burst_end wakes the controller */
		burst_end();
	want = smp.bursts_ended + 1;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (smp.phase == PH_TALLY) {
		smp.kick = 1;	/* (in a warm-up the burst comes anyway) */
		poke();
	}
	/* the warm-up, then the burst: SMP_SWAP_BURST_US of it at most (the
	 * agent waits; a cycle of 60 s bursts would hold it for a minute) */
	until = deadline(now, smp.cfg.warm_us + 100000);
	while (smp.phase != PH_MEASURE && smp.bursts_ended < want && !smp.stop)
		if (pthread_cond_timedwait(&smp.wake, &smp.lock, &until) == ETIMEDOUT)
			break;
	/* the time is up, but the wait returns only once it has the lock,
	 * which the controller holds through burst_begin's drain of the
	 * warm-up (hold: 100-180 ms a burst for four threads on a throttled
	 * host) - by then the burst has often begun: it is waited for */
	if (smp.phase != PH_MEASURE && smp.bursts_ended < want)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	until = deadline(now, b <= SMP_SWAP_BURST_US ? b + 50000 : SMP_SWAP_BURST_US);
	while (smp.bursts_ended < want && !smp.stop)
		if (pthread_cond_timedwait(&smp.wake, &smp.lock, &until) == ETIMEDOUT)
			break;
	if (smp.phase == PH_MEASURE && smp.bursts_ended < want) {
		burst_end();	/* cut short: it counts */
		pthread_cond_broadcast(&smp.wake);	/* the controller goes on */
	}
}

/*
 * A reading's burst (burst_first), and one more, twice as long, when it
 * came back empty and the set has none: in ordered mode a merger that
 * waits for a thread the host has not scheduled simulates nothing, and the
 * burst's end drops what was logged (too_few). With wl_false_sharing's
 * four threads at 0.7 CPU a third of the bursts did so, and an attach's
 * last experiment, whose only reading's burst was one, read nothing and
 * its report lacked the FalseSharing finding (1 run in 35).
 */
static void burst_reading(void)
{
	uint32_t empty = smp.bursts_empty;
	uint64_t b;

	burst_first(0);
	if (smp.nall || smp.bursts_empty == empty || smp.stop)
		return;
	b = 2 * burst_len();
	smp.swap_burst_us = b < SMP_SWAP_BURST_US ? b : SMP_SWAP_BURST_US;
	burst_first(1);
	smp.swap_burst_us = 0;
}

/* A counter of the set that ends with accesses waiting and no ratio to
 * estimate them by: it does not go on, and neither a burst nor its small
 * ones pooled gave it one. */
static int swap_unknown(void)
{
	int waits = smp.held > 0;

	for (uint32_t i = 0; i < smp.nr_thr && !waits; i++)
		waits = calls_of(i) > smp.thr[i].mark;
	for (uint32_t i = 0; i < smp.nr; i++)
		if (!smp.cont[i] && !smp.known[i] && !small_ratio() &&
		    (waits || smp.carry[i] > 0))
			return 1;
	return 0;
}

#define SMP_SWAP_WAIT_US 100000	/* a swap waits this at most for a ratio */

void mon_sampled_swap(const uint64_t *keys, uint32_t nr)
{
	if (!mon_sampled_on())
		return;
	uint32_t had;
	uint64_t t0;

	pthread_mutex_lock(&smp.lock);
	t0 = mon_mono_ns();
	had = smp.nall;
	/* its counters that the next set has (the same key) leave what waits
	 * to it (carry_give) */
	for (uint32_t i = 0; i < smp.nr; i++)
		smp.cont[i] = 0;
	if (smp.gen && smp.keys && keys && nr) {
		uint32_t cap, *tab = smp_ktab_make(keys, nr, NULL, &cap);

		for (uint32_t i = 0; tab && i < smp.nr; i++)
			smp.cont[i] = smp_ktab_find(tab, cap, keys, smp.keys[i]) != 0;
		mon_free(tab);
	}
	if (smp.phase == PH_MEASURE) {
		burst_end();	/* the old set's: counted, not lost */
		pthread_cond_broadcast(&smp.wake);	/* the controller goes on */
	} else {
		burst_first(0);
	}
	/* a counter that ends with no ratio would lose what waits: bursts
	 * until it has one, for SMP_SWAP_WAIT_US at most, each twice as long
	 * as the last up to SMP_SWAP_BURST_US. On a busy host a 400 us burst
	 * often simulates nothing: in ordered mode one thread's log fills and
	 * it waits for room while the merger waits for the other, which the
	 * host has not scheduled, and the burst ends before it is (the cut
	 * drops the rest). With bursts of the configured length alone, 5 of
	 * 22 runs of test_sampled beside the suite's ctest -j2 had a swap end
	 * with none usable in 100 ms (25 in a row simulating ~35 accesses
	 * each), losing that set's C_ALL; a few ms outlast the host's time
	 * slice (none of 24; docs/simulator.md, Sampled simulation). */
	while (smp.gen && !smp.stop && swap_unknown() &&
	       mon_mono_ns() - t0 <= SMP_SWAP_WAIT_US * 1000ull) {
		burst_first(1);
		uint64_t next = 2 * burst_len();

		smp.swap_burst_us = next < SMP_SWAP_BURST_US ? next : SMP_SWAP_BURST_US;
	}
	smp.swap_burst_us = 0;
	/* with a usable burst just now (the swap's, or the reading's before
	 * it), the new set waits for the next one; else it begins with one (a
	 * cycle of long bursts cut by swaps) */
	smp.swapped = smp.nall > had || (smp.nall && burst_recent(mon_mono_ns()));
	smp.closing = 1;	/* its last reading: no burst of it follows */
	pthread_mutex_unlock(&smp.lock);
}

int mon_sampled_ci(uint64_t gen, double *ci, double *ci_delta, uint32_t nr,
		   struct mon_sampled_info *info)
{
	int err = AMEBA_ENOENT;

	pthread_mutex_lock(&smp.lock);
	if (smp.gen && gen == smp.gen && nr == smp.nr) {
		if (ci)
			memcpy(ci, smp.ci, nr * sizeof(double));
		if (ci_delta)
			memcpy(ci_delta, smp.ci_delta, nr * sizeof(double));
		if (info)
			info_of(info);
		err = 0;
	} else if (smp.prev_gen && gen == smp.prev_gen && nr == smp.prev_nr) {
		if (ci)
			memcpy(ci, smp.prev_ci, nr * sizeof(double));
		if (ci_delta)
			memcpy(ci_delta, smp.prev_ci + nr, nr * sizeof(double));
		if (info)
			*info = smp.prev_info;
		err = 0;
	}
	pthread_mutex_unlock(&smp.lock);
	return err;
}

int mon_sampled_measured(uint64_t gen, double *x, uint32_t nr, double *accesses)
{
	int err = AMEBA_ENOENT;

	pthread_mutex_lock(&smp.lock);
	if (smp.gen && gen == smp.gen && nr == smp.nr) {
		memcpy(x, smp.x_all, nr * sizeof(double));
		*accesses = smp.a_all;
		err = 0;
	}
	pthread_mutex_unlock(&smp.lock);
	return err;
}

/* ---- the controller ---- */

/*
 * The program's rate of accesses stepped in the gap's last step: by a
 * factor of SMP_STEP_X against the mean of the steps before it (the
 * first, after the burst, left out: the threads resume from the cut), with
 * SMP_STEP_MIN accesses in the larger. A phase shorter than a gap fell
 * between two bursts and was estimated by its neighbours' ratios (a
 * three-phase program's random phase, a tenth of a second, got 0.4% of
 * the misses in one run of four, 19% exact); a burst at its start gives
 * it one of its own. A contended CPU makes the rate wander too: a false
 * step costs an extra burst, not an error.
 */
#define SMP_STEP_X 3.0
#define SMP_STEP_MIN 4096.0
static int rate_step(void)
{
	uint32_t m = smp.nsnap - 1;	/* steps */
	double mean = 0, last;

	if (m < 4)
		return 0;
	for (uint32_t k = 1; k < m - 1; k++)
		mean += smp.snap[k + 1] - smp.snap[k];
	mean /= m - 2;
	last = smp.snap[m] - smp.snap[m - 1];
	if ((last > mean ? last : mean) < SMP_STEP_MIN)
		return 0;
	return last > SMP_STEP_X * mean || mean > SMP_STEP_X * last;
}

/* A warm-up or burst: waits us microseconds, or until stopped or the
 * phase is no longer what it was (a swap ended the burst): 1 when stopped.
 * smp.lock held. (The gap waits in gap_wait.) */
static int wait_us(uint64_t us)
{
	int phase = smp.phase;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts = deadline(ts, us);
	while (!smp.stop && smp.phase == phase)
		if (pthread_cond_timedwait(&smp.wake, &smp.lock, &ts) == ETIMEDOUT)
			break;
	return smp.stop;
}

/* A step of the gap: us microseconds, or until stopped, kicked or a
 * thread's due (*due set). 1 when stopped. smp.lock held. */
static int gap_wait(uint64_t us, int *due)
{
	int r = mon_tally_wait(us, &smp.lock, &smp.stop, &smp.kick);

	*due |= r == 2;
	return r == 1;
}

/* The next gap, g drawn, stretched (sampled_cost.c). */
static uint64_t gap_stretch(uint64_t g)
{
	const struct smp_cost_set set = { .gen = smp.gen, .nr = smp.nr, .est = smp.est,
					  .var = smp.var, .west = smp.west, .wvar = smp.wvar,
					  .pe = smp.pe, .pv = smp.pv };

	return (uint64_t)((double)g * smp_cost_stretch(&smp.cost, smp.calls_all,
						       smp.sim_all + smp.floor_all, smp.sim_ns,
						       mon_mono_ns(), smp.cfg.time_max, &set));
}

/* Every thread's accesses simulated (sim_of), summed. */
static double sim_sum(void)
{
	double n = 0;

	for (uint32_t i = 0, nr = tally_nr(); i < nr; i++)
		n += (double)sim_of(i);
	return n;
}

/*
 * The warm-up's floor in accesses (docs/simulator.md, "Warm-up in
 * accesses"): a warm-up measured in time simulates few accesses where the
 * simulation is slow, and an L2 line re-read every 100,000 accesses
 * (gemm_blocked's A: a tile re-read once per column block) stays cold in
 * it and misses in the burst. So after its time the warm-up goes on, for
 * half a burst at most (the caller takes it out of the burst: the cycle
 * costs what it did; a thread that blocks does not hold the burst back),
 * while a thread is behind:
 *   - it simulated fewer than smp.warm_min accesses since the warm-up
 *     began, and some, or none but it tallied in the gap (off the CPU
 *     through a short warm-up on a loaded host: test_replay);
 *   - its replay is still under way (the newest addresses come last, and
 *     the warm-up's end cut them on a loaded host: test_replay).
 * Host order only (the caller): in the ordered mode two
 * threads' warm-ups share the merger, and fs_loop's ran to the limit every
 * cycle for a working set of a few lines. 1 when stopped.
 */
#define SMP_WARM_STEP_US 200
static int warm_floor(void)
{
	uint64_t end = mon_mono_ns() + smp.cfg.burst_us / 2 * 1000;
	double s0 = sim_sum();

	while ((smp.warm_min || smp.replay) && smp.phase == PH_WARM && mon_mono_ns() < end) {
		uint32_t nr = tally_nr(), behind = 0;

		for (uint32_t i = 0; i < nr && !behind; i++) {
			const struct mon_tally *c = &mon_tally_tab[i];
			uint64_t n = __atomic_load_n(&c->sim, __ATOMIC_RELAXED) - c->ws;

			/* one that tallied in the gap and has not simulated yet
			 * was off the CPU: waited for too */
			behind = n < smp.warm_min && (n || c->wc > c->gc);
			behind |= __atomic_load_n(&c->replay, __ATOMIC_ACQUIRE) == MON_REPLAY_BUSY;
		}
		if (!behind)
			break;
		if (wait_us(SMP_WARM_STEP_US < smp.cfg.burst_us / 4 ? SMP_WARM_STEP_US
								     : smp.cfg.burst_us / 4 + 1))
			return 1;
	}
	/* the burst would have simulated these: the stretch counts them, or
	 * it shortens the gaps of a program held under SMP_SIM_MAX
	 * (sampled_cost.c; the floor made graphwalk 20% dearer, measured) */
	smp.floor_all += sim_sum() - s0;
	return smp.stop;
}

static void *ctl_main(void *arg)
{
	(void)arg;
	mon_self = &ctl_self;
	pthread_mutex_lock(&smp.lock);
	for (;;) {
		uint64_t p = smp.cfg.period_us, w, t_floor, burst_us, t_sim, late;

		/* a burst at once: a short program gets one too; the gap in
		 * SMP_SNAPS steps, each ending with a snapshot (gap_phi) */
		if (smp.burst_id) {
			uint64_t g = gap_stretch(p / 2 + rng_next() % (p + 1));
			uint32_t steps = SMP_SNAPS;
			uint64_t span = smp.gap_ns && smp.end_ns > smp.gap_ns ? smp.end_ns - smp.gap_ns : 0;
			int stopped = 0, due = 0;

			if (mon_tally_dues_arm(smp.cfg.in_time ? 0 : tally_nr(), span, g))
				steps *= 2;
			smp.gap_ns = mon_mono_ns();

			for (uint32_t k = 0; k < steps && !smp.kick && !stopped && !due; k++) {
				stopped = gap_wait(g / SMP_SNAPS, &due);
				if (!stopped && !smp.kick && !thr_cover() && smp.nsnap &&
				    smp.nsnap <= steps) {
					/* (a due's: a short last step, for gap_phi) */
					smp.snap_ns[smp.nsnap] = mon_mono_ns();
					smp.snap[smp.nsnap++] = calls_sum();
					if (!due && rate_step())
						break;	/* a new phase: a burst in it now */
				}
			}
			if (stopped)
				break;
		}
		smp.kick = 0;
		/* the threads' rates for the next dues: their tallies over the
		 * gap, the replay after it left out (the replay does not tally:
		 * counted in, it made spmv's gaps 16% short) */
		mon_tally_gap_end(tally_nr());
		t_sim = smp.end_ns = mon_mono_ns();
		w = smp.cfg.warm_us;
		late = 0;
		if (smp.burst_id && smp.replay && !mon_seq_engaged()) {
			/* the replay (tally.c; host order only) is warm-up too,
			 * three quarters of it at most (a replay still under way
			 * goes on into the rest, and warm_floor waits for it out
			 * of the burst): the cycle costs what it did. Waited
			 * for up to 3 ms, spmv's random reads made it 8 ms. A
			 * thread preempted before it began is waited for up to
			 * half a burst more, out of the burst (on a loaded host
			 * it missed a 15 us window: test_replay's bursts cold) */
			uint64_t d = mon_tally_replay_ask(tally_nr(), &smp.lock, &smp.stop, w - w / 4,
							  w - w / 4 + smp.cfg.burst_us / 2);

			late = d > w - w / 4 ? d - (w - w / 4) : 0;
			w = d + w / 4 < w ? w - d : w / 4;
		}
		smp.phase = PH_WARM;
		mon_tally_warm_begin(tally_nr());
		release();
		if (wait_us(w))
			break;
		t_floor = mon_mono_ns();
		if (!mon_seq_engaged() && warm_floor())
			break;
		{
			/* what the floor and a late replay added comes out of
			 * the burst (half of it at most): the cycle costs what
			 * it did */
			uint64_t over = (mon_mono_ns() - t_floor) / 1000 + late, b = burst_len();

			burst_us = over < b / 2 ? b - over : b - b / 2;
		}
		if (smp.replay)
			mon_tally_replay_end(tally_nr());
		burst_begin();
		if (wait_us(burst_us))
			break;
		burst_end();
		smp.sim_ns += mon_mono_ns() - t_sim;
	}
	if (smp.phase == PH_MEASURE)
		burst_end();
	pthread_mutex_unlock(&smp.lock);
	return NULL;
}

int mon_sampled_start(const struct mon_sampled_cfg *cfg)
{
	int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	sigset_t all, old;
	int err;

	if (!cfg || cfg->period_us < 100 || cfg->burst_us < 10 || cfg->period_us > 3600000000u)
		return AMEBA_EINVAL;
	if (mon_sampled_on() || smp.running)
		return AMEBA_EBUSY;
	if (mon_oracle_wanted())
		return AMEBA_ENOTSUP;	/* the oracle's counts are exact */
	if (mon_tally_alloc())
		return AMEBA_ENOMEM;
	/* libc's pthread_create: ours would register an application thread */
	create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
		dlsym(RTLD_NEXT, "pthread_create");
	if (!create)
		return AMEBA_ENOENT;
	pthread_mutex_lock(&smp.lock);
	if (!smp.cond_ready) {
		/* the waits' deadlines are CLOCK_MONOTONIC's (wait_us) */
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_destroy(&smp.wake);
		pthread_cond_init(&smp.wake, &ca);
		pthread_condattr_destroy(&ca);
		smp.cond_ready = 1;
	}
	smp.cfg = *cfg;
	/* a quarter of a burst: fs_loop's 4 ms bursts, 2 threads, saw 59% of
	 * the exact run's false-sharing misses per access without the hold
	 * (a thread not yet scheduled let the other run alone), 87-98% with
	 * it; a longer one left bursts empty on a busy host (the other's ring
	 * fills, and the cut drops it) */
	mon_seq_resume_hold((uint64_t)cfg->burst_us * 250);
	smp.rng = cfg->seed ? cfg->seed : 0x9E3779B97F4A7C15ull;
	smp.stop = 0;
	smp.phase = PH_TALLY;
	smp.burst_id = 0;
	smp.bursts_ended = smp.last_end_ns = 0;
	smp.gap_ns = smp.end_ns = 0;	/* no rates yet: the first gap has no dues */
	smp.swapped = 0;
	smp.bursts_total = smp.bursts_empty = 0;
	smp.sim_all = smp.calls_all = smp.floor_all = 0;
	smp.sim_ns = 0;
	smp.start_ns = mon_mono_ns();
	smp_cost_start(&smp.cost, smp.start_ns);
	{
		const char *e = getenv("AMEBA_SAMPLED_REPLAY");
		char *end;

		smp.replay = !(e && !strcmp(e, "0"));
		/* 4 times the L2's lines (the design preset's 2 MiB: 131,072) */
		smp.warm_min = 4 * mon_backend_sim_l2_lines();
		e = getenv("AMEBA_SAMPLED_WARM_MIN");
		if (e && *e) {
			unsigned long long v = strtoull(e, &end, 10);

			if (!*end)
				smp.warm_min = v;
			else
				mon_log("AMEBA_SAMPLED_WARM_MIN=%s: not a number of accesses "
					"(e.g. 131072; 0 turns the floor off); using %llu", e,
					(unsigned long long)smp.warm_min);
		}
		/* the time mark, for measuring it (gap_stretch; 1: none) */
		e = getenv("AMEBA_SAMPLED_TIME_MAX");
		if (e && *e && !smp.cfg.time_max) {
			double v = strtod(e, &end);

			if (!*end && v > 0)
				smp.cfg.time_max = v;
			else
				mon_log("AMEBA_SAMPLED_TIME_MAX=%s: not a share of the wall time "
					"(e.g. 0.25; 1 turns the mark off); using %.2f", e, SMP_TIME_MAX);
		}
	}
	{
		/* AMEBA_SAMPLED_COLD_LLC=0: every LLC miss counts, as in the
		 * exact mode (for measuring what the settling does) */
		const char *e = getenv("AMEBA_SAMPLED_COLD_LLC");

		mon_backend_sim_sampled(!(e && !strcmp(e, "0")));
	}
	/* between bursts from the start: tally before the hooks see sampling */
	__atomic_store_n(&mon_hot.tally, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&mon_hot.sampling, 1, __ATOMIC_SEQ_CST);
	{
		uint64_t gen;
		uint32_t nr;

		mon_seq_pause(1);
		mon_seq_sync();	/* the exact counts so far, merged */
		if (mon_cond_current(&gen, &nr) == 0)
			adopt_locked(gen, nr);
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = create(&smp.ctl, NULL, ctl_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		__atomic_store_n(&mon_hot.sampling, 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&mon_hot.tally, 0, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&smp.lock);
		mon_log("sampled mode off: cannot start its controller thread (%s)", strerror(err));
		return AMEBA_ENOMEM;
	}
	smp.running = 1;
	pthread_mutex_unlock(&smp.lock);
	return 0;
}

void mon_sampled_stop(void)
{
	pthread_mutex_lock(&smp.lock);
	if (!smp.running) {
		pthread_mutex_unlock(&smp.lock);
		return;
	}
	smp.stop = 1;
	poke();
	pthread_mutex_unlock(&smp.lock);
	pthread_join(smp.ctl, NULL);
	pthread_mutex_lock(&smp.lock);
	smp.running = 0;
	set_free();
	mon_seq_pause(0);
	__atomic_store_n(&mon_hot.sampling, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&mon_hot.tally, 0, __ATOMIC_SEQ_CST);
	mon_backend_sim_sampled(0);
	pthread_mutex_unlock(&smp.lock);
}

void mon_sampled_exit(void)
{
	if (!mon_sampled_on())
		return;
	pthread_mutex_lock(&smp.lock);
	if (smp.phase == PH_MEASURE)
		burst_end();	/* the burst so far counts */
	else if (smp.phase == PH_WARM)
		hold();
	smp.phase = PH_TALLY;
	smp.closing = 1;	/* what waits for a burst is estimated by the last */
	smp.stop = 1;		/* no burst after this: the controller ends */
	poke();
	pthread_mutex_unlock(&smp.lock);
}

void mon_sampled_after_fork(void)
{
	/* only the forking thread lives on: no controller, no lock holder */
	mon_backend_sim_sampled(0);	/* and it simulates every access */
	pthread_mutex_init(&smp.lock, NULL);
	pthread_cond_init(&smp.wake, NULL);
	smp.cond_ready = 0;
	smp.running = 0;
	smp.stop = 0;
	smp.thr = NULL;		/* the parent's (leaked in the child: it may be mid-update) */
	smp.nr_thr = 0;
	for (size_t i = 0; i < SET_VECS; i++)
		*set_vec(i) = NULL;	/* the parent's, leaked */
	smp.s0tot = smp.tmp = smp.row = smp.keys = NULL;
	smp.gen = smp.s0_gen = smp.prev_gen = 0;
	smp.prev_ci = NULL;
	smp.nr = 0;
	__atomic_store_n(&mon_hot.sampling, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&mon_hot.tally, 0, __ATOMIC_SEQ_CST);
}
