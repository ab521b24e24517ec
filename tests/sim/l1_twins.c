/*
 * l1_twins.c - lines 2^30 lines apart (2^36 bytes), "twins": the low
 * halves of their L1 keys agree, they share an L1 set and a line filter
 * entry (sim.h mon_sim_lf_slot: 2^30 >> 16 is a multiple of 256). The
 * assembly miss (backend_sim_x86.c) searches the L1's set on the keys' low
 * halves, then checks a candidate's whole key, and hands a twin to the C;
 * a search on the low halves alone would take the twin for the line (a
 * hit for a miss). Counted the same through the filter, its assembly miss
 * and the C (line_filter.sh) only if the twins are told apart. Each
 * round, in every one of the L1's 64 sets:
 *
 *  - the twin, then the line, then each again: both stay in the L1, and
 *    every access after the first two misses the filter (the other one
 *    took the entry) and hits the L1 - with the twin in the lower way
 *    first, then in the higher one
 *  - a write to each (E -> M), then ten other lines of the set, so that
 *    dirty twins are the victims
 *
 * Two mappings at 0x500000000000 and 2^36 bytes up (when the kernel gives
 * them); a program that cannot map there fails (exit 3) rather than test
 * less.
 *
 * usage: l1_twins [N]   (N rounds, default 300)
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define BASE 0x500000000000ull
#define TWIN (1ull << 36)	/* 2^30 lines of 64 bytes */
#define LINES 1024		/* 64 KiB a mapping: 16 lines a set */
#define SETS 64

static uint64_t *map_at(uint64_t at)
{
	void *p = mmap((void *)at, LINES * 64, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (p == MAP_FAILED || (uint64_t)p != at) {
		fprintf(stderr, "l1_twins: cannot map at %#llx\n", (unsigned long long)at);
		exit(3);
	}
	return p;
}

/* word 0 of line i of mapping m */
static inline volatile uint64_t *line(uint64_t *m, unsigned i)
{
	return (volatile uint64_t *)(m + i * 8);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 300;
	uint64_t *a = map_at(BASE), *b = map_at(BASE + TWIN);
	uint64_t sum = 0;

	for (long r = 0; r < n; r++) {
		for (unsigned s = 0; s < SETS; s++) {
			/* the twin first (the lower way), then the line; then
			 * the other way round on the set's next pair */
			sum += *line(b, s) + *line(a, s);
			sum += *line(a, s) + *line(b, s) + *line(a, s);
			sum += *line(a, s + SETS) + *line(b, s + SETS);
			sum += *line(b, s + SETS) + *line(a, s + SETS);
			*line(a, s) += r;
			*line(b, s) += sum & 7;
			sum += *line(a, s) + *line(b, s);
			/* ten more lines of the set: the dirty twins leave */
			for (unsigned k = 2; k < 12; k++)
				sum += *line((k & 1) ? b : a, s + k * SETS);
		}
	}
	printf("l1_twins: %ld rounds, sum %llu\n", n, (unsigned long long)sum);
	return 0;
}
