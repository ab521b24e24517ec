/*
 * sim_mt.c - the simulator driven by real threads in parallel. Built with
 * -fsanitize=thread together with the simulator's sources: ThreadSanitizer
 * must report no data race. Each thread drives its own core; two extra
 * threads share one core (more threads than cores). Afterwards the
 * coherence invariants must hold and every invalidation sent must have been
 * received.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sim.h"

#define NR_THREADS 6	/* threads 4 and 5 share core 3 with thread 3 */
#define NR_CORES 4
#ifndef ITERS
#define ITERS 20000
#endif
#define BASE ((uintptr_t)0x40000000)

static struct mon_sim *sim;
static struct mon_sim_totals totals[NR_THREADS];

struct arg {
	uint32_t id;
};

static void *worker(void *p)
{
	struct arg *a = p;
	uint32_t id = a->id;
	struct mon_sim_core *c = mon_sim_core_get(sim, id % NR_CORES, id);
	struct mon_sim_totals *t = &totals[id];
	struct mon_sim_events ev;
	uint64_t x = 0x9E3779B97F4A7C15ull * (id + 1);
	struct mon_sim_recv ck[64];

	for (int i = 0; i < ITERS; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uintptr_t a1;
		int wr;
		switch (i % 5) {
		case 0:	/* one shared counter: true sharing */
			a1 = BASE;
			wr = 1;
			break;
		case 1:	/* own word of a shared line: false sharing */
			a1 = BASE + 64 + 4 * id;
			wr = 1;
			break;
		case 2:	/* private streaming */
			a1 = BASE + (1u << 24) * (id + 1) + (uintptr_t)(i * 8 % (1 << 20));
			wr = i & 1;
			break;
		default:	/* random in a shared 4 MiB array, mostly reads */
			a1 = BASE + (1u << 22) + (x % (4u << 20));
			wr = (x >> 50) % 8 == 0;
			break;
		}
		mon_sim_access(c, a1 & ~(uintptr_t)3, 4, wr, id, &ev);
		mon_sim_totals_add(t, &ev);
		if (ev.inval_recv)
			while (mon_sim_core_recv(c, ck, 64) == 64)
				;
	}
	return NULL;
}

int main(void)
{
	char err[256];
	struct mri_geom g;
	pthread_t th[NR_THREADS];
	struct arg args[NR_THREADS];

	if (mri_geom_load("skylake-sp", &g, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	g.nr_cores = NR_CORES;
	g.nr_nodes = 2;
	g.l2.sz_bytes = 256 * 1024;	/* more evictions */
	g.llc.sz_bytes = 11 * 256 * 1024;
	sim = mon_sim_new(&g);
	CHECK(sim != NULL);
	for (uint32_t i = 0; i < NR_THREADS; i++) {
		args[i].id = i;
		pthread_create(&th[i], NULL, worker, &args[i]);
	}
	for (uint32_t i = 0; i < NR_THREADS; i++)
		pthread_join(th[i], NULL);

	struct mon_sim_totals sum = { 0 };
	for (uint32_t i = 0; i < NR_THREADS; i++) {
		sum.inval_sent += totals[i].inval_sent;
		sum.inval_recv += totals[i].inval_recv;
		sum.coh_true += totals[i].coh_true;
		sum.coh_false += totals[i].coh_false;
		sum.intervention += totals[i].intervention;
		sum.accesses += totals[i].accesses;
		sum.mem_remote += totals[i].mem_remote;
	}
	for (uint32_t i = 0; i < NR_CORES; i++) {
		struct mon_sim_events ev;
		mon_sim_core_sync(mon_sim_core_get(sim, i, i), &ev);
		sum.inval_recv += ev.inval_recv;
	}
	CHECK(mon_sim_verify(sim, err, sizeof(err)) == 0);
	if (mon_sim_verify(sim, err, sizeof(err)))
		fprintf(stderr, "verify: %s\n", err);
	CHECK_EQ_U64(sum.accesses, (uint64_t)NR_THREADS * ITERS);
	CHECK_EQ_U64(sum.inval_recv, sum.inval_sent);
	CHECK(sum.coh_true > 0);
	CHECK(sum.coh_false > 0);
	CHECK(sum.intervention > 0);
	CHECK(sum.mem_remote > 0);
	printf("accesses %llu inval %llu coh_true %llu coh_false %llu intervention %llu\n",
	       (unsigned long long)sum.accesses, (unsigned long long)sum.inval_sent,
	       (unsigned long long)sum.coh_true, (unsigned long long)sum.coh_false,
	       (unsigned long long)sum.intervention);
	mon_sim_destroy(sim);
	return check_done();
}
