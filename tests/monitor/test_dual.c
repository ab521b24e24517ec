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
 *
 * Then one flat loop (docs/dual-path.md, "Strip-mining"): a worker calls a
 * single loop over 4 Mi doubles again and again, alternating between two
 * arrays (y = max(y, x): the same result after any number of calls from
 * two on). 20 times the main thread switches measurement on while a call
 * on the first array runs and off at the first count: counted before the
 * call ended, the switch came inside it (the clean body's chunk test,
 * every 4,096 iterations), not at the next call. At least 10 of 20 must be inside (gcc before strip-mining: none;
 * one loses only when the main thread waits for a CPU through a ~10 ms
 * call).
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

#define FLAT_N (4L << 20)
#define FLAT_TRIES 20
static double fx[FLAT_N], fy[2][FLAT_N];
static volatile long flat_calls;	/* calls begun: call c on fy[c & 1] */
static volatile int flat_stop;

/* One flat loop: nothing inside it, vectorisable; its trip count known at
 * entry (a parameter). */
__attribute__((noinline)) static void flat(double *restrict y, const double *restrict x, long n)
{
	for (long i = 0; i < n; i++)
		y[i] = y[i] > x[i] ? y[i] : x[i];
}

static void *flat_worker(void *arg)
{
	(void)arg;
	for (long c = 0; !flat_stop || c < 2; c++) {
		flat_calls = c + 1;
		flat(fy[c & 1], fx, FLAT_N);
	}
	return NULL;
}

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
	for (long i = 0; i < FLAT_N; i++)
		fx[i] = (double)((i * 7) % 13);
	pthread_create(&th[0], NULL, flat_worker, NULL);
#ifndef DUAL_NATIVE
	{
		struct mon_range r0 = { (uintptr_t)fy[0], (uintptr_t)fy[0] + sizeof(fy[0]) };
		struct mon_cond_spec spec = { .metric = AMEBA_M_MEM_REF, .nr_ranges = 1,
					      .ranges = &r0 };
		uint64_t gen, before, after;
		int inside = 0;

		CHECK(mon_activate("count") == 0);
		CHECK(mon_cond_arm(&spec, 1, &gen) == 0);
		mon_deactivate();
		for (int k = 0; k < FLAT_TRIES; k++) {
			long c;

			/* a call on fy[0] just begun, then on until the next began */
			while (((c = flat_calls) & 1) == 0)
				;
			CHECK(mon_cond_read(gen, &before, NULL, 1, NULL, NULL) == 0);
			CHECK(mon_activate("count") == 0);
			/* off at the first count (the rest of the call runs the
			 * instrumented body, its hooks idle) or the next call */
			do
				CHECK(mon_cond_read(gen, &after, NULL, 1, NULL, NULL) == 0);
			while (after == before && flat_calls == c);
			mon_deactivate();
			CHECK(mon_cond_read(gen, &after, NULL, 1, NULL, NULL) == 0);
			inside += after > before && flat_calls == c;
			while (flat_calls == c)
				;
		}
		fprintf(stderr, "dual, flat loop: the switch came inside the call %d times of %d\n",
			inside, FLAT_TRIES);
		CHECK(inside >= FLAT_TRIES / 2);
	}
#endif
	flat_stop = 1;
	pthread_join(th[0], NULL);
	for (long i = 0; i < FLAT_N; i += 4099)
		sum += fy[0][i] + 2 * fy[1][i];
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
