/*
 * sampled.c - sampled simulation: bursts of exact simulation, each after a
 * warm-up, the program tallying its accesses in between; the conditional
 * counters read as estimates with 95% intervals (docs/simulator.md,
 * "Sampled simulation").
 *
 * Notes:
 * - A cycle, driven by one controller thread in wall time:
 *     tally   a period drawn uniformly from [p/2, 3p/2] (the jitter keeps
 *             the bursts from locking onto a loop's phases): the hooks
 *             count each access in the thread's tally slot and return;
 *     warm    warm_us of simulation whose counts are not used: the caches,
 *             TLBs and directory, stale from the last burst, refill;
 *     S0      the hooks tally again while the set is read (the ordered
 *             mode's merger first merges what was logged: mon_seq_pause,
 *             mon_seq_sync), so the snapshot has exactly the warm-up's end;
 *     burst   burst_us of simulation, measured;
 *     S1      as S0; the burst's counts are S1 - S0, per counter and per
 *             thread, and its accesses the simulated tally's growth.
 *   Time rather than accesses sets the lengths: the hooks then cost the
 *   same whatever the simulation costs per access, so the run is slower
 *   than a dormant one by about (warm + burst) / period whatever the
 *   program does.
 * - Estimates. A reading's window (the time since the previous reading of
 *   the set) has N accesses (every thread's tally slots) and n bursts with
 *   counts X_i and accesses A_i. Its estimate is the ratio estimator
 *   N * sum X / sum A; the variance N^2 * sum (X_i - R A_i)^2 /
 *   (n (n - 1) mean(A)^2), R = sum X / sum A. A window with fewer than two
 *   bursts borrows the ratio (none) or the relative variance (one) of all
 *   the set's bursts; with one burst in all, its count is taken as a
 *   Poisson count (variance X, scaled by (N / A)^2). A counter's value is the sum of its windows'
 *   estimates, its variance the sum of theirs: values only grow, and each
 *   reading's delta is its window's estimate. Per-thread rows: the same
 *   with the thread's own accesses and burst counts, no interval; a thread
 *   no burst has seen has no row (the others' ratio would be a guess).
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
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "mon.h"
#include "seq.h"

struct mon_tally *mon_tally_tab;

/* what the per-thread rows may hold at most, in doubles over all threads */
#define SMP_ROW_BUDGET (4u << 20)

struct smp_thread {
	uint64_t base;		/* its accesses (both slots) at the last reading */
	uint64_t s0_sim;	/* its simulated tally at S0 */
	uint64_t s0_burst;	/* the burst whose S0 s0 holds (0: none) */
	uint64_t *s0;		/* [nr] its counts at S0 */
	double *wx, *ax, *est;	/* [nr] burst counts: window, all; the estimate */
	double wa, aa;		/* burst accesses: window, all */
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
	/* the armed set's estimates */
	uint64_t gen;		/* 0: none */
	uint32_t nr;
	uint64_t s0_gen;	/* the set S0 was taken of */
	uint64_t *s0tot, *tmp;	/* [nr] */
	uint32_t nw, nall;	/* bursts: window, all */
	double sa, saa, sa_all, saa_all;
	double *sx, *sxx, *sxa, *sx_all, *sxx_all, *sxa_all;	/* [nr] */
	double *est, *var;	/* [nr] the values and their variance */
	double *ci, *ci_delta;	/* [nr] of the last reading */
	uint8_t *var_unknown;	/* [nr] */
	uint32_t bursts_read;
	double sim_all, calls_all;	/* for the fraction simulated (since the start) */
	int kick;		/* a set was armed: the next burst now */
	uint32_t bursts_total;	/* measured since the start, over all sets */
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

	return __atomic_load_n(&c->sim, __ATOMIC_RELAXED) + __atomic_load_n(&c->tally, __ATOMIC_RELAXED);
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
	mon_free(t->wx);
	mon_free(t->ax);
	mon_free(t->est);
	t->s0 = NULL;
	t->wx = t->ax = t->est = NULL;
}

