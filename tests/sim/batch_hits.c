/*
 * batch_hits.c - L1 hits after a first pass: a 16 KiB array (half a 32 KiB
 * L1) summed 400 times, so that no full batch of accesses misses more than
 * one access in eight (the first pass: a miss per 64-byte line of 8-byte
 * words). Test sim_batch: the access batch never rests on it.
 */
#include <stdint.h>
#include <stdio.h>

static uint64_t a[2048];

int main(void)
{
	uint64_t sum = 0;

	for (int i = 0; i < 2048; i++)
		a[i] = (uint64_t)i * 3;
	for (int r = 0; r < 400; r++)
		for (int i = 0; i < 2048; i++)
			sum += a[i] ^ (uint64_t)r;
	printf("%llu\n", (unsigned long long)sum);
	return 0;
}
