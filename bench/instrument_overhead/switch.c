/*
 * switch.c - how long a request to measure takes to reach a running thread
 * (docs/dual-path.md): built by `ameba cc -O2` only (it drives the runtime
 * itself; run it with AMEBA_MRI=0).
 *
 * W workers (argument; default 1, so that on a 2-CPU machine each runs on
 * a CPU of its own beside the main thread) each run one call of a loop nest
 * for the whole run (a vectorisable sweep of 4,096 doubles per outer
 * iteration: clean, a few microseconds). The main thread switches the count backend on 1,000 times,
 * each time waiting until every worker has made an access counted there (a
 * counter on each worker's array), and switches it off again after a random
 * pause of 0.2-2 ms. The latency of a switch is the time from the switch to
 * the last worker's first counted access, wall clock (which includes the
 * scheduler's delays when the threads outnumber the CPUs). Prints
 *   switch_latency_us_{p50,p99,max}_<W>t   over the switches
 *   switch_timeouts_<W>t                    switches that waited 1 s in vain
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mon.h"

#define N 4096
#define WORKERS_MAX 16
#define SWITCHES 1000

static double wx[WORKERS_MAX][N], wy[WORKERS_MAX][N];
static volatile int stop;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

__attribute__((noinline)) static void nest(double *restrict y, const double *restrict x)
{
	for (long r = 0; !stop; r++)
		for (int i = 0; i < N; i++)
			y[i] = y[i] * 0.5 + x[i] * (double)(r & 7);
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;

	nest(wy[t], wx[t]);
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static double lat[SWITCHES];
	struct mon_range r[WORKERS_MAX];
	struct mon_cond_spec specs[WORKERS_MAX];
	pthread_t th[WORKERS_MAX];
	uint64_t gen, total[WORKERS_MAX], last[WORKERS_MAX] = { 0 };
	unsigned seed = 12345;
	int n = 0, timeouts = 0, workers = argc > 1 ? atoi(argv[1]) : 1;

	if (workers < 1 || workers > WORKERS_MAX) {
		fprintf(stderr, "usage: switch [WORKERS 1..%d]\n", WORKERS_MAX);
		return 2;
	}

	for (int t = 0; t < workers; t++) {
		r[t] = (struct mon_range){ (uintptr_t)wy[t], (uintptr_t)wy[t] + sizeof(wy[t]) };
		specs[t] = (struct mon_cond_spec){ .metric = AMEBA_M_MEM_REF, .nr_ranges = 1,
						   .ranges = &r[t] };
		pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
	}
	/* counters need a backend: armed while it is active */
	if (mon_activate("count") || mon_cond_arm(specs, workers, &gen)) {
		fprintf(stderr, "switch: cannot arm the counters on the count backend\n");
		return 1;
	}
	mon_deactivate();
	mon_cond_read(gen, last, NULL, workers, NULL, NULL);
	for (int s = 0; s < SWITCHES; s++) {
		struct timespec pause = { 0, 200000 + (long)(rand_r(&seed) % 1800000) };
		double t0;
		int all = 0;

		nanosleep(&pause, NULL);
		t0 = now_us();
		if (mon_activate("count")) {
			fprintf(stderr, "switch: cannot activate the count backend\n");
			return 1;
		}
		while (!all && now_us() - t0 < 1e6) {
			mon_cond_read(gen, total, NULL, workers, NULL, NULL);
			all = 1;
			for (int t = 0; t < workers; t++)
				all &= total[t] > last[t];
			if (!all && workers > 1)
				sched_yield();	/* the workers may need this CPU */
		}
		if (all)
			lat[n++] = now_us() - t0;
		else
			timeouts++;
		mon_deactivate();
		mon_cond_read(gen, last, NULL, workers, NULL, NULL);
	}
	stop = 1;
	for (int t = 0; t < workers; t++)
		pthread_join(th[t], NULL);
	qsort(lat, (size_t)n, sizeof(lat[0]), cmp);
	if (n) {
		printf("switch_latency_us_p50_%dt: %.0f\n", workers, lat[n / 2]);
		printf("switch_latency_us_p99_%dt: %.0f\n", workers, lat[(n * 99) / 100]);
		printf("switch_latency_us_max_%dt: %.0f\n", workers, lat[n - 1]);
	}
	printf("switch_timeouts_%dt: %d\n", workers, timeouts);
	return 0;
}