/* The set's per-counter vectors of doubles, made and freed together. */
#define SET_VECS 10
static double **set_vec(size_t i)
{
	double **v[SET_VECS] = { &smp.sx, &smp.sxx, &smp.sxa, &smp.sx_all, &smp.sxx_all,
				 &smp.sxa_all, &smp.est, &smp.var, &smp.ci, &smp.ci_delta };

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
	mon_free(smp.var_unknown);
	smp.s0tot = smp.tmp = smp.row = NULL;
	smp.var_unknown = NULL;
	for (uint32_t i = 0; i < smp.nr_thr; i++)
		thr_arrays_free(&smp.thr[i]);
	smp.gen = smp.s0_gen = 0;
	smp.nr = 0;
}

/* Grows smp.thr to cover every registered thread; new ones start with
 * their accesses so far as the base (what they did before the arm or
 * before they were seen is not this set's). 0 or AMEBA_ENOMEM. */
static int thr_cover(void)
{
	uint32_t nr = mon_thread_nr();
	struct smp_thread *t;

	if (nr > MON_TALLY_MAX)
		nr = MON_TALLY_MAX;
	if (nr <= smp.nr_thr)
		return 0;
	t = mon_realloc(smp.thr, nr * sizeof(*t));
	if (!t)
		return AMEBA_ENOMEM;
	memset(t + smp.nr_thr, 0, (nr - smp.nr_thr) * sizeof(*t));
	for (uint32_t i = smp.nr_thr; i < nr; i++)
		t[i].base = smp.gen ? 0 : calls_of(i);
	smp.thr = t;
	smp.nr_thr = nr;
	return 0;
}

static void info_of(struct mon_sampled_info *info)
{
	info->bursts = smp.bursts_total;
	info->bursts_read = smp.bursts_read;
	info->accesses = (uint64_t)smp.calls_all;
	info->fraction = smp.calls_all > 0 ? smp.sim_all / smp.calls_all : 0;
}

static void armed_locked(uint64_t gen, uint32_t nr);

/* A row callback's thread (mon_cond_row_fn; before and arg unused), or
 * NULL when its rows are not kept. */
static struct smp_thread *row_thread(uint32_t id, const uint64_t *before, void *arg)
{
	(void)before;
	(void)arg;
	return id < smp.nr_thr && !smp.rows_off ? &smp.thr[id] : NULL;
}

void mon_sampled_armed(uint64_t gen, uint32_t nr)
{
	if (!mon_sampled_on())
		return;
	pthread_mutex_lock(&smp.lock);
	armed_locked(gen, nr);
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
	armed_locked(gen, nr);
	if (smp.gen != gen || mon_cond_read(gen, smp.tmp, NULL, nr, row_seed, NULL))
		return;
	for (uint32_t i = 0; i < nr; i++)
		smp.est[i] = (double)smp.tmp[i];
}

