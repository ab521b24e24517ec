/*
 * switch.c - how long a request to measure takes to reach a running thread
 * (docs/dual-path.md): built by `ameba cc -O2` (gcc or clang) only (it
 * drives the runtime itself; run it with AMEBA_MRI=0).
 *
 * usage: switch [WORKERS [nest|flat]]
 *
 * W workers (default 1, so that on a 2-CPU machine each runs on a CPU of its
 * own beside the main thread) call one kernel over and over, each call a few
 * milliseconds long:
 *   nest  a loop nest: 500 vectorisable sweeps of 4,096 doubles (a few
 *         microseconds each, clean);
 *   flat  one vectorisable loop over 8 Mi doubles: no loop inside it, the
 *         case a test at outer loops alone cannot reach.
 * The main thread switches the count backend on 1,000 times (flat: 400),
 * each time waiting until every worker has made an access counted there (a
 * counter on each worker's output array), switches it off again, waits
 * until every worker has begun a new call (so that each switch finds the
 * workers on the clean path, whichever way back the compiler's dual path
 * has) and pauses 0.2-2 ms. Two latencies per switch, from the switch to the
 * last worker's first counted access as the main thread sees it (it polls
 * every 50 us or so):
 *   wall  clock time, the scheduler's delays included when the threads
 *         outnumber the CPUs;
 *   cpu   the CPU time that worker ran meanwhile: how much of its work went
 *         unmeasured, which no scheduler delay inflates.
 * The main thread asks for SCHED_FIFO (root only; without it the polling
 * competes with the workers). Prints, for MODE and W:
 *   switch_latency_us_{p50,p99,max}_<mode>_<W>t   wall
 *   switch_cpu_us_{p50,p99,max}_<mode>_<W>t       cpu
 *   switch_timeouts_<mode>_<W>t                    switches that waited 1 s in vain
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mon.h"

#define N 4096
#define NEST_SWEEPS 500
#define FLAT_N (8u << 20)
#define WORKERS_MAX 16

static double wx[WORKERS_MAX][N], wy[WORKERS_MAX][N];
static double *fx[WORKERS_MAX], *fy[WORKERS_MAX];
static volatile int stop;
static volatile uint64_t calls[WORKERS_MAX];
static int flat;

static double now_us(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

__attribute__((noinline)) static void nest(double *restrict y, const double *restrict x, long r0)
{
	for (long r = r0; r < r0 + NEST_SWEEPS; r++)
		for (int i = 0; i < N; i++)
			y[i] = y[i] * 0.5 + x[i] * (double)(r & 7);
}

__attribute__((noinline)) static void flat_loop(double *restrict y, const double *restrict x,
						double k)
{
	for (unsigned i = 0; i < FLAT_N; i++)
		y[i] = y[i] * 0.5 + x[i] * k;
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;

	for (long c = 0; !stop; c++) {
		if (flat)
			flat_loop(fy[t], fx[t], (double)(c & 7));
		else
			nest(wy[t], wx[t], c * NEST_SWEEPS);
		calls[t]++;
	}
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, const char *mode, int w, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp);
	printf("switch_%s_us_p50_%s_%dt: %.0f\n", what, mode, w, v[n / 2]);
	printf("switch_%s_us_p99_%s_%dt: %.0f\n", what, mode, w, v[(n * 99) / 100]);
	printf("switch_%s_us_max_%s_%dt: %.0f\n", what, mode, w, v[n - 1]);
}

int main(int argc, char **argv)
{
	static double lat[1000], cpu[1000];
	struct mon_range r[WORKERS_MAX];
	struct mon_cond_spec specs[WORKERS_MAX];
	struct sched_param fifo = { .sched_priority = 1 };
	pthread_t th[WORKERS_MAX];
	clockid_t clk[WORKERS_MAX];
	uint64_t gen, total[WORKERS_MAX], last[WORKERS_MAX] = { 0 };
	unsigned seed = 12345;
	int n = 0, timeouts = 0, switches, workers = argc > 1 ? atoi(argv[1]) : 1;
	const char *mode = argc > 2 ? argv[2] : "nest";

	flat = !strcmp(mode, "flat");
	if (workers < 1 || workers > WORKERS_MAX || (!flat && strcmp(mode, "nest"))) {
		fprintf(stderr, "usage: switch [WORKERS 1..%d [nest|flat]]\n", WORKERS_MAX);
		return 2;
	}
	switches = flat ? 400 : 1000;

	for (int t = 0; t < workers; t++) {
		double *out = wy[t];
		size_t bytes = sizeof(wy[t]);

		if (flat) {
			fx[t] = calloc(FLAT_N, sizeof(double));
			fy[t] = calloc(FLAT_N, sizeof(double));
			if (!fx[t] || !fy[t]) {
				fprintf(stderr, "switch: out of memory\n");
				return 1;
			}
			out = fy[t];
			bytes = FLAT_N * sizeof(double);
		}
		r[t] = (struct mon_range){ (uintptr_t)out, (uintptr_t)out + bytes };
		specs[t] = (struct mon_cond_spec){ .metric = AMEBA_M_MEM_REF, .nr_ranges = 1,
						   .ranges = &r[t] };
		pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
		pthread_getcpuclockid(th[t], &clk[t]);
	}
	/* after the workers are made: they would inherit it */
	pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo); /* best effort */
	/* counters need a backend: armed while it is active */
	if (mon_activate("count") || mon_cond_arm(specs, workers, &gen)) {
		fprintf(stderr, "switch: cannot arm the counters on the count backend\n");
		return 1;
	}
	mon_deactivate();
	mon_cond_read(gen, last, NULL, workers, NULL, NULL);
	for (int s = 0; s < switches; s++) {
		struct timespec pause = { 0, 200000 + (long)(rand_r(&seed) % 1800000) };
		struct timespec poll = { 0, 50000 };
		double t0, c0[WORKERS_MAX], worst = 0;
		uint64_t began[WORKERS_MAX];
		int seen[WORKERS_MAX] = { 0 }, left = workers;

		/* every worker on the clean path: a call begun since the last switch */
		for (int t = 0; t < workers; t++)
			began[t] = calls[t];
		for (int t = 0; t < workers; t++)
			while (calls[t] == began[t])
				nanosleep(&poll, NULL);
		nanosleep(&pause, NULL);
		for (int t = 0; t < workers; t++)
			c0[t] = now_us(clk[t]);
		t0 = now_us(CLOCK_MONOTONIC);
		if (mon_activate("count")) {
			fprintf(stderr, "switch: cannot activate the count backend\n");
			return 1;
		}
		while (left && now_us(CLOCK_MONOTONIC) - t0 < 1e6) {
			mon_cond_read(gen, total, NULL, workers, NULL, NULL);
			for (int t = 0; t < workers; t++)
				if (!seen[t] && total[t] > last[t]) {
					double c = now_us(clk[t]) - c0[t];

					seen[t] = 1;
					left--;
					worst = c > worst ? c : worst;
				}
			if (left)
				nanosleep(&poll, NULL);
		}
		if (!left) {
			lat[n] = now_us(CLOCK_MONOTONIC) - t0;
			cpu[n++] = worst;
		} else {
			timeouts++;
		}
		mon_deactivate();
		mon_cond_read(gen, last, NULL, workers, NULL, NULL);
	}
	stop = 1;
	for (int t = 0; t < workers; t++)
		pthread_join(th[t], NULL);
	if (n) {
		report("latency", mode, workers, lat, n);
		report("cpu", mode, workers, cpu, n);
	}
	printf("switch_timeouts_%s_%dt: %d\n", mode, workers, timeouts);
	return 0;
}
