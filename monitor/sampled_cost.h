/* sampled_cost.c: how far sampled mode's gaps stretch (sampled.c's cycle). */
#ifndef AMEBA_SAMPLED_COST_H
#define AMEBA_SAMPLED_COST_H

#include <stdint.h>

#define SMP_TIME_MAX (1.0 / 3)	/* mon_sampled_cfg.time_max's default */

/* The controller's state: its windows and the stretch they ask for. */
struct smp_cost {
	double stretch;		/* the gaps' factor now, within [1, SMP_STRETCH_MAX] */
	double k_acc, k_time;	/* the stretch each mark asks for */
	double prec;		/* the estimates' precision (-1: none yet) */
	double win_calls, win_sim;	/* the access window: its start, simulated then */
	uint64_t win_ns, win_sim_ns;	/* the time window: its start, time simulating then */
	uint64_t win_gen;	/* the set the precision's vectors hold (0: none) */
	uint32_t win_n;		/* time windows of that set seen */
};

/* The armed set's estimates (gen 0: none), and four vectors of nr doubles
 * that the caller keeps with the set, zeroed when it is armed. */
struct smp_cost_set {
	uint64_t gen;
	uint32_t nr;
	const double *est, *var;
	double *west, *wvar, *pe, *pv;
};

/* The controller starts at now (ns). */
void smp_cost_start(struct smp_cost *c, uint64_t now);
/* The stretch for the next gap: calls and sim the accesses made and
 * simulated since the start (floor included), sim_ns the wall time spent
 * simulating, time_max the mark (0: SMP_TIME_MAX; >= 1: no time mark). */
double smp_cost_stretch(struct smp_cost *c, double calls, double sim, uint64_t sim_ns,
			uint64_t now, double time_max, const struct smp_cost_set *set);

#endif
