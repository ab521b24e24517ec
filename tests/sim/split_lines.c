/*
 * split_lines.c - blocks that share their lines with others, as malloc's
 * blocks do (the sim backend's split entries in the line filter:
 * backend_sim_lf.c mon_sim_lf_split_hit). Every access below is within a
 * line that no one object holds whole, so that through the filter each is
 * taken by a split entry or by the filter's miss; the counts must be the
 * simulator's own either way (tests/sim/split_lines.expect, and the same
 * with AMEBA_SIM_FILTER=0: line_filter.sh):
 *
 *  - state: a 40-byte block whose hot fields share its line with the
 *    block before it; N rounds of a read-modify-write of two fields
 *  - pair_a, pair_b: two 24-byte blocks in one line, read in turns
 *  - old_blk, new_blk: a block accessed, freed, and a block of the same
 *    size allocated at once at the same address and accessed: its
 *    accesses count to the new block, not to the dead one whose split
 *    entry the filter held
 *
 * Where a block falls in its line is made certain by allocating until one
 * lands there (BLOCK_AT); the misses are kept until the end, unaccessed.
 *
 * usage: split_lines [N]   (N rounds, default 200000)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
/* the allocators each their own malloc caller: not folded into one */
#define ALLOCATOR __attribute__((noinline, no_icf))

/* A block of sz bytes whose start is `off` bytes into a 64-byte line, or
 * NULL: malloc'd blocks until one lands there (glibc's are 16-byte
 * aligned), the others kept until the end so that it does not move. A
 * macro, so that malloc's caller - the block's name - is the function
 * using it */
static void *spares[256];
static int nr_spares;

#define BLOCK_AT(sz, off)                                                              \
	({                                                                             \
		void *p_ = NULL;                                                       \
		for (int tries_ = 0; tries_ < 64 && nr_spares < 256; tries_++) {       \
			p_ = malloc(sz);                                               \
			if (!p_ || ((uintptr_t)p_ & 63) == (off))                      \
				break;                                                 \
			spares[nr_spares++] = p_;                                      \
			p_ = NULL;                                                     \
		}                                                                      \
		p_;                                                                    \
	})

struct state {
	long count;	/* bytes 16-23 of the line: the block starts at 16 */
	long total;
	long spare[3];
};

ALLOCATOR static struct state *new_state(void)
{
	return BLOCK_AT(sizeof(struct state), 16);
}

ALLOCATOR static long *new_pair_a(void)
{
	return malloc(3 * sizeof(long));
}

ALLOCATOR static long *new_pair_b(void)
{
	return malloc(3 * sizeof(long));
}

ALLOCATOR static long *new_old_blk(void)
{
	return BLOCK_AT(5 * sizeof(long), 16);
}

ALLOCATOR static long *new_new_blk(void)
{
	return malloc(5 * sizeof(long));
}

NOINLINE static long run_state(struct state *s, long n)
{
	volatile struct state *v = s;

	for (long i = 0; i < n; i++)
		v->total += v->count + i;	/* 2 reads, 1 write */
	return v->total;
}

NOINLINE static long run_pair(long *a, long *b, long n)
{
	volatile long *va = a, *vb = b;
	long sum = 0;

	for (long i = 0; i < n; i++)
		sum += va[i % 3] + vb[(i + 1) % 3];	/* 1 read of each */
	return sum;
}

NOINLINE static long run_blk(long *p, long n)
{
	volatile long *v = p;
	long sum = 0;

	for (long i = 0; i < n; i++)
		sum += v[i % 5];	/* 1 read */
	return sum;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000, sum = 0;
	struct state *s = new_state();
	long *a, *b, *old, *nw;

	if (!s) {
		fprintf(stderr, "split_lines: no block at 16 bytes into a line\n");
		return 1;
	}
	s->count = 3;	/* 2 writes */
	s->total = 0;
	sum += run_state(s, n);

	/* two blocks in one line: pairs until malloc's free lists are empty and
	 * a pair falls in one line */
	for (int tries = 0;; tries++) {
		a = new_pair_a();
		b = new_pair_b();
		if (a && b && ((uintptr_t)a >> 6) == ((uintptr_t)b >> 6))
			break;
		if (tries == 100 || nr_spares > 254) {
			fprintf(stderr, "split_lines: no pair_a and pair_b in one line\n");
			return 1;
		}
		spares[nr_spares++] = a;
		spares[nr_spares++] = b;
	}
	for (int i = 0; i < 3; i++) {
		a[i] = i;	/* 3 writes each */
		b[i] = -i;
	}
	sum += run_pair(a, b, n);

	old = new_old_blk();
	if (!old) {
		fprintf(stderr, "split_lines: no block at 16 bytes into a line\n");
		return 1;
	}
	for (int i = 0; i < 5; i++)
		old[i] = i;	/* 5 writes */
	sum += run_blk(old, n);
	uintptr_t was = (uintptr_t)old;
	free(old);
	nw = new_new_blk();
	if ((uintptr_t)nw != was) {
		fprintf(stderr, "split_lines: the new block %p is not where the old one was (%#lx)\n",
			(void *)nw, (unsigned long)was);
		return 1;
	}
	for (int i = 0; i < 5; i++)
		nw[i] = 2 * i;	/* 5 writes */
	sum += run_blk(nw, n / 2);

	printf("sum=%ld\n", sum);
	free(nw);
	free(a);
	free(b);
	free(s);
	for (int i = 0; i < nr_spares; i++)
		free(spares[i]);
	return 0;
}
