/*
 * kernels.c - the workloads of bench/instrument_overhead: what the access
 * hooks cost when the runtime is dormant (no analysis attached).
 *
 *   kernels dense   5-point Jacobi stencil on two 256x256 double grids
 *                   (1 MiB, L2-resident), 600 sweeps: 5 reads + 1 write per
 *                   point, the worst case for per-access hooks
 *   kernels chase   pointer chase through a random cyclic permutation of
 *                   32 MiB (Sattolo), 1 dependent load per step: latency-
 *                   bound, where a hook should hide behind the cache miss
 *   kernels mt      2 threads, each the dense stencil on its own grids
 *   kernels flat    flat loops, the ones gcc's dual path strip-mines
 *                   (docs/dual-path.md): an axpy over 32 Ki doubles
 *                   (L2-resident) of a constant count and one of a count
 *                   known only at the call, and a sum, 1,500 calls each:
 *                   2 reads + 1 write, or 1 read, per element
 *
 * An optional second argument multiplies the sweeps or the steps (run.sh
 * times dormant builds at 16x dense, 8x mt, 2x chase, 4x flat, so that each native
 * run lasts 0.5-2 s, and the active run at 1x).
 *
 * Prints "<cpu seconds> <checksum> <accesses>" for the timed part only (setup
 * excluded): the checksum lets the bench script check that every build
 * computed the same thing; accesses is the number of source-level memory
 * accesses timed on one thread (mt: per thread, as the two run side by
 * side). Sizes are fixed (per scale) so that runs compare.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GRID 256
#define SWEEPS 600
#define CHASE_BYTES (32u << 20)
#define CHASE_STEPS (4u << 20)

/*
 * CPU time of the process (all threads), not wall time: the machines this
 * runs on are shared, and CPU time is far less disturbed by other load.
 * For mt it is the sum over both workers.
 */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- dense: Jacobi sweeps, a and b swap roles ---- */

/* 5 reads + 1 write per interior point and sweep, then one read per cell */
#define DENSE_ACCESSES \
	((uint64_t)SWEEPS * scale * (GRID - 2) * (GRID - 2) * 6 + (uint64_t)GRID * GRID)

/* the kernels' lengths are multiplied by this (argv[2], default 1) */
static unsigned scale = 1;

struct grids {
	double a[GRID][GRID], b[GRID][GRID];
};

static void grids_init(struct grids *g, int seed)
{
	for (int i = 0; i < GRID; i++)
		for (int j = 0; j < GRID; j++) {
			g->a[i][j] = (double)((i * 31 + j * 17 + seed) % 101);
			g->b[i][j] = g->a[i][j];
		}
}

static __attribute__((noinline)) void sweep(double (*restrict dst)[GRID],
					    double (*restrict src)[GRID])
{
	for (int i = 1; i < GRID - 1; i++)
		for (int j = 1; j < GRID - 1; j++)
			dst[i][j] = 0.2 * (src[i][j] + src[i - 1][j] + src[i + 1][j] +
					   src[i][j - 1] + src[i][j + 1]);
}

static double stencil(struct grids *g)
{
	double sum = 0;

	for (unsigned s = 0; s < SWEEPS * scale; s += 2) {
		sweep(g->b, g->a);
		sweep(g->a, g->b);
	}
	for (int i = 0; i < GRID; i++)
		for (int j = 0; j < GRID; j++)
			sum += g->a[i][j];
	return sum;
}

/* ---- chase ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng_next(void)
{
	/* xorshift64: deterministic, seeded above */
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int run_chase(double *secs, uint64_t *check)
{
	size_t n = CHASE_BYTES / sizeof(uint32_t);
	uint32_t *next = malloc(n * sizeof(*next));
	uint32_t p = 0;
	uint64_t sum = 0;
	double t0;

	if (!next)
		return -1;
	/* Sattolo's algorithm: one cycle through every slot */
	for (size_t i = 0; i < n; i++)
		next[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = rng_next() % i;
		uint32_t tmp = next[i];

		next[i] = next[j];
		next[j] = tmp;
	}
	t0 = now_s();
	for (uint64_t s = 0; s < (uint64_t)CHASE_STEPS * scale; s++) {
		p = next[p];
		sum += p;
	}
	*secs = now_s() - t0;
	*check = sum;
	free(next);
	return 0;
}

/* ---- mt ---- */

struct mt_arg {
	struct grids *g;
	double sum;
};

