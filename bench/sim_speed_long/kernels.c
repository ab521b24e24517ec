/*
 * kernels.c - long kernels for timing the exact simulator
 * against cachegrind where start-up does not count (bench/sim_speed_long,
 * issue 24). The sizes below are SCALE 1; run.sh runs each kernel at its
 * own SCALE, so that each takes 25-40 s under cachegrind on the
 * development VM.
 *
 *   kernels KERNEL [SCALE]
 *
 *   gemm     C += A * B, 800x800 doubles, i-j-k order (1,200 rows of C):
 *            B walked by column (an L1 miss per access on B, LL hits), A
 *            by row
 *   jacobi   5-point Jacobi on two 2000x2000 double grids (32 MiB each),
 *            60 sweeps: 5 reads + 1 write per point, streaming through LL
 *   stream   one read per 64-byte line of a 64 MiB array, 900 passes:
 *            every access misses the L1 and the LL
 *   rmw      a[h] += 1 at xorshift-random h over 16 MiB of counters, 120 M
 *            times: random read-modify-write, LL misses
 *   chase    a pointer chase through a random cycle (Sattolo) over 1 MiB,
 *            300 M steps: one dependent load per step, L1 misses, LL hits
 *   hashtab  open-addressing hash table (1 Mi slots of key and value, 16
 *            MiB): 90 M inserts and lookups of random keys, linear probing
 *
 * and two with two threads (pthreads; cachegrind runs them one at a time,
 * the simulator in time order):
 *
 *   jacobi_2t  jacobi's grids and sweeps, each thread updating half of the
 *              rows, a barrier after every sweep (the rows at the seam are
 *              read by both)
 *   rmw_2t     rmw with each thread on its own 8 MiB of counters, 60 M
 *              updates each
 *
 * and one with many (not in run.sh's default list; docs/simulator.md,
 * "Many threads"):
 *
 *   sweep_32t  32 threads, each over its own 256 KiB of doubles (one 8 MiB
 *              block malloc'd by main, so that where the mapping lands
 *              does not change the LL's conflicts), 40 passes of a write
 *              of each element and a read 7 elements on: L1 hits and
 *              misses, LL hits, threads in step with no shared line
 *
 * SCALE (default 1) multiplies the repetitions: a quick check runs at a
 * fraction of a second natively with a small one. Prints one checksum line
 * (the bench compares the instrumented build's with the native one's).
 * Written the plain way other people's C is: malloc'd arrays, index loops,
 * no intrinsics.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double scale = 1.0;

static uint64_t reps(uint64_t n)
{
	uint64_t r = (uint64_t)((double)n * scale);

	return r ? r : 1;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p) {
		fprintf(stderr, "kernels: out of memory (%zu bytes)\n", n);
		exit(2);
	}
	return p;
}

static uint64_t xs(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static uint64_t gemm(void)
{
	const int n = 800;
	double *a = xmalloc(sizeof(double) * n * n), *b = xmalloc(sizeof(double) * n * n);
	double *c = xmalloc(sizeof(double) * n * n), sum = 0;
	uint64_t rows = reps(1200);

	for (int i = 0; i < n * n; i++) {
		a[i] = (double)(i % 17) * 0.25;
		b[i] = (double)(i % 13) * 0.5;
		c[i] = 0;
	}
	for (uint64_t r = 0; r < rows; r++) {
		int i = (int)(r % n);

		for (int j = 0; j < n; j++) {
			double s = c[i * n + j];

			for (int k = 0; k < n; k++)
				s += a[i * n + k] * b[k * n + j];
			c[i * n + j] = s;
		}
	}
	for (int i = 0; i < n * n; i++)
		sum += c[i];
	free(a);
	free(b);
	free(c);
	return (uint64_t)sum;
}

/* One sweep of rows [first, last) of the 5-point Jacobi: u into v */
static void jacobi_rows(const double *u, double *v, int n, int first, int last)
{
	for (int i = first; i < last; i++)
		for (int j = 1; j < n - 1; j++)
			v[i * n + j] = 0.2 * (u[i * n + j] + u[(i - 1) * n + j] + u[(i + 1) * n + j] +
					      u[i * n + j - 1] + u[i * n + j + 1]);
}

