/*
 * batch_sync.c - a single-threaded phase that crosses every point where the
 * access batch (monitor/batch.c) must be simulated before the program goes
 * on: blocks freed and their addresses reused at once (a batched access
 * must meet the block it touched, not its successor), realloc, mmap and
 * munmap of the same range, memcpy and memset (deliveries of their own),
 * atomics, a packed field across a line boundary, then a second thread and
 * more work in both (the second writes lines the first lost: tracked).
 * Prints a checksum; tests/sim/batch.sh compares its oracle with the batch
 * on and off.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct __attribute__((packed)) rec {
	char pad[61];
	uint64_t x;	/* bytes 61..68: across a 64-byte line */
};

static struct rec recs[64] __attribute__((aligned(64)));
static uint64_t shared_sum;
static long counter;

static void *worker(void *arg)
{
	uint64_t *a = arg, s = 0;

	for (int r = 0; r < 50; r++)
		for (int i = 0; i < 4096; i++) {
			s += a[i] * (uint64_t)r;
			/* eight lines main wrote last, word after word: tracked
			 * once main lost them, each word published by its first
			 * write here (the merger's filter takes the writes after
			 * it, not that one) */
			if ((i & 7) == 0)
				a[(i >> 3) & 63] += 1;
		}
	__atomic_fetch_add(&shared_sum, s, __ATOMIC_RELAXED);
	return NULL;
}

int main(void)
{
	uint64_t sum = 0;

	/* churn: each block freed and the next one (same size) at the same address */
	for (int r = 0; r < 2000; r++) {
		uint64_t *b = malloc(40 * sizeof(*b));
		for (int i = 0; i < 40; i++)
			b[i] = (uint64_t)(r + i);
		for (int i = 0; i < 40; i++)
			sum += b[i];
		b = realloc(b, 80 * sizeof(*b));
		for (int i = 40; i < 80; i++)
			b[i] = (uint64_t)i;
		sum += b[79];
		free(b);
	}
	/* the same range mapped, written, unmapped, mapped again */
	for (int r = 0; r < 20; r++) {
		uint64_t *m = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				   -1, 0);
		if (m == MAP_FAILED)
			return 1;
		for (int i = 0; i < (1 << 13); i += 3)
			m[i] = (uint64_t)(i + r);
		memset(m, r, 4096);
		for (int i = 0; i < (1 << 13); i += 5)
			sum += m[i];
		munmap(m, 1 << 16);
	}
	/* copies between heap blocks, atomics and plain accesses interleaved */
	uint64_t *a = malloc(4096 * sizeof(*a)), *c = malloc(4096 * sizeof(*c));
	if (!a || !c)
		return 1;
	for (int i = 0; i < 4096; i++)
		a[i] = (uint64_t)i * 7;
	for (int r = 0; r < 30; r++) {
		memcpy(c, a, 4096 * sizeof(*a));
		for (int i = 0; i < 4096; i += 16) {
			c[i] += a[(i * 13) & 4095];
			__atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST);
		}
		sum += c[r];
	}
	/* a packed field across a line */
	for (int r = 0; r < 100; r++)
		for (int i = 0; i < 64; i++) {
			recs[i].x += (uint64_t)(i + r);
			sum += recs[i].x;
		}
	/* a second thread: the batch stops before it starts (main's copies
	 * of a's first lines M, for the worker to take) */
	for (int i = 0; i < 64; i++)
		a[i] += 1;
	pthread_t th;
	if (pthread_create(&th, NULL, worker, a))
		return 1;
	for (int r = 0; r < 50; r++)
		for (int i = 0; i < 4096; i++)
			sum += c[i] ^ (uint64_t)r;
	pthread_join(th, NULL);
	printf("%llu %llu %ld\n", (unsigned long long)sum, (unsigned long long)shared_sum, counter);
	free(a);
	free(c);
	return 0;
}
