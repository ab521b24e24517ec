/*
 * line_tags.c - the sim backend's remembered lines carry the object of the
 * line (backend_sim.c, sim_line_fast). Accesses that hit such a line must
 * still count to the object the address belongs to now:
 *
 *  - map_a maps a page at a fixed address and accesses its first line;
 *    after munmap, map_b maps a page at the same address and accesses the
 *    same line, whose remembered entry still names map_a's (dead) object;
 *  - two globals share one line (neither holds the whole line): accesses
 *    alternate between them and must never count to the other.
 *
 * Counts (tests/sim/line_tags.expect, per object):
 *   map_a@   8 writes, 100 reads
 *   map_b@   8 writes, 200 reads
 *   pair_lo  50 reads, pair_hi 70 reads (and their 4 + 4 writes)
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

#define NOINLINE __attribute__((noinline))
#define FIXED_AT ((void *)0x310000000000ull)

/* Two 32-byte globals in one 64-byte line (built with
 * -fno-toplevel-reorder: in this order; main checks). */
volatile long pair_lo[4] __attribute__((aligned(64)));
volatile long pair_hi[4];

NOINLINE static volatile long *map_a(void)
{
	void *p = mmap(FIXED_AT, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

NOINLINE static volatile long *map_b(void)
{
	void *p = mmap(FIXED_AT, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

NOINLINE static long use(volatile long *w, int writes, int reads)
{
	long sum = 0;

	for (int i = 0; i < writes; i++)
		w[i] = i + 1;
	for (int i = 0; i < reads; i++)
		sum += w[i % 8];
	return sum;
}

int main(void)
{
	volatile long *a = map_a(), *b;
	long sum = 0;

	if (!a) {
		perror("line_tags: mmap");
		return 1;
	}
	sum += use(a, 8, 100);
	munmap((void *)a, 4096);
	b = map_b();
	if (b != a) {
		fprintf(stderr, "line_tags: the second mapping moved\n");
		return 1;
	}
	sum += use(b, 8, 200);

	if ((uintptr_t)pair_hi != (uintptr_t)pair_lo + 32) {
		fprintf(stderr, "line_tags: pair_lo %p and pair_hi %p do not share a line\n",
			(void *)pair_lo, (void *)pair_hi);
		return 1;
	}
	for (int i = 0; i < 4; i++) {
		pair_lo[i] = i;
		pair_hi[i] = -i;
	}
	for (int i = 0; i < 70; i++) {
		if (i < 50)
			sum += pair_lo[i % 4];
		sum += pair_hi[i % 4];
	}
	printf("sum=%ld\n", sum);
	munmap((void *)b, 4096);
	return 0;
}