static void armed_locked(uint64_t gen, uint32_t nr)
{
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
	set_free();
	if (nr) {
		for (size_t i = 0; i < SET_VECS; i++)
			ok &= (*set_vec(i) = mon_calloc(nr, sizeof(double))) != NULL;
		ok &= (smp.s0tot = mon_calloc(nr, sizeof(uint64_t))) != NULL;
		ok &= (smp.tmp = mon_calloc(nr, sizeof(uint64_t))) != NULL;
		ok &= (smp.row = mon_calloc(nr, sizeof(uint64_t))) != NULL;
		ok &= (smp.var_unknown = mon_calloc(nr, 1)) != NULL;
		ok &= thr_cover() == 0;
	}
	if (ok && nr) {
		smp.gen = gen;
		smp.nr = nr;
		smp.nw = smp.nall = 0;
		smp.sa = smp.saa = smp.sa_all = smp.saa_all = 0;
		smp.bursts_read = 0;
		/* a new experiment starts with a burst (a window of it without
		 * one would estimate nothing) */
		smp.kick = 1;
		pthread_cond_broadcast(&smp.wake);
		for (uint32_t i = 0; i < smp.nr_thr; i++) {
			struct smp_thread *t = &smp.thr[i];

			t->base = calls_of(i);
			t->s0_burst = 0;
			t->wa = t->aa = 0;
			t->sent_exited = 0;
		}
		smp.rows_off = (uint64_t)nr * 4 * (smp.nr_thr + 1) > SMP_ROW_BUDGET;
	} else {
		if (nr)
			mon_log("sampled mode: no memory for the estimates of %u counters; their "
				"readings are the raw counts", nr);
		set_free();
	}
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
	smp.burst_id++;
	smp.s0_gen = 0;
	if (smp.gen && !thr_cover() &&
	    !mon_cond_read(smp.gen, smp.s0tot, NULL, smp.nr, row_s0, NULL)) {
		smp.s0_gen = smp.gen;
		for (uint32_t i = 0; i < smp.nr_thr; i++)
			smp.thr[i].s0_sim = sim_of(i);
	}
	smp.phase = PH_MEASURE;
	release();
}

static void row_s1(uint32_t id, const uint64_t *vals, const uint64_t *before, uint32_t nr, void *arg)
{
	struct smp_thread *t = row_thread(id, before, arg);
	double *wx, *ax;

	if (!t || !(wx = thr_vec(&t->wx)) || !(ax = thr_vec(&t->ax)))
		return;
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t s0 = t->s0_burst == smp.burst_id && t->s0 ? t->s0[i] : 0;
		double d = vals[i] >= s0 ? (double)(vals[i] - s0) : 0;

		wx[i] += d;
		ax[i] += d;
	}
}

static void burst_end(void)
{
	double a = 0;
	uint32_t nr_s0 = smp.nr_thr;

	hold();
	if (smp.phase != PH_MEASURE)
		return;		/* ended already (a swap took it) */
	smp.phase = PH_TALLY;
	if (!smp.s0_gen || smp.s0_gen != smp.gen || thr_cover())
		return;		/* the set changed meanwhile: the burst is lost */
	if (mon_cond_read(smp.gen, smp.tmp, NULL, smp.nr, row_s1, NULL))
		return;
	for (uint32_t i = 0; i < smp.nr_thr; i++) {
		struct smp_thread *t = &smp.thr[i];
		uint64_t now = sim_of(i), was = i < nr_s0 ? t->s0_sim : 0;
		double d = now >= was ? (double)(now - was) : 0;

		t->wa += d;
		t->aa += d;
		a += d;
	}
	for (uint32_t i = 0; i < smp.nr; i++) {
		double x = smp.tmp[i] >= smp.s0tot[i] ? (double)(smp.tmp[i] - smp.s0tot[i]) : 0;

		smp.sx[i] += x;
		smp.sxx[i] += x * x;
		smp.sxa[i] += x * a;
		smp.sx_all[i] += x;
		smp.sxx_all[i] += x * x;
		smp.sxa_all[i] += x * a;
	}
	smp.sa += a;
	smp.saa += a * a;
	smp.sa_all += a;
	smp.saa_all += a * a;
	smp.sim_all += a;
	smp.bursts_total++;
	smp.nw++;
	smp.nall++;
	smp.s0_gen = 0;
}

/* ---- reading ---- */

/* The variance of the ratio sx/sa over n bursts, or -1 below two. */
static double ratio_var(uint32_t n, double sx, double sxx, double sxa, double sa, double saa)
{
	double r, s, abar;

	if (n < 2 || sa <= 0)
		return -1;
	r = sx / sa;
	abar = sa / n;
	s = sxx - 2 * r * sxa + r * r * saa;
	if (s < 0)
		s = 0;
	return s / ((double)n * (n - 1) * abar * abar);
}

