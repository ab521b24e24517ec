/*
 * The sampled mode's estimator arithmetic (docs/simulator.md, "Sampled
 * simulation", Estimates and Intervals): pure functions of their
 * arguments, used by the controller (sampled.c), which holds the state.
 */
#include <math.h>
#include <stdint.h>

#include "mon.h"
#include "sampled_est.h"

/*
 * A burst of at least SMP_FULL_BURST accesses simulated weighs as much as
 * any other in a gap's pooled ratio, a smaller one in proportion: weighing
 * by the accesses simulated (the ratio estimator's way) gave a gap across
 * a phase change mostly to the phase that simulates faster (a stream over
 * a random walk, at several times the accesses per burst).
 */
static double weight(double a)
{
	return a < SMP_FULL_BURST ? a / SMP_FULL_BURST : 1;
}

/* Open addressing over counter keys: index + 1 (0: empty). Keys of
 * counters with only[i] == 0 are left out (only NULL: all). NULL when out
 * of memory. */
uint32_t *smp_ktab_make(const uint64_t *keys, uint32_t nr, const double *only, uint32_t *cap)
{
	uint32_t *tab;

	for (*cap = 16; *cap < 2 * nr; *cap *= 2)
		;
	if (!(tab = mon_calloc(*cap, sizeof(*tab))))
		return NULL;
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t h = (uint32_t)(keys[i] ^ (keys[i] >> 32)) & (*cap - 1);

		if (only && !only[i])
			continue;
		while (tab[h])
			h = (h + 1) & (*cap - 1);
		tab[h] = i + 1;
	}
	return tab;
}

/* The index + 1 of key in tab (made of keys), or 0. */
uint32_t smp_ktab_find(const uint32_t *tab, uint32_t cap, const uint64_t *keys, uint64_t key)
{
	for (uint32_t h = (uint32_t)(key ^ (key >> 32)) & (cap - 1); tab[h]; h = (h + 1) & (cap - 1))
		if (keys[tab[h] - 1] == key)
			return tab[h];
	return 0;
}

/*
 * The weight of the variance of a gap's estimate in G^2 d^2: w (1 - w),
 * w the weight of the burst before (weight(), below), or 1/12 at least (a phase
 * change falling uniformly in the gap, when one burst weighs nearly all).
 */
double smp_gap_weight(double a0, double a1)
{
	double w = a0 + a1 > 0 ? weight(a0) / (weight(a0) + weight(a1)) : 0.5;

	return w * (1 - w) > 1.0 / 12 ? w * (1 - w) : 1.0 / 12;
}

/*
 * A burst whose a accesses simulated, of the b its threads made, are too
 * few to give a ratio: the ordered mode's cut dropped nearly all (a thread
 * just born or descheduled had logged nothing), a few accesses decide
 * nothing. Its accesses wait for the next burst with the gap's.
 */
int smp_too_few(double a, double b)
{
	return a < SMP_MIN_BURST && 2 * a < b;
}

/*
 * The pooled ratio of the last burst and this one, for the accesses n
 * since the last burst (or its cut) and those the cut dropped from this
 * one; x, a: this burst's count and accesses; *r, *rp, ap: the last
 * burst's ratio, the last pooled ratio and the last burst's accesses
 * (ap = 0: none). Returns the estimate; *r and *rp move on.
 */
double smp_pool(double n, double x, double a, double ap, double phi, double *r, double *rp)
{
	double w0 = ap > 0 ? weight(ap) : 0, w1 = weight(a), r0 = *r, r1 = x / a;
	double before = w0 * r0 + (1 - w0) * r1, after = w1 * r1 + (1 - w1) * r0;

	*r = r1;
	*rp = after;
	return n * (phi * before + (1 - phi) * after) + x;
}

/*
 * Of a gap's accesses, the fraction before its phase change, from the
 * controller's snapshots of every thread's accesses (snap[nsnap], taken
 * at snap_ns[]: at the last burst's end, then through the gap at equal
 * steps, and where a thread's due ended it), s0: the accesses at this
 * burst's S0. A program whose
 * phases run at different speeds changes its rate of accesses where it
 * changes phase: the split of the steps into two runs whose mean rates
 * differ most, when they differ by more than a quarter and by 3 standard
 * deviations of the steps about their run's mean, puts the change there;
 * otherwise at the gap's midpoint in time. Splitting at the midpoint
 * whatever the rates gave a fast phase's many accesses the slow one's
 * ratio half the time (a stream before a random walk: +5% on all misses).
 * Rates, not counts: the last step of a gap a due ended is short, and
 * holds the fast stretch that reached the due.
 */
double smp_gap_phi(const double *snap, const uint64_t *snap_ns, uint32_t nsnap, double s0)
{
	uint32_t m = nsnap ? nsnap - 1 : 0, best = 0;
	double d[2 * SMP_SNAPS], w[2 * SMP_SNAPS], g = s0 - (nsnap ? snap[0] : s0);
	double before, score = 0, span, half;

	if (g <= 0 || m < 1 || snap_ns[m] <= snap_ns[0])
		return 0.5;
	span = (double)(snap_ns[m] - snap_ns[0]);
	/* each step's rate, in accesses per mean step; weighed by its length */
	for (uint32_t k = 0; k < m; k++) {
		double dt = (double)(snap_ns[k + 1] - snap_ns[k]);

		w[k] = dt * m / span;
		d[k] = w[k] > 0 ? (snap[k + 1] - snap[k]) / w[k] : 0;
	}
	for (uint32_t sp = 1; sp < m; sp++) {
		double m1 = 0, m2 = 0, w1 = 0, w2 = 0, ss = 0, sc;

		for (uint32_t k = 0; k < m; k++) {
			*(k < sp ? &m1 : &m2) += d[k] * w[k];
			*(k < sp ? &w1 : &w2) += w[k];
		}
		if (w1 <= 0 || w2 <= 0)
			continue;
		m1 /= w1;
		m2 /= w2;
		for (uint32_t k = 0; k < m; k++)
			ss += w[k] * (d[k] - (k < sp ? m1 : m2)) * (d[k] - (k < sp ? m1 : m2));
		sc = w1 * w2 * (m1 - m2) * (m1 - m2);
		/* a step, not noise: each side's steps close to their mean (a
		 * contended CPU makes the rate wander without a phase change) */
		if (sc > score && fabs(m1 - m2) > 0.25 * (m1 > m2 ? m1 : m2) &&
		    (m1 - m2) * (m1 - m2) > 9 * ss / (m > 2 ? m - 2 : 1)) {
			score = sc;
			best = sp;
		}
	}
	if (best) {
		before = snap[best] - snap[0];
	} else {
		/* the midpoint in time, between the snapshots around it */
		half = (double)snap_ns[0] + span / 2;
		before = 0;
		for (uint32_t k = 0; k < m; k++)
			if ((double)snap_ns[k + 1] >= half) {
				double f = ((half - (double)snap_ns[k]) /
					    (double)(snap_ns[k + 1] - snap_ns[k]));

				before = snap[k] - snap[0] + f * (snap[k + 1] - snap[k]);
				break;
			}
	}
	return before / g > 1 ? 1 : before / g;
}

