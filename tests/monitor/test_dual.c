/*
 * test_dual.c - the dual path (docs/dual-path.md) in a running program,
 * built by `ameba cc -O2` (gcc or clang: two bodies per function) and, with
 * -DDUAL_NATIVE, by the plain compiler as the reference.
 *
 * Four workers each run one call of a loop nest for the whole test (a
 * vectorisable sweep of 4,096 doubles until told to stop: the clean body's
 * switches are at its outer loop's back edge; y[i] = max(y[i], x[i] r%8),
 * whose result is the same after any number of sweeps from 8 on), while
 * the main thread switches measurement on and off 1,000 times (the count
 * backend; the program drives the runtime itself, so it runs with
 * AMEBA_MRI=0). In each burst the main thread runs a known loop, entered
 * after the switch: its counts must be exactly its accesses, burst after
 * burst; between bursts the same loop runs clean and counts nothing. Each
 * worker must have been counted in some burst: switched inside its one
 * call. stdout's first line is the workers' results and the known loop's,
 * which must be the native build's (the test compares).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#ifndef DUAL_NATIVE
#include "check.h"
#include "mon.h"
#endif

#define N 4096
#define WORKERS 4
#define MIN_SWEEPS 8
#define BURSTS 1000

static double wx[WORKERS][N], wy[WORKERS][N];
static double kx[N], ky[N];
static volatile int stop;
static volatile long done[WORKERS];

/* The workers' loop nest: one call for the whole run. */
__attribute__((noinline)) static void sweeps(double *restrict y, const double *restrict x,
					     volatile long *n)
{
	for (long r = 0; !stop || r < MIN_SWEEPS; r++) {
		for (int i = 0; i < N; i++) {
			double v = x[i] * (double)(r & 7);

			y[i] = y[i] > v ? y[i] : v;
		}
		*n = r + 1;
	}
}

/* The known loop: a read of y, a read of x and a write of y per element
 * (scalar: clang's instrumented body is vectorised, one hook per vector). */
__attribute__((noinline)) static void known(double *restrict y, const double *restrict x)
{
#ifdef __clang__
#pragma clang loop vectorize(disable) interleave(disable)
#endif
	for (int i = 0; i < N; i++)
		y[i] = y[i] * 0.25 + x[i];
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;

	sweeps(wy[t], wx[t], &done[t]);
	return NULL;
}

int main(void)
{
	pthread_t th[WORKERS];
	double sum = 0;

	for (int t = 0; t < WORKERS; t++)
		for (int i = 0; i < N; i++) {
			wx[t][i] = (double)((i * 7 + t) % 13);
			wy[t][i] = (double)(i % 5);
		}
	for (int i = 0; i < N; i++)
		kx[i] = (double)(i % 3);
	for (int t = 0; t < WORKERS; t++)
		pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
#ifndef DUAL_NATIVE
	{
		struct mon_range ry = { (uintptr_t)ky, (uintptr_t)ky + sizeof(ky) };
		struct mon_range rx = { (uintptr_t)kx, (uintptr_t)kx + sizeof(kx) };
		struct mon_range rw[WORKERS];
		struct mon_cond_spec specs[2 + WORKERS] = {
			{ .metric = AMEBA_M_MEM_REF, .nr_ranges = 1, .ranges = &ry },
			{ .metric = AMEBA_M_MEM_REF, .nr_ranges = 1, .ranges = &rx },
		};
		uint64_t gen, total[2 + WORKERS], last[2 + WORKERS];
		int exact = 0, quiet = 0, switched = 0;

		for (int t = 0; t < WORKERS; t++) {
			rw[t] = (struct mon_range){ (uintptr_t)wy[t], (uintptr_t)wy[t] + sizeof(wy[t]) };
			specs[2 + t] = (struct mon_cond_spec){ .metric = AMEBA_M_MEM_REF,
							       .nr_ranges = 1, .ranges = &rw[t] };
		}
		/* counters need a backend: armed while it is active */
		CHECK(mon_activate("count") == 0);
		CHECK(mon_cond_arm(specs, 2 + WORKERS, &gen) == 0);
		mon_deactivate();
		CHECK(mon_cond_read(gen, last, NULL, 2 + WORKERS, NULL, NULL) == 0);
		for (int b = 0; b < BURSTS; b++) {
			CHECK(mon_activate("count") == 0);
			known(ky, kx);
			mon_deactivate();
			CHECK(mon_cond_read(gen, total, NULL, 2 + WORKERS, NULL, NULL) == 0);
			exact += total[0] - last[0] == 2 * N && total[1] - last[1] == N;
			last[0] = total[0];
			last[1] = total[1];
			known(ky, kx);	/* clean: counts nothing */
			CHECK(mon_cond_read(gen, total, NULL, 2 + WORKERS, NULL, NULL) == 0);
			quiet += total[0] == last[0] && total[1] == last[1];
		}
		for (int t = 0; t < WORKERS; t++)
			switched += total[2 + t] > 0;
		fprintf(stderr, "dual: %d of %d bursts counted the known loop exactly, %d of %d "
			"dormant runs counted nothing; %d of %d workers switched inside their one "
			"call (sweeps so far:", exact, BURSTS, quiet, BURSTS, switched, WORKERS);
		for (int t = 0; t < WORKERS; t++)
			fprintf(stderr, " %ld", done[t]);
		fprintf(stderr, ")\n");
		CHECK(exact == BURSTS);
		CHECK(quiet == BURSTS);
		CHECK(switched == WORKERS);
	}
#else
	for (int b = 0; b < BURSTS; b++) {
		known(ky, kx);
		known(ky, kx);
	}
#endif
	stop = 1;
	for (int t = 0; t < WORKERS; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < WORKERS; t++)
		for (int i = 0; i < N; i++)
			sum += wy[t][i];
	for (int i = 0; i < N; i++)
		sum += ky[i];
	printf("%.17g\n", sum);
#ifndef DUAL_NATIVE
	return check_done();
#else
	return 0;
#endif
}