static uint64_t jacobi(void)
{
	const int n = 2000;
	double *u = xmalloc(sizeof(double) * n * n), *v = xmalloc(sizeof(double) * n * n);
	double sum = 0;
	uint64_t sweeps = reps(60);

	for (int i = 0; i < n * n; i++)
		u[i] = v[i] = (double)((i * 7) % 101);
	for (uint64_t s = 0; s < sweeps; s++) {
		jacobi_rows(u, v, n, 1, n - 1);
		double *t = u;

		u = v;
		v = t;
	}
	for (int i = 0; i < n * n; i++)
		sum += u[i];
	free(u);
	free(v);
	return (uint64_t)sum;
}

static uint64_t stream(void)
{
	const size_t n = (64u << 20) / sizeof(uint64_t);
	uint64_t *a = xmalloc(n * sizeof(uint64_t)), sum = 0, passes = reps(900);

	for (size_t i = 0; i < n; i++)
		a[i] = i;
	for (uint64_t p = 0; p < passes; p++)
		for (size_t i = p & 7; i < n; i += 8)
			sum += a[i];
	free(a);
	return sum;
}

static uint64_t rmw(void)
{
	const size_t n = (16u << 20) / sizeof(uint64_t);
	uint64_t *a = xmalloc(n * sizeof(uint64_t)), x = 88172645463325252ull, sum = 0;
	uint64_t ops = reps(120000000);

	for (size_t i = 0; i < n; i++)
		a[i] = 0;
	for (uint64_t o = 0; o < ops; o++)
		a[xs(&x) & (n - 1)] += 1;
	for (size_t i = 0; i < n; i++)
		sum += a[i] * (i & 15);
	free(a);
	return sum;
}

static uint64_t chase(void)
{
	const uint32_t n = (1u << 20) / sizeof(uint32_t);
	uint32_t *next = xmalloc(n * sizeof(uint32_t)), p = 0;
	uint64_t x = 0x9e3779b97f4a7c15ull, sum = 0, steps = reps(300000000);

	for (uint32_t i = 0; i < n; i++)
		next[i] = i;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(xs(&x) % i), t = next[i];

		next[i] = next[j];
		next[j] = t;
	}
	for (uint64_t s = 0; s < steps; s++) {
		p = next[p];
		sum += p;
	}
	free(next);
	return sum;
}

struct slot {
	uint64_t key;	/* 0: empty */
	uint64_t val;
};

static uint64_t hashtab(void)
{
	const size_t n = 1u << 20;
	struct slot *t = xmalloc(n * sizeof(*t));
	uint64_t x = 0x2545f4914f6cdd1dull, hits = 0, ops = reps(90000000);

	memset(t, 0, n * sizeof(*t));
	for (uint64_t o = 0; o < ops; o++) {
		/* keys from a pool of 700k: the table stays below 70% full */
		uint64_t key = xs(&x) % 700000 + 1;
		size_t h = (size_t)(key * 0x9e3779b97f4a7c15ull >> 44) & (n - 1);

		while (t[h].key && t[h].key != key)
			h = (h + 1) & (n - 1);
		if (t[h].key == key) {
			t[h].val++;
			hits++;
		} else {
			t[h].key = key;
			t[h].val = 1;
		}
	}
	for (size_t i = 0; i < n; i++)
		hits += t[i].val * (i & 3);
	free(t);
	return hits;
}

/* ---- two threads ---- */

struct half {
	pthread_barrier_t *bar;
	double *u, *v;		/* jacobi_2t: the grids */
	uint64_t *a;		/* rmw_2t: the thread's counters */
	int n, first, last;	/* jacobi_2t: the rows [first, last) it updates */
	uint64_t reps, seed;
	double out;
};

static void *jacobi_half(void *p)
{
	struct half *h = p;
	double *u = h->u, *v = h->v;
	const int n = h->n;

	for (uint64_t s = 0; s < h->reps; s++) {
		jacobi_rows(u, v, n, h->first, h->last);
		double *t = u;

		u = v;
		v = t;
		pthread_barrier_wait(h->bar);
	}
	h->out = 0;
	for (int i = h->first; i < h->last; i++)
		for (int j = 0; j < n; j++)
			h->out += u[i * n + j];
	return NULL;
}

static void *rmw_half(void *p)
{
	struct half *h = p;
	const size_t n = (8u << 20) / sizeof(uint64_t);
	uint64_t *a = h->a, x = h->seed;

	for (size_t i = 0; i < n; i++)
		a[i] = 0;
	for (uint64_t o = 0; o < h->reps; o++)
		a[xs(&x) & (n - 1)] += 1;
	h->out = 0;
	for (size_t i = 0; i < n; i++)
		h->out += (double)(a[i] * (i & 15));
	return NULL;
}

