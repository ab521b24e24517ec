/*
 * conflict - power-of-two leading dimension: lockstep accesses to 16 rows
 * that all map to the same cache set.
 *
 * Bottleneck: `rows` (global, 16 x 4096 uint64_t = 512 KiB, rows 32 KiB
 * apart) is summed column by column: for each i, rows[0..15][i]. The 16
 * lines touched at one i are a multiple of 4 KiB apart, so they fall in ONE
 * L1D set (64 sets x 64 B per way on a 48 KiB 12-way L1D, and on any L1D
 * with 4 KiB per way); 16 lines > 12 ways, and LRU evicts each line before
 * its next word is read. The 16 lines would fit a fully associative L1D
 * many times over: these are conflict misses.
 *
 *   object    global `rows` (conflict.c), 512 KiB
 *   expected  per sweep 65,536 word reads = 8,192 lines x 8 words: every
 *             read misses L1D (65,536 misses per sweep, 1.05 M at SCALE 1
 *             = 16 sweeps), 7/8 of them conflict misses (57,344 per sweep)
 *             and 1/8 capacity misses (the 512 KiB sweep exceeds L1D in
 *             any organisation). L2 (512 KiB fits; 32 KiB stride covers 4
 *             sets of a 2 MiB 16-way L2) sees only the 8,192 compulsory
 *             misses. If the compiler reads two words at a time the counts
 *             of reads and L1D misses halve; the 7/8 : 1/8 split does not
 *             change. (LRU model of a 48 KiB 12-way L1D with a fully
 *             associative shadow, gcc -O2 with instrumentation, which
 *             reads one word at a time: 1.06 M L1D misses incl. the
 *             initialisation, 917,521 of them conflict misses.)
 *
 * Fixed twin (-DWL_FIXED=1): leading dimension 4096 + 8 (one line of
 * padding per row): the 16 lines at one i fall in 16 consecutive sets; one
 * L1D miss per line per sweep (8,192 per sweep, 131 K in all, 8x fewer),
 * ~0 conflict misses (LRU model: 139 K L1D misses, 0 conflict). Same output.
 *
 * SCALE multiplies the sweeps (16 x SCALE). Native: ~1 ms; no native time
 * difference on the development VM (16 independent loads per column hide the
 * L2 latency and the prefetchers help): the effect is in the miss counts.
 */
#include "wl.h"

#define NR_ROWS 16
#define ROW_LEN 4096
#ifdef WL_FIXED
#define LD (ROW_LEN + WL_LINE_SIZE / 8) /* odd number of lines per row */
#else
#define LD ROW_LEN /* 32 KiB: a power of two */
#endif

_Alignas(WL_PAGE_SIZE) uint64_t rows[NR_ROWS][LD];

__attribute__((noinline)) static uint64_t column_sums(unsigned long sweep)
{
	uint64_t s = 0;

	for (size_t i = 0; i < ROW_LEN; i++) {
		uint64_t c = 0;

		for (size_t r = 0; r < NR_ROWS; r++)
			c += rows[r][i];
		s += c ^ (i + sweep);
	}
	return s;
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 10000);
	unsigned long nr_sweeps = 16 * scale;
	uint64_t s = 0, t0;

	for (size_t r = 0; r < NR_ROWS; r++)
		for (size_t i = 0; i < ROW_LEN; i++)
			rows[r][i] = wl_mix(r, i);

	t0 = wl_now_ns();
	for (unsigned long k = 0; k < nr_sweeps; k++)
		s = wl_mix(s, column_sums(k));
	wl_report_time("conflict", t0);

	printf("conflict: rows %d x %d sweeps %lu\n", NR_ROWS, ROW_LEN, nr_sweeps);
	printf("checksum %016" PRIx64 "\n", s);
	return 0;
}
