/*
 * batch_tail.c - an nway window in batch mode (test strategy_served_exact_
 * batch): a heap block and a global walked a line at a time (misses) with
 * a small global summed between (hits), SCALE rounds; then, after the
 * output is written, a last loop of hits and the exit with nothing called
 * after it, so that the access batch holds the program's last accesses
 * when it exits. The window's counts must equal the oracle's exit minus
 * mark: no batch simulated among an arm's readings, and the last reading
 * after the exiting thread's batch.
 *
 *   batch_tail [SCALE]   (default 40: ~1.5 s under ameba in batch mode, as
 *                        long as the search takes; the test runs 150)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define BIG (1 << 20)		/* 8 MiB of uint64_t */
#define HEAP (1 << 18)		/* 2 MiB */
#define SMALL 256		/* 2 KiB: stays in the L1 */

static uint64_t big[BIG];
static uint64_t small[SMALL];

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 40;
	uint64_t s = 0, *h = malloc(sizeof(*h) * HEAP);

	if (!h || n <= 0)
		return 2;
	for (long i = 0; i < HEAP; i++)
		h[i] = (uint64_t)i;
	for (long r = 0; r < n; r++) {
		for (long i = 0; i < BIG; i += 8)
			s += big[i] + h[(i >> 2) & (HEAP - 1)];
		for (long k = 0; k < 2000; k++)
			for (int i = 0; i < SMALL; i++)
				s += small[i] * (uint64_t)k;
	}
	printf("batch_tail: %llu\n", (unsigned long long)s);
	fflush(stdout);
	/* the last accesses: hits, no call after them (no free: a free
	 * simulates the batch first) */
	for (int k = 0; k < 1000; k++)
		for (int i = 0; i < SMALL; i++)
			small[i] += s + (uint64_t)k;
	return 0;
}
