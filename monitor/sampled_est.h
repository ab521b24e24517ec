/* sampled_est.c: the sampled mode's estimator arithmetic (sampled.c). */
#ifndef AMEBA_SAMPLED_EST_H
#define AMEBA_SAMPLED_EST_H

#include <stdint.h>

/* A burst with fewer accesses simulated than this (and under half of those
 * its threads made) is no burst: its accesses wait for the next. */
#define SMP_MIN_BURST 1024
/* A burst of at least this many accesses simulated weighs as much as any
 * other in a gap's pooled ratio (sampled_est.c, weight). */
#define SMP_FULL_BURST 4096
#define SMP_SNAPS 8		/* steps of a gap (gap_phi); twice as many when the
				 * threads' dues may end it first */

uint32_t *smp_ktab_make(const uint64_t *keys, uint32_t nr, const double *only, uint32_t *cap);
uint32_t smp_ktab_find(const uint32_t *tab, uint32_t cap, const uint64_t *keys, uint64_t key);
double smp_gap_weight(double a0, double a1);
int smp_too_few(double a, double b);
double smp_pool(double n, double x, double a, double ap, double phi, double *r, double *rp);
double smp_gap_phi(const double *snap, const uint64_t *snap_ns, uint32_t nsnap, double s0);

#endif