/* Runs fn on two threads with h[0], h[1]; their outs' sum */
static uint64_t two(void *(*fn)(void *), struct half h[2])
{
	pthread_barrier_t bar;
	pthread_t t[2];

	pthread_barrier_init(&bar, NULL, 2);
	for (int i = 0; i < 2; i++) {
		h[i].bar = &bar;
		if (pthread_create(&t[i], NULL, fn, &h[i])) {
			fprintf(stderr, "kernels: pthread_create failed\n");
			exit(2);
		}
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&bar);
	return (uint64_t)(h[0].out + h[1].out);
}

static uint64_t jacobi_2t(void)
{
	const int n = 2000;
	double *u = xmalloc(sizeof(double) * n * n), *v = xmalloc(sizeof(double) * n * n);
	struct half h[2] = {
		{ .u = u, .v = v, .n = n, .first = 1, .last = n / 2, .reps = reps(60) },
		{ .u = u, .v = v, .n = n, .first = n / 2, .last = n - 1, .reps = reps(60) },
	};
	uint64_t sum;

	for (int i = 0; i < n * n; i++)
		u[i] = v[i] = (double)((i * 7) % 101);
	sum = two(jacobi_half, h);
	free(u);
	free(v);
	return sum;
}

static uint64_t rmw_2t(void)
{
	struct half h[2] = {
		{ .a = xmalloc(8u << 20), .reps = reps(60000000), .seed = 88172645463325252ull },
		{ .a = xmalloc(8u << 20), .reps = reps(60000000), .seed = 0x2545f4914f6cdd1dull },
	};
	uint64_t sum = two(rmw_half, h);

	free(h[0].a);
	free(h[1].a);
	return sum;
}

#define SWEEP_THREADS 32
#define SWEEP_N (256 * 1024 / sizeof(double))

struct sweep {
	double *a;
	uint64_t reps, id;
	double out;
};

static void *sweep_one(void *p)
{
	struct sweep *w = p;
	double *a = w->a, s = 0;

	for (uint64_t r = 0; r < w->reps; r++)
		for (size_t i = 0; i < SWEEP_N; i++) {
			a[i] = (double)(i * r + w->id);
			s += a[(i * 7) % SWEEP_N];
		}
	w->out = s;
	return NULL;
}

static uint64_t sweep_32t(void)
{
	struct sweep w[SWEEP_THREADS];
	pthread_t t[SWEEP_THREADS];
	double *all = xmalloc(SWEEP_THREADS * SWEEP_N * sizeof(double)), sum = 0;

	for (int i = 0; i < SWEEP_THREADS; i++)
		w[i] = (struct sweep){ .a = all + i * SWEEP_N, .reps = reps(40), .id = (uint64_t)i };
	for (int i = 0; i < SWEEP_THREADS; i++)
		if (pthread_create(&t[i], NULL, sweep_one, &w[i])) {
			fprintf(stderr, "kernels: pthread_create failed\n");
			exit(2);
		}
	for (int i = 0; i < SWEEP_THREADS; i++) {
		pthread_join(t[i], NULL);
		sum += w[i].out;
	}
	free(all);
	return (uint64_t)sum;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		uint64_t (*fn)(void);
	} k[] = {
		{ "gemm", gemm }, { "jacobi", jacobi }, { "stream", stream },
		{ "rmw", rmw },	  { "chase", chase },	{ "hashtab", hashtab },
		{ "jacobi_2t", jacobi_2t }, { "rmw_2t", rmw_2t }, { "sweep_32t", sweep_32t },
	};

	if (argc < 2 || argc > 3 || (argc == 3 && (scale = atof(argv[2])) <= 0)) {
		fprintf(stderr, "usage: %s gemm|jacobi|stream|rmw|chase|hashtab|jacobi_2t|rmw_2t|sweep_32t"
			" [SCALE > 0]\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		if (!strcmp(argv[1], k[i].name)) {
			printf("%s %llu\n", k[i].name, (unsigned long long)k[i].fn());
			return 0;
		}
	fprintf(stderr, "%s: unknown kernel %s\n", argv[0], argv[1]);
	return 2;
}
