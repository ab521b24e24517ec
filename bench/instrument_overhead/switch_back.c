/*
 * switch_back.c - the dual path's way back (docs/dual-path.md): a worker
 * runs one call of a loop nest for the whole run (an outer loop of sweeps
 * over 4,096 doubles, counting its outer iterations). The main thread
 * measures the worker's outer iterations per second clean, switches the
 * count backend on for ROUNDS of 10 ms and off again, and after each switch
 * off (10 ms later) measures the rate again: back on the clean body it
 * recovers the clean rate; left in the instrumented body (hooks dormant)
 * until the call returns, it stays several times slower.
 *
 * usage: switch_back (prints back_rate_ratio_p50, _min: the rate after a
 * switch off over the clean rate, median and worst of ROUNDS)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mon.h"

#define N 4096
#define ROUNDS 11

static double x[N], y[N];
static volatile long progress;
static volatile int stop;

__attribute__((noinline)) static void nest(double *restrict y, const double *restrict x)
{
	for (long r = 0; !stop; r++) {
		double k = (double)(r & 7);

		for (int i = 0; i < N; i++)
			y[i] = y[i] > x[i] * k ? y[i] : x[i] * k;
		progress = r;
	}
}

static void *worker(void *arg)
{
	(void)arg;
	nest(y, x);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* the worker's outer iterations per second over secs (the main thread
 * spins: the worker has the other CPU) */
static double rate(double secs)
{
	long p0 = progress;
	double t0 = now_s();

	while (now_s() - t0 < secs)
		;
	return (double)(progress - p0) / secs;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(void)
{
	const struct timespec ms10 = { 0, 10000000 };
	double clean, r[ROUNDS];
	pthread_t th;

	for (int i = 0; i < N; i++)
		x[i] = (double)(i % 13);
	pthread_create(&th, NULL, worker, NULL);
	clean = rate(0.3);
	for (int k = 0; k < ROUNDS; k++) {
		if (mon_activate("count") != 0) {
			fprintf(stderr, "switch_back: the count backend did not activate\n");
			return 1;
		}
		nanosleep(&ms10, NULL);
		mon_deactivate();
		nanosleep(&ms10, NULL);
		r[k] = rate(0.1) / clean;
	}
	stop = 1;
	pthread_join(th, NULL);
	qsort(r, ROUNDS, sizeof(r[0]), cmp);
	printf("back_rate_ratio_p50: %.2f\nback_rate_ratio_min: %.2f\n", r[ROUNDS / 2], r[0]);
	return 0;
}
