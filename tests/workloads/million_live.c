/*
 * million_live - 1,000,000 heap blocks live at the same time, then freed in
 * a scrambled order, then 100,000 new blocks in the freed memory.
 *
 * A stress program for the object map (no bottleneck, no twin): lookup must
 * stay O(log n) with a million live heap objects, every malloc-family entry
 * point must be tracked, and a block allocated in freed memory must not
 * inherit the counts of the block that lived there before (an object's
 * identity is site + allocation sequence number).
 *
 *   sites (million_live.c)   blocks at SCALE 1        size
 *   new_small()   malloc          734,375             24..112 B
 *   new_zeroed()  calloc          125,000             24..112 B
 *   grow_block()  realloc (x2)    125,000             48..224 B (each first
 *                                                     a new_small() block)
 *   new_aligned() posix_memalign   15,625             64 B aligned to 64
 *   table         heap `blocks` @ alloc_table(): 1 M pointers, 8 MB
 *   second round: new_small() 100,000 blocks after all frees
 *
 *   phases    allocate + tag all (words 0 and 1 and the last byte of each
 *             block written) -> read every tag (1 M objects touched) ->
 *             free in a pseudo-random order (xorshift, fixed seed), reading
 *             each tag just before the free -> 100 K new blocks, tagged,
 *             read, freed.
 *   expected  peak ~1.0 M live heap objects in 4 bins (+ the table);
 *             all freed before exit; the runtime's object count returns to
 *             its starting value.
 *
 * SCALE multiplies the number of blocks (1 M x SCALE). Native: ~0.3-0.45 s,
 * mostly the scrambled frees and the first malloc after them (glibc sorts
 * its million free chunks then). Instrumented with AMEBA_ORACLE set, the
 * oracle file lists every touched object: ~300 MB.
 */
#include "wl.h"

#define NR_BLOCKS 1000000
#define NR_SECOND 100000

static void **blocks;

__attribute__((noinline)) static void **alloc_table(size_t nr)
{
	return wl_check_alloc(malloc(nr * sizeof(void *)), "blocks table");
}

__attribute__((noinline)) static void *new_small(size_t sz)
{
	return wl_check_alloc(malloc(sz), "small block");
}

__attribute__((noinline)) static void *new_zeroed(size_t sz)
{
	return wl_check_alloc(calloc(1, sz), "zeroed block");
}

__attribute__((noinline)) static void *grow_block(void *p, size_t sz)
{
	return wl_check_alloc(realloc(p, sz), "grown block");
}

__attribute__((noinline)) static void *new_aligned(size_t sz)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, sz) != 0)
		p = NULL;
	return wl_check_alloc(p, "aligned block");
}

/* Every block (>= 24 B) carries its index in word 0, its size in word 1 and
 * a check byte in its last byte. */
static void tag_block(void *p, uint64_t sz, uint64_t index)
{
	uint64_t *w = p;

	w[0] = index;
	w[1] = sz;
	((unsigned char *)p)[sz - 1] = (unsigned char)(index ^ 0x5a);
}

/* Returns the index stored in the block; exits if the block is damaged. */
static uint64_t read_tag(const void *p)
{
	const uint64_t *w = p;
	uint64_t index = w[0], sz = w[1];

	if (sz < 24 || sz > 4096 || ((const unsigned char *)p)[sz - 1] != (unsigned char)(index ^ 0x5a)) {
		fprintf(stderr, "million_live: block %p corrupted\n", p);
		exit(1);
	}
	return index;
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 16);
	size_t nr = (size_t)NR_BLOCKS * scale;
	uint64_t seed = 0x1234567, s_tags = 0, s_freed = 0, s_second = 0, nr_nonzero = 0, t0;
	size_t nr_by_kind[4] = { 0 };

	blocks = alloc_table(nr);

	t0 = wl_now_ns();
	for (size_t i = 0; i < nr; i++) {
		size_t sz = 24 + (wl_mix(9, i) % 12) * 8;
		void *p;

		if (i % 64 == 7) {
			sz = 64;
			p = new_aligned(sz);
			nr_by_kind[3]++;
		} else if (i % 8 == 3) {
			p = new_zeroed(sz);
			for (size_t w = 0; w < sz / 8; w++) /* sizes are multiples of 8 */
				nr_nonzero += ((uint64_t *)p)[w] != 0;
			nr_by_kind[1]++;
		} else if (i % 16 == 5 || i % 16 == 14) {
			p = grow_block(new_small(sz), 2 * sz);
			sz *= 2;
			nr_by_kind[2]++;
		} else {
			p = new_small(sz);
			nr_by_kind[0]++;
		}
		tag_block(p, sz, i);
		blocks[i] = p;
	}

	for (size_t i = 0; i < nr; i++)
		s_tags = wl_mix(s_tags, read_tag(blocks[i]));

	/* Free in a scrambled order: a Fisher-Yates shuffle of the table. */
	for (size_t i = nr - 1; i > 0; i--) {
		size_t j = (size_t)(wl_rand(&seed) % (i + 1));
		void *tp = blocks[i];

		blocks[i] = blocks[j];
		blocks[j] = tp;
	}
	for (size_t i = 0; i < nr; i++) {
		s_freed = wl_mix(s_freed, read_tag(blocks[i]));
		free(blocks[i]);
	}

	/* Second round in the freed memory. */
	for (size_t i = 0; i < NR_SECOND; i++) {
		size_t sz = 24 + (i % 7) * 16;

		blocks[i] = new_small(sz);
		tag_block(blocks[i], sz, i * 3);
	}
	for (size_t i = 0; i < NR_SECOND; i++) {
		s_second = wl_mix(s_second, read_tag(blocks[i]));
		free(blocks[i]);
	}
	wl_report_time("million_live", t0);

	printf("million_live: blocks %zu (malloc %zu calloc %zu realloc %zu memalign %zu)\n", nr,
	       nr_by_kind[0], nr_by_kind[1], nr_by_kind[2], nr_by_kind[3]);
	printf("tags %016" PRIx64 "\nfree_order %016" PRIx64 "\nsecond %016" PRIx64 "\n", s_tags,
	       s_freed, s_second);
	printf("nonzero_calloc_words %" PRIu64 "\n", nr_nonzero);
	free(blocks);
	return 0;
}
