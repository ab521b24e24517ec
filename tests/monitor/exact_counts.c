/*
 * exact_counts.c - a program whose per-object, per-thread read and write
 * counts are worked out by hand (exact_counts.expect holds them).
 *
 * Every counted access goes through a volatile pointer, so each source-level
 * access is exactly one instrumented access at any optimisation level; every
 * array is aligned so that no 8-byte access straddles a cache line. Counting
 * rules (docs/oracle.md): one access per cache line touched; an atomic
 * read-modify-write is one access that both reads and writes; mem and str
 * functions count one access per line of each range.
 *
 * Threads: T0 = main, T1 and T2 = the workers, created in that order.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

long garr[64] __attribute__((aligned(64)));		/* T0: 64 writes, 128 reads */
static int sarr[100] __attribute__((aligned(64)));	/* T0: 100 writes */
long shared_counter __attribute__((aligned(64)));	/* T1, T2: 500 atomic RMW each */

NOINLINE static long *alloc_a(void)
{
	return malloc(100 * sizeof(long));
}

NOINLINE static int *alloc_zeroed(void)
{
	return calloc(50, sizeof(int));
}

NOINLINE static long *alloc_small(void)
{
	return malloc(16 * sizeof(long));
}

NOINLINE static long *grow(long *p)
{
	return realloc(p, 32 * sizeof(long));
}

NOINLINE static void *alloc_aligned(size_t n)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, n))
		return NULL;
	return p;
}

NOINLINE static long *worker_alloc(void)
{
	return malloc(1000 * sizeof(long));
}

NOINLINE static char *first_block(void)
{
	return malloc(64);
}

/* A different size from first_block, so that no compiler folds the two. */
NOINLINE static char *second_block(void)
{
	return malloc(72);
}

static void *worker(void *arg)
{
	volatile long *mine = worker_alloc();	/* T1/T2: 1000 writes on its own block */

	(void)arg;
	for (int i = 0; i < 1000; i++)
		mine[i] = i;
	for (int i = 0; i < 500; i++)
		__atomic_fetch_add(&shared_counter, 1, __ATOMIC_RELAXED);
	long v = mine[999];
	free((void *)mine);
	return (void *)v;
}

int main(void)
{
	volatile long *g = garr;
	volatile int *s = sarr;
	long sum = 0;

	for (int i = 0; i < 64; i++)
		g[i] = i;
	for (int r = 0; r < 2; r++)
		for (int i = 0; i < 64; i++)
			sum += g[i];
	for (int i = 0; i < 100; i++)
		s[i] = i;

	/* Three blocks of one site: the bin alloc_a gets 300 writes. */
	long *a[3];
	for (int b = 0; b < 3; b++) {
		volatile long *p = a[b] = alloc_a();
		for (int i = 0; i < 100; i++)
			p[i] = b + i;
	}

	volatile int *z = alloc_zeroed();	/* 50 reads */
	for (int i = 0; i < 50; i++)
		sum += z[i];

	volatile long *small = alloc_small();	/* 16 writes on the malloc'd block */
	for (int i = 0; i < 16; i++)
		small[i] = i;
	volatile long *big = grow((long *)small);	/* a new object: 32 writes */
	for (int i = 0; i < 32; i++)
		big[i] = i;

	/* memcpy and memset on 64-byte aligned blocks. */
	char *src = alloc_aligned(4096), *dst = alloc_aligned(4096);
	volatile long *srcl = (long *)src;
	for (int i = 0; i < 512; i++)		/* 512 writes on src */
		srcl[i] = i;
	memcpy(dst, src, 256);			/* src: 4 reads, dst: 4 writes */
	memset(dst + 256, 7, 1000);		/* dst: 16 writes (lines 4..19) */

	/* Free and reuse: two distinct objects, one write each. */
	volatile char *f1 = first_block();
	f1[0] = 1;
	free((void *)f1);
	volatile char *f2 = second_block();
	f2[0] = 2;

	pthread_t th[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (int i = 0; i < 2; i++) {
		void *ret;
		pthread_join(th[i], &ret);
		sum += (long)ret;
	}

	printf("sum=%ld counter=%ld dst[300]=%d\n", sum, shared_counter, dst[300]);
	for (int b = 0; b < 3; b++)
		free(a[b]);
	free((void *)z);
	free((void *)big);
	free(src);
	free(dst);
	free((void *)f2);
	return 0;
}