static void *mt_worker(void *p)
{
	struct mt_arg *a = p;

	a->sum = stencil(a->g);
	return NULL;
}

static int run_mt(double *secs, uint64_t *check)
{
	struct mt_arg args[2];
	pthread_t tids[2];
	double t0;

	for (int t = 0; t < 2; t++) {
		args[t].g = aligned_alloc(64, sizeof(struct grids));
		if (!args[t].g)
			return -1;
		grids_init(args[t].g, t);
	}
	t0 = now_s();
	for (int t = 0; t < 2; t++)
		if (pthread_create(&tids[t], NULL, mt_worker, &args[t]))
			return -1;
	for (int t = 0; t < 2; t++)
		pthread_join(tids[t], NULL);
	*secs = now_s() - t0;
	*check = (uint64_t)(args[0].sum * 1000) + (uint64_t)(args[1].sum * 1000);
	for (int t = 0; t < 2; t++)
		free(args[t].g);
	return 0;
}

/* ---- flat: one loop per call, no loop inside it ---- */

#define FLAT_N (32u << 10)
#define FLAT_CALLS 1500
/* per call: 3 accesses per element in each axpy, 1 in the sum */
#define FLAT_ACCESSES ((uint64_t)FLAT_CALLS * scale * FLAT_N * 7)

static __attribute__((noinline)) void flat_const(double *restrict y, const double *restrict x,
						 double k)
{
	for (unsigned i = 0; i < FLAT_N; i++)
		y[i] = y[i] * 0.5 + x[i] * k;
}

static __attribute__((noinline)) void flat_var(double *restrict y, const double *restrict x,
					       double k, long n)
{
	for (long i = 0; i < n; i++)
		y[i] = y[i] * 0.5 + x[i] * k;
}

static __attribute__((noinline)) double flat_sum(const double *x, long n)
{
	double s = 0;

	for (long i = 0; i < n; i++)
		s += x[i];
	return s;
}

static int run_flat(double *secs, uint64_t *check)
{
	double *x = aligned_alloc(64, FLAT_N * sizeof(double));
	double *y = aligned_alloc(64, FLAT_N * sizeof(double));
	volatile long n = FLAT_N;	/* a count the compiler does not know */
	double sum = 0, t0;

	if (!x || !y)
		return -1;
	for (unsigned i = 0; i < FLAT_N; i++) {
		x[i] = (double)(i % 7);
		y[i] = (double)(i % 3);
	}
	t0 = now_s();
	for (unsigned c = 0; c < FLAT_CALLS * scale; c++) {
		flat_const(y, x, (double)(c & 3));
		flat_var(y, x, (double)(c & 1), n);
		sum += flat_sum(y, n);
	}
	*secs = now_s() - t0;
	*check = (uint64_t)sum;
	free(x);
	free(y);
	return 0;
}

int main(int argc, char **argv)
{
	double secs = 0;
	uint64_t check = 0, nr_accesses = 0;
	int err;

	if (argc < 2 || argc > 3 || (argc == 3 && (scale = (unsigned)atoi(argv[2])) < 1)) {
		fprintf(stderr, "usage: %s dense|chase|mt|flat [SCALE >= 1]\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "dense")) {
		struct grids *g = aligned_alloc(64, sizeof(*g));
		double t0;

		if (!g)
			return 1;
		grids_init(g, 0);
		t0 = now_s();
		check = (uint64_t)(stencil(g) * 1000);
		secs = now_s() - t0;
		free(g);
		nr_accesses = DENSE_ACCESSES;
		err = 0;
	} else if (!strcmp(argv[1], "chase")) {
		err = run_chase(&secs, &check);
		nr_accesses = (uint64_t)CHASE_STEPS * scale;
	} else if (!strcmp(argv[1], "mt")) {
		err = run_mt(&secs, &check);
		nr_accesses = DENSE_ACCESSES;	/* per thread: they run side by side */
	} else if (!strcmp(argv[1], "flat")) {
		err = run_flat(&secs, &check);
		nr_accesses = FLAT_ACCESSES;
	} else {
		fprintf(stderr, "%s: unknown kernel %s (dense, chase, mt, flat)\n", argv[0], argv[1]);
		return 2;
	}
	if (err) {
		fprintf(stderr, "%s: out of memory\n", argv[0]);
		return 1;
	}
	printf("%.6f %llu %llu\n", secs, (unsigned long long)check, (unsigned long long)nr_accesses);
	return 0;
}