int mon_sampled_read(uint64_t gen, uint64_t *total, uint64_t *before, uint32_t nr,
		     mon_cond_row_fn per_thread, void *arg)
{
	double n_all = 0;

	pthread_mutex_lock(&smp.lock);
	if (!smp.gen || gen != smp.gen || nr != smp.nr || thr_cover()) {
		pthread_mutex_unlock(&smp.lock);
		return mon_cond_read(gen, total, before, nr, per_thread, arg);
	}
	for (uint32_t i = 0; i < smp.nr_thr; i++) {
		uint64_t c = calls_of(i);

		n_all += c >= smp.thr[i].base ? (double)(c - smp.thr[i].base) : 0;
	}
	smp.calls_all += n_all;
	for (uint32_t i = 0; i < nr; i++) {
		double est = 0, var = -1, rv;

		if (smp.nw && smp.sa > 0) {
			est = n_all * smp.sx[i] / smp.sa;
			var = ratio_var(smp.nw, smp.sx[i], smp.sxx[i], smp.sxa[i], smp.sa, smp.saa);
			if (var >= 0)
				var *= n_all * n_all;
		} else if (smp.nall && smp.sa_all > 0) {
			est = n_all * smp.sx_all[i] / smp.sa_all;
		}
		if (var < 0 && smp.sx_all[i] > 0 &&
		    (rv = ratio_var(smp.nall, smp.sx_all[i], smp.sxx_all[i], smp.sxa_all[i], smp.sa_all,
				    smp.saa_all)) >= 0) {
			double r = smp.sx_all[i] / smp.sa_all;

			var = rv / (r * r) * est * est;	/* the set's relative variance */
		} else if (var < 0 && smp.nall >= 2 && smp.sx_all[i] == 0) {
			var = 0;	/* never seen in any burst */
		} else if (var < 0 && smp.nw && smp.sa > 0) {
			/* one burst so far: its events as a Poisson count, scaled
			 * (a lower bound when they come in clusters) */
			var = n_all * n_all / (smp.sa * smp.sa) * smp.sx[i];
		}
		smp.est[i] += est;
		if (var >= 0)
			smp.var[i] += var;
		else
			smp.var_unknown[i] = 1;
		smp.ci_delta[i] = var >= 0 ? 1.96 * sqrt(var) : -1;
		smp.ci[i] = smp.var_unknown[i] ? -1 : 1.96 * sqrt(smp.var[i]);
		total[i] = (uint64_t)llround(smp.est[i]);
		if (before)
			before[i] = 0;
	}
	/* rows: each thread by its own ratio, else the set's */
	for (uint32_t id = 0; id < smp.nr_thr && !smp.rows_off; id++) {
		struct smp_thread *t = &smp.thr[id];
		struct mon_thread *mt = mon_thread_get(id);
		uint64_t c = calls_of(id);
		double n = c >= t->base ? (double)(c - t->base) : 0;
		int any = 0;

		t->base = c;
		if (n > 0 && thr_vec(&t->est)) {
			for (uint32_t i = 0; i < nr; i++) {
				/* a thread no burst has seen gets nothing: the
				 * set's ratio would give it the others' behaviour
				 * (main's set-up tallied between bursts would
				 * share the workers' false sharing); its accesses
				 * are in the totals all the same */
				double r = t->wa > 0 ? (t->wx ? t->wx[i] : 0) / t->wa :
					   t->aa > 0 ? (t->ax ? t->ax[i] : 0) / t->aa : 0;

				t->est[i] += n * r;
			}
		}
		if (t->wx)
			memset(t->wx, 0, nr * sizeof(double));
		t->wa = 0;
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
	smp.bursts_read = smp.nw;
	smp.nw = 0;
	smp.sa = smp.saa = 0;
	memset(smp.sx, 0, nr * sizeof(double));
	memset(smp.sxx, 0, nr * sizeof(double));
	memset(smp.sxa, 0, nr * sizeof(double));
	pthread_mutex_unlock(&smp.lock);
	return 0;
}

void mon_sampled_swap(void)
{
	if (!mon_sampled_on())
		return;
	pthread_mutex_lock(&smp.lock);
	if (smp.phase == PH_MEASURE) {
		burst_end();	/* the old set's: counted, not lost */
		pthread_cond_broadcast(&smp.wake);	/* the controller goes on */
	}
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

/* ---- the controller ---- */

/* Waits us microseconds, or until stopped (or, kickable, until a set is
 * armed; or until the phase is no longer what it was, a swap having ended
 * the burst): 1 when stopped. smp.lock held. */
static int wait_us(uint64_t us, int kickable)
{
	int phase = smp.phase;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(us / 1000000);
	ts.tv_nsec += (long)(us % 1000000) * 1000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	while (!smp.stop && !(kickable && smp.kick) && smp.phase == phase)
		if (pthread_cond_timedwait(&smp.wake, &smp.lock, &ts) == ETIMEDOUT)
			break;
	return smp.stop;
}

static void *ctl_main(void *arg)
{
	(void)arg;
	mon_self = &ctl_self;
	pthread_mutex_lock(&smp.lock);
	for (;;) {
		uint64_t p = smp.cfg.period_us;

		/* a burst at once: a short program gets one too */
		if (smp.burst_id && wait_us(p / 2 + rng_next() % (p + 1), 1))
			break;
		smp.kick = 0;
		smp.phase = PH_WARM;
		release();
		if (wait_us(smp.cfg.warm_us, 0))
			break;
		burst_begin();
		if (wait_us(smp.cfg.burst_us, 0))
			break;
		burst_end();
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
	if (!mon_tally_tab) {
		void *p = mmap(NULL, (size_t)MON_TALLY_MAX * sizeof(struct mon_tally),
			       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (p == MAP_FAILED)
			return AMEBA_ENOMEM;
		__atomic_store_n(&mon_tally_tab, (struct mon_tally *)p, __ATOMIC_RELEASE);
	}
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
	smp.rng = cfg->seed ? cfg->seed : 0x9E3779B97F4A7C15ull;
	smp.stop = 0;
	smp.phase = PH_TALLY;
	smp.burst_id = 0;
	smp.bursts_total = 0;
	smp.sim_all = smp.calls_all = 0;
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
	pthread_cond_broadcast(&smp.wake);
	pthread_mutex_unlock(&smp.lock);
	pthread_join(smp.ctl, NULL);
	pthread_mutex_lock(&smp.lock);
	smp.running = 0;
	set_free();
	mon_seq_pause(0);
	__atomic_store_n(&mon_hot.sampling, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&mon_hot.tally, 0, __ATOMIC_SEQ_CST);
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
	smp.stop = 1;		/* no burst after this: the controller ends */
	pthread_cond_broadcast(&smp.wake);
	pthread_mutex_unlock(&smp.lock);
}

void mon_sampled_after_fork(void)
{
	/* only the forking thread lives on: no controller, no lock holder */
	pthread_mutex_init(&smp.lock, NULL);
	pthread_cond_init(&smp.wake, NULL);
	smp.cond_ready = 0;
	smp.running = 0;
	smp.stop = 0;
	smp.thr = NULL;		/* the parent's (leaked in the child: it may be mid-update) */
	smp.nr_thr = 0;
	for (size_t i = 0; i < SET_VECS; i++)
		*set_vec(i) = NULL;	/* the parent's, leaked */
	smp.s0tot = smp.tmp = smp.row = NULL;
	smp.var_unknown = NULL;
	smp.gen = smp.s0_gen = smp.prev_gen = 0;
	smp.prev_ci = NULL;
	smp.nr = 0;
	__atomic_store_n(&mon_hot.sampling, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&mon_hot.tally, 0, __ATOMIC_SEQ_CST);
}
