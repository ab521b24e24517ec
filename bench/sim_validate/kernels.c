/*
 * kernels.c - memory kernels for comparing the cache simulator with
 * cachegrind (bench/sim_validate/run.sh).
 *
 *   kernels dense|strided|random|stencil|chase|dense_2t|stencil_2t
 *
 * The first five are single-threaded. dense_2t and stencil_2t run two
 * threads (the main thread and one more): cachegrind runs them one at a
 * time, the simulator in parallel; they are timed, never compared for miss
 * counts (cachegrind has one D1 for both threads, the simulator one each).
 *
 * Prints one checksum line. Every array is mapped at a fixed address and
 * initialised by loops in this file (no memset/memcpy: only this file's
 * accesses are compared), so the instrumented build and the native build
 * under cachegrind see the same lines in the same sets.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/*
 * Arrays at fixed addresses (MAP_FIXED_NOREPLACE from 0x300000000000 up,
 * 4 MiB + 8 KiB apart), so that both runs map every line to the same
 * cache set: an 8 MiB LL's miss count depends on the arrays' relative
 * offsets.
 */
static void *xalloc(size_t sz)
{
	static uintptr_t next = 0x300000000000ull;
	size_t len = (sz + 4095) / 4096 * 4096;
	void *p = mmap((void *)next, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (p == MAP_FAILED) {
		perror("kernels: mmap");
		exit(2);
	}
	next += (len + (4u << 20) - 1) / (4u << 20) * (4u << 20) + 8192;
	return p;
}

static uint64_t xs(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* c = a + b over three 4 MiB arrays (12 MiB > an 8 MiB LL), 4 passes. */
__attribute__((noinline)) static uint64_t dense(void)
{
	const size_t n = 512 * 1024;
	uint64_t *a = xalloc(n * 8), *b = xalloc(n * 8), *c = xalloc(n * 8), sum = 0;

	for (size_t i = 0; i < n; i++) {
		a[i] = i;
		b[i] = 3 * i;
	}
	for (int pass = 0; pass < 4; pass++)
		for (size_t i = 0; i < n; i++)
			c[i] = a[i] + b[i] + (uint64_t)pass;
	for (size_t i = 0; i < n; i += 7)
		sum += c[i];
	return sum;
}

/* Every 9th line (576 B) of 24 MiB, 6 passes, read-modify-write. */
__attribute__((noinline)) static uint64_t strided(void)
{
	const size_t bytes = 24u << 20, stride = 576 / 8;
	uint64_t *a = xalloc(bytes), sum = 0;

	for (size_t i = 0; i < bytes / 8; i += stride)
		a[i] = i;
	for (int pass = 0; pass < 6; pass++)
		for (size_t i = (size_t)pass; i < bytes / 8; i += stride)
			a[i - (size_t)pass] += 1;
	for (size_t i = 0; i < bytes / 8; i += stride)
		sum += a[i];
	return sum;
}

/* 3 M random read-modify-writes in 32 MiB. */
__attribute__((noinline)) static uint64_t random_rw(void)
{
	const size_t n = 4u << 20;
	uint64_t *a = xalloc(n * 8), x = 88172645463325252ull, sum = 0;

	for (size_t i = 0; i < n; i += 8)
		a[i] = i;
	for (int i = 0; i < 3000000; i++) {
		uint64_t j = xs(&x) & (n - 1);
		a[j] += j;
		sum += a[(j * 31) & (n - 1)];
	}
	return sum;
}

/* 5-point Jacobi sweeps on 768 x 768 doubles (two 4.5 MiB grids). */
__attribute__((noinline)) static uint64_t stencil(void)
{
	const size_t n = 768;
	double *u = xalloc(n * n * 8), *v = xalloc(n * n * 8);
	uint64_t sum = 0;

	for (size_t i = 0; i < n * n; i++) {
		u[i] = (double)(i % 1000);
		v[i] = 0;
	}
	for (int it = 0; it < 5; it++) {
		for (size_t i = 1; i < n - 1; i++)
			for (size_t j = 1; j < n - 1; j++)
				v[i * n + j] = 0.25 * (u[(i - 1) * n + j] + u[(i + 1) * n + j] +
						       u[i * n + j - 1] + u[i * n + j + 1]);
		double *t = u;
		u = v;
		v = t;
	}
	for (size_t i = 0; i < n * n; i += 97)
		sum += (uint64_t)u[i];
	return sum;
}

struct node {
	struct node *next;
	uint64_t val;
	uint64_t pad[6];	/* one node per 64-byte line */
};

/* 4 M steps around a random cycle through 256 K nodes (16 MiB). */
__attribute__((noinline)) static uint64_t chase(void)
{
	const size_t n = 256 * 1024;
	struct node *nodes = xalloc(n * sizeof(struct node));
	uint32_t *perm = xalloc(n * 4);
	uint64_t x = 2463534242ull, sum = 0;

	for (size_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) {	/* Fisher-Yates */
		size_t j = xs(&x) % (i + 1);
		uint32_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (size_t i = 0; i < n; i++) {
		nodes[perm[i]].next = &nodes[perm[(i + 1) % n]];
		nodes[perm[i]].val = i;
	}
	struct node *p = &nodes[perm[0]];
	for (int i = 0; i < 4000000; i++) {
		sum += p->val;
		p = p->next;
	}
	return sum;
}

/* ---- two threads: the main thread runs half, one more thread the other ---- */

static pthread_barrier_t mt_barrier;

struct mt_arg {
	int half;		/* 0 or 1 */
	void *p;		/* the kernel's shared state */
	uint64_t sum;
};

/* Runs fn(&arg[0]) on the calling thread and fn(&arg[1]) on a new one. */
static void run_2t(void *(*fn)(void *), struct mt_arg arg[2])
{
	pthread_t th;

	pthread_barrier_init(&mt_barrier, NULL, 2);
	if (pthread_create(&th, NULL, fn, &arg[1])) {
		perror("kernels: pthread_create");
		exit(2);
	}
	fn(&arg[0]);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&mt_barrier);
}

/* dense on each half of the arrays: no line is shared. */
struct dense_2t_state {
	uint64_t *a, *b, *c;
	size_t n;
};

static void *dense_2t_half(void *p)
{
	struct mt_arg *arg = p;
	struct dense_2t_state *st = arg->p;
	size_t lo = arg->half * (st->n / 2), hi = lo + st->n / 2;
	uint64_t *a = st->a, *b = st->b, *c = st->c, sum = 0;

	for (size_t i = lo; i < hi; i++) {
		a[i] = i;
		b[i] = 3 * i;
	}
	pthread_barrier_wait(&mt_barrier);
	for (int pass = 0; pass < 4; pass++)
		for (size_t i = lo; i < hi; i++)
			c[i] = a[i] + b[i] + (uint64_t)pass;
	for (size_t i = lo; i < hi; i += 7)
		sum += c[i];
	arg->sum = sum;
	return NULL;
}

/* c = a + b over three 8 MiB arrays, each thread on its own half. */
__attribute__((noinline)) static uint64_t dense_2t(void)
{
	const size_t n = 1024 * 1024;
	struct dense_2t_state st = { xalloc(n * 8), xalloc(n * 8), xalloc(n * 8), n };
	struct mt_arg arg[2] = { { 0, &st, 0 }, { 1, &st, 0 } };

	run_2t(dense_2t_half, arg);
	return arg[0].sum + arg[1].sum;
}

/* stencil with the rows split between the threads: the rows next to the
 * split are read by both (coherence traffic), a barrier after each sweep. */
struct stencil_2t_state {
	double *u, *v;
	size_t n;
};

static void *stencil_2t_half(void *p)
{
	struct mt_arg *arg = p;
	struct stencil_2t_state *st = arg->p;
	const size_t n = st->n;
	size_t lo = arg->half ? n / 2 : 1, hi = arg->half ? n - 1 : n / 2;
	double *u = st->u, *v = st->v;

	for (size_t i = (arg->half ? n / 2 : 0) * n; i < (arg->half ? n : n / 2) * n; i++) {
		u[i] = (double)(i % 1000);
		v[i] = 0;
	}
	pthread_barrier_wait(&mt_barrier);
	for (int it = 0; it < 5; it++) {
		for (size_t i = lo; i < hi; i++)
			for (size_t j = 1; j < n - 1; j++)
				v[i * n + j] = 0.25 * (u[(i - 1) * n + j] + u[(i + 1) * n + j] +
						       u[i * n + j - 1] + u[i * n + j + 1]);
		double *t = u;
		u = v;
		v = t;
		pthread_barrier_wait(&mt_barrier);
	}
	arg->sum = 0;
	for (size_t i = lo * n; i < hi * n; i += 97)
		arg->sum += (uint64_t)u[i];
	return NULL;
}

/* 5-point Jacobi sweeps on 1024 x 1024 doubles (two 8 MiB grids). */
__attribute__((noinline)) static uint64_t stencil_2t(void)
{
	const size_t n = 1024;
	struct stencil_2t_state st = { xalloc(n * n * 8), xalloc(n * n * 8), n };
	struct mt_arg arg[2] = { { 0, &st, 0 }, { 1, &st, 0 } };

	run_2t(stencil_2t_half, arg);
	return arg[0].sum + arg[1].sum;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		uint64_t (*fn)(void);
	} k[] = {
		{ "dense", dense }, { "strided", strided }, { "random", random_rw },
		{ "stencil", stencil }, { "chase", chase },
		{ "dense_2t", dense_2t }, { "stencil_2t", stencil_2t },
	};

	for (size_t i = 0; argc == 2 && i < sizeof(k) / sizeof(k[0]); i++) {
		if (strcmp(argv[1], k[i].name) == 0) {
			printf("%s %llu\n", k[i].name, (unsigned long long)k[i].fn());
			return 0;
		}
	}
	fprintf(stderr, "usage: kernels dense|strided|random|stencil|chase|dense_2t|stencil_2t\n");
	return 2;
}
