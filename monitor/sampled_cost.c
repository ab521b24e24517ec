/*
 * sampled_cost.c - how far sampled mode's gaps stretch (docs/simulator.md,
 * "At most a third of the wall time simulating"): the marks on the share
 * of the accesses and of the wall time simulated, and the estimates'
 * precision that lets the gaps stretch further.
 */
#include <math.h>
#include <string.h>

#include "sampled_cost.h"

/*
 * Two marks hold the cycle's cost, the gaps' stretch (within [1,
 * SMP_STRETCH_MAX]) being the larger of the two it takes to meet them:
 *   - the share of the accesses simulated (the bursts', measured, and the
 *     floor's) stays under SMP_SIM_MAX: every SMP_STRETCH_WIN accesses the
 *     stretch is multiplied by the window's share over SMP_SIM_MAX, so that
 *     the next window's share comes out at the mark whatever the program
 *     simulates at. A program that simulates nearly as fast as it runs (a
 *     random walk whose native run misses as much as the simulator's)
 *     simulated 5.7% of its accesses with the default cycle; a stretch
 *     from the share since the start settled at the geometric mean of the
 *     mark and the unstretched share (5.3% measured);
 *   - the share of the wall time spent replaying, warming up and measuring
 *     stays under SMP_TIME_MAX, over windows of SMP_TIME_WIN_MS: the run
 *     then costs at most 1 / (1 - SMP_TIME_MAX) times a run that only
 *     tallies (1.5 times), whatever ends the gaps early (dues, phase
 *     changes, a set armed, a rate wandering on a contended CPU). The
 *     default cycle spends 6 ms of 26 there; dues and the agent's sets
 *     made it 26-30% on the bench's programs, 39% in fs_loop. With s the
 *     window's share under stretch k, a mark M needs
 *     k' = k s (1 - M) / ((1 - s) M).
 * and while the estimates are precise (gap_prec under SMP_PREC), the gaps
 * stretch further, as far as it takes to keep them there but no further
 * than a lower time mark, SMP_TIME_LOW of the first: where the tally itself
 * costs half the dormant run again (spmv), a third of the time simulating
 * puts the run over twice its dormant time, and its estimates need fewer
 * bursts than it gets; where they need all of them (the three-phase
 * program, whose share error went over a point in half its runs with the
 * mark at 0.2 for all), the gaps keep their length.
 */
#define SMP_SIM_MAX 0.04
#define SMP_TIME_LOW 0.45
#define SMP_TIME_WIN_MS 250
#define SMP_STRETCH_MAX 8.0
#define SMP_STRETCH_WIN 4e6
#define SMP_PREC 0.05

/*
 * The estimates' precision: the relative 95% half-width, 1.96 sqrt(v) / e,
 * of what the largest counter grew by over the last time windows (e, its
 * growth, and v, its variance's, each window's added to the last ones'
 * times SMP_PREC_DECAY: about the last five windows; per window, the
 * figure is that over sqrt(1 - SMP_PREC_DECAY)). A window's bursts scale
 * with 1 / k under stretch k, so the figure with sqrt(k), and the stretch
 * that holds it at SMP_PREC is k (SMP_PREC / p)^2 (0: no figure yet; a new
 * set has one after two windows). Measured per window at the default
 * cycle (SCALE 10, design preset): spmv 0.040, jacobi 0.072, the
 * three-phase program 0.19, the others 0.002-0.03.
 */
#define SMP_PREC_DECAY 0.8
static double gap_prec(struct smp_cost *c, const struct smp_cost_set *s)
{
	int ok = s->gen && s->est && s->west && s->wvar && s->pe && s->pv;

	if (ok && s->gen == c->win_gen) {
		uint32_t big = 0;

		for (uint32_t i = 0; i < s->nr; i++) {
			s->pe[i] = SMP_PREC_DECAY * s->pe[i] + s->est[i] - s->west[i];
			s->pv[i] = SMP_PREC_DECAY * s->pv[i] + s->var[i] - s->wvar[i];
			big = s->pe[i] > s->pe[big] ? i : big;
		}
		if (++c->win_n >= 2 && s->pe[big] > 0)
			c->prec = 1.96 * sqrt(s->pv[big] > 0 ? s->pv[big] : 0) / s->pe[big] /
				  sqrt(1 - SMP_PREC_DECAY);
	} else {
		c->win_n = 0;
	}
	if (ok) {
		memcpy(s->west, s->est, s->nr * sizeof(double));
		memcpy(s->wvar, s->var, s->nr * sizeof(double));
		c->win_gen = s->gen;
	}
	if (c->prec < 0)
		return 0;
	return c->prec > 0 ? c->stretch * (SMP_PREC / c->prec) * (SMP_PREC / c->prec)
			   : SMP_STRETCH_MAX;
}

/* The stretch that makes sh, the share of the time simulating under the
 * current stretch, the mark m. */
static double time_k(const struct smp_cost *c, double sh, double m)
{
	if (m >= 1)
		return 1;
	return sh < 0.99 ? c->stretch * sh * (1 - m) / ((1 - sh) * m) : SMP_STRETCH_MAX;
}

void smp_cost_start(struct smp_cost *c, uint64_t now)
{
	*c = (struct smp_cost){ .stretch = 1, .k_acc = 1, .k_time = 1, .prec = -1, .win_ns = now };
}

double smp_cost_stretch(struct smp_cost *c, double calls, double sim, uint64_t sim_ns,
			uint64_t now, double time_max, const struct smp_cost_set *set)
{
	double dc = calls - c->win_calls, x;
	uint64_t dt = now - c->win_ns;

	if (dc >= SMP_STRETCH_WIN) {
		c->k_acc = c->stretch * ((sim - c->win_sim) / dc) / SMP_SIM_MAX;
		c->win_calls = calls;
		c->win_sim = sim;
	}
	if (dt >= SMP_TIME_WIN_MS * 1000000ull) {
		double sh = (double)(sim_ns - c->win_sim_ns) / (double)dt;
		double m = time_max > 0 ? time_max : SMP_TIME_MAX;
		double kp = gap_prec(c, set), kl = time_k(c, sh, m * SMP_TIME_LOW);

		c->k_time = time_k(c, sh, m);
		if (m < 1 && (kp < kl ? kp : kl) > c->k_time)
			c->k_time = kp < kl ? kp : kl;
		c->win_ns = now;
		c->win_sim_ns = sim_ns;
	}
	x = c->k_acc > c->k_time ? c->k_acc : c->k_time;
	c->stretch = x < 1 ? 1 : x > SMP_STRETCH_MAX ? SMP_STRETCH_MAX : x;
	return c->stretch;
}
