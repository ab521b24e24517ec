/*
 * hot_fig2 - the layout of Buck & Hollingsworth's Figure 2 (seed 002): the
 * address region with the most misses does not hold the hottest object.
 *
 * Bottleneck: streaming over five arrays larger together than L2; every
 * touched line misses in L1D and L2 on every pass. Designed ranking by L1D /
 * L2 misses:
 *
 *   rank  object    kind / site                        size      share of misses
 *      1  array_e   heap  alloc_array_e() (hot_fig2.c)  5.0 MiB   40%
 *      2  array_c   global                              2.4 MiB   19%
 *      3  array_a   global                              2.0 MiB   16%
 *      4  array_b   global                              1.8 MiB   14%
 *      5  array_d   global                              1.4 MiB   11%
 *
 * Layout: array_a..array_d are globals, packed together in the executable's
 * .bss (low addresses, 7.5 MiB, together 60% of the misses); array_e is a
 * heap block large enough for malloc to mmap it, far above, near the shared
 * libraries and stacks (which miss ~never). Any split of the address space
 * that separates the two clusters gives the .bss region 60% and the array_e
 * region 40%: a search that always refines the region with the most misses
 * descends into .bss and ends at array_c (19%); the n-way search with the
 * priority queue backs up and finds array_e (40%) first.
 *
 * Shares are lines touched per pass (1 unit = 2,048 lines of 64 B; a=16,
 * b=14, c=19, d=11, e=40 units), visited interleaved (chunk j of each array
 * in turn) so the shares are the same in every interval. Every array line is
 * touched once per pass with one read; the initialising pass writes the same
 * lines. SCALE 1: 8 passes + init = 9 x 204,800 = 1.84 M misses; array_e
 * 737 K, c 350 K, a 295 K, b 258 K, d 203 K (an LRU model of a 48 KiB
 * 12-way L1D and a 2 MiB 16-way L2 gives exactly these). The shares hold
 * for caches smaller than ~12 MiB and, as compulsory misses, for larger
 * ones.
 *
 * Fixed twin (-DWL_FIXED=1): array_e is processed in L1-sized chunks, all
 * passes back to back, so it misses once per line (init + one pass): array_e
 * 164 K misses = 12.9%; c 27.6%, a 23.2%, b 20.3%, d 16.0% -- the hot
 * object is gone and the .bss cluster holds 87%. Same output.
 *
 * SCALE multiplies the number of passes (8 x SCALE). Native: ~10 ms.
 */
#include "wl.h"

#define UNIT_LINES 2048
#define EPL 8

enum { A_SHARE = 16, B_SHARE = 14, C_SHARE = 19, D_SHARE = 11, E_SHARE = 40 };

uint64_t array_a[A_SHARE * UNIT_LINES * EPL];
uint64_t array_b[B_SHARE * UNIT_LINES * EPL];
uint64_t array_c[C_SHARE * UNIT_LINES * EPL];
uint64_t array_d[D_SHARE * UNIT_LINES * EPL];
static uint64_t *array_e;

__attribute__((noinline)) static uint64_t *alloc_array_e(void)
{
	return wl_check_alloc(malloc((size_t)E_SHARE * UNIT_LINES * WL_LINE_SIZE), "array_e");
}

/* One read of the first word of each of nr lines from line first on. */
static uint64_t touch(const uint64_t *a, size_t first, size_t nr, uint64_t salt)
{
	uint64_t s = 0;

	for (size_t line = first; line < first + nr; line++)
		s += a[line * EPL] ^ (line * salt);
	return s;
}

static void init_lines(uint64_t *a, size_t nr_lines, uint64_t seed)
{
	for (size_t line = 0; line < nr_lines; line++)
		a[line * EPL] = wl_mix(seed, line);
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 1000);
	unsigned long nr_passes = 8 * scale;
	uint64_t s[5] = { 0 };
	uint64_t t0;

	array_e = alloc_array_e();
	init_lines(array_a, (size_t)A_SHARE * UNIT_LINES, 1);
	init_lines(array_b, (size_t)B_SHARE * UNIT_LINES, 2);
	init_lines(array_c, (size_t)C_SHARE * UNIT_LINES, 3);
	init_lines(array_d, (size_t)D_SHARE * UNIT_LINES, 4);
	init_lines(array_e, (size_t)E_SHARE * UNIT_LINES, 5);

	t0 = wl_now_ns();
	for (unsigned long p = 0; p < nr_passes; p++) {
		for (size_t j = 0; j < UNIT_LINES; j++) {
			s[0] += touch(array_a, j * A_SHARE, A_SHARE, p + 1);
			s[1] += touch(array_b, j * B_SHARE, B_SHARE, p + 1);
			s[2] += touch(array_c, j * C_SHARE, C_SHARE, p + 1);
			s[3] += touch(array_d, j * D_SHARE, D_SHARE, p + 1);
#ifdef WL_FIXED
			if (p == 0)
				for (unsigned long q = 0; q < nr_passes; q++)
					s[4] += touch(array_e, j * E_SHARE, E_SHARE, q + 1);
#else
			s[4] += touch(array_e, j * E_SHARE, E_SHARE, p + 1);
#endif
		}
	}
	wl_report_time("hot_fig2", t0);

	printf("hot_fig2: passes %lu\n", nr_passes);
	for (int i = 0; i < 5; i++)
		printf("array_%c %016" PRIx64 "\n", 'a' + i, s[i]);
	free(array_e);
	return 0;
}
