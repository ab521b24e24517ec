/*
 * sim_synth.c - simulated accesses per second of the cache simulator on
 * synthetic single-threaded traces (no instrumentation: the simulator's own
 * cost). Prints `name: value` lines.
 *
 *   sim_synth [preset] [accesses]     (default skylake-sp, 20M)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"

#define BASE ((uintptr_t)0x40000000)

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t xs(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

enum { P_SAMELINE, P_L1LINES, P_SEQ, P_SEQ_WRITE, P_RANDOM, P_NR };
static const char *pname[P_NR] = { "l1hit_sameline", "l1hit_lines", "seq_read", "seq_write",
				   "random_read" };

static double run(const struct mri_geom *g, int pat, long n, struct mon_sim_totals *t)
{
	struct mon_sim *s = mon_sim_new(g);
	struct mon_sim_core *c = mon_sim_core_get(s, 0, 0);
	struct mon_sim_events ev;
	uint64_t x = 12345;
	uint64_t l1_mask = g->l1d.sz_bytes / 2 - 1;	/* half the L1: always hits */
	double t0 = now();

	*t = (struct mon_sim_totals){ 0 };
	for (long i = 0; i < n; i++) {
		uintptr_t a;
		int wr = 0;
		switch (pat) {
		case P_SAMELINE:
			a = BASE + ((uintptr_t)i & 7) * 8;
			break;
		case P_L1LINES:
			a = BASE + (((uintptr_t)i * 72) & l1_mask & ~(uintptr_t)7);
			break;
		case P_SEQ:
			a = BASE + ((uintptr_t)i * 8 & ((256u << 20) - 1));
			break;
		case P_SEQ_WRITE:
			a = BASE + ((uintptr_t)i * 8 & ((256u << 20) - 1));
			wr = 1;
			break;
		default:
			a = BASE + (xs(&x) & ((256u << 20) - 1) & ~(uintptr_t)7);
			break;
		}
		mon_sim_access(c, a, 8, wr, 1, &ev);
		t->l1_miss += ev.l1_miss;
		t->llc_miss += ev.llc_miss;
	}
	double dt = now() - t0;
	mon_sim_destroy(s);
	return n / dt;
}

int main(int argc, char **argv)
{
	const char *preset = argc > 1 ? argv[1] : "skylake-sp";
	long n = argc > 2 ? atol(argv[2]) : 20000000;
	char err[256];
	struct mri_geom g;

	if (mri_geom_load(preset, &g, err, sizeof(err))) {
		fprintf(stderr, "sim_synth: %s\n", err);
		return 2;
	}
	g.nr_cores = 1;
	for (int three_c = 1; three_c >= 0; three_c--) {
		g.three_c = three_c;
		for (int p = 0; p < P_NR; p++) {
			struct mon_sim_totals t;
			double r = run(&g, p, n, &t);
			printf("sim_maccess_per_s_%s%s: %.1f\n", pname[p], three_c ? "_3c" : "", r / 1e6);
			printf("sim_l1_miss_pct_%s%s: %.2f\n", pname[p], three_c ? "_3c" : "",
			       100.0 * t.l1_miss / n);
		}
	}
	return 0;
}
