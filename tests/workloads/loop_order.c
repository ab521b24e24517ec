/*
 * loop_order - a 2-D array updated column by column (the loop-order fix).
 *
 * Bottleneck: grid is 2048 x 2048 doubles (32 MiB, rows of 16 KiB = 4
 * pages, page aligned), stored by rows. The kernel updates every element
 * and sums the grid with the loops in the wrong order for C: the outer loop
 * over columns, the inner loop over rows, so consecutive accesses are
 * 16 KiB apart -- each on a page other than the previous one's and in the
 * same L1D set. One thread.
 *
 *   object    heap `grid` @ alloc_grid() (loop_order.c), 32 MiB
 *   region    update_columns()
 *   accesses  init: 4,194,304 writes (by rows); per pass: 4,194,304
 *             elements, each a read and a write (8.4 M accesses); 1 pass x
 *             SCALE; the checksum reads one element in 64 (65,536)
 *   expected  per pass every element misses the L1 dTLB (64 entries) and
 *             the STLB (a column covers 2,048 pages, more than 1,536
 *             entries): 4.19 M dTLB misses; every read misses L1D (a column
 *             is 2,048 lines in one L1D set) and L2 (16 L2 sets of 16 ways
 *             hold 256 of them): 4.19 M L1D and L2 misses per pass. The
 *             writes hit the line the read brought in.
 *             Oracle (sim, skylake-sp), whole run: grid 4,259,840 reads +
 *             8,388,608 writes (exact), 4.21 M dTLB misses, 4.78 M L1D
 *             misses (kernel 4.19 M, fill 524 K, checksum 65 K);
 *             est_runtime_cycles 1,210 M, twin 292 M (4.14x).
 *             `ameba run` (skylake-sp): TLBThrashing on the grid first --
 *             and the only finding (HotObject, with the grid the only
 *             object, does not fire); the twin: HotObject on the grid, no
 *             TLBThrashing.
 *
 * Fixed twin (-DWL_FIXED=1): the loops swapped (rows outer, columns inner):
 * sequential, 1 L1D miss per 8 elements and 1 dTLB miss per 512 (524 K and
 * 8 K per pass; oracle, whole run: 1,114,112 L1D and 24,576 dTLB misses). The sum and the updated grid are the same (the elements
 * are integers below 2^53, so every double sum is exact in any order).
 * Same output.
 *
 * SCALE multiplies the passes (at most 100: the sums stay below 2^53).
 * Native on the 2-vCPU VM (medians of 7): kernel 52-58 ms, twin 3.5-3.8 ms
 * (14-15x); whole run ~0.1 s.
 */
#include "wl.h"

#define N 2048

static double *grid;

__attribute__((noinline)) static double *alloc_grid(void)
{
	return wl_check_alloc(aligned_alloc(WL_PAGE_SIZE, (size_t)N * N * sizeof(double)), "grid");
}

/* One pass: every element gets its pass number and its row added, and the
 * updated grid is summed. */
__attribute__((noinline)) static double update_columns(double *g, unsigned long pass)
{
	double s = 0.0;

#ifdef WL_FIXED
	for (size_t i = 0; i < N; i++)
		for (size_t j = 0; j < N; j++) {
			g[i * N + j] += (double)(pass + i);
			s += g[i * N + j];
		}
#else
	for (size_t j = 0; j < N; j++)
		for (size_t i = 0; i < N; i++) {
			g[i * N + j] += (double)(pass + i);
			s += g[i * N + j];
		}
#endif
	return s;
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 100);
	uint64_t h = 0, t0;
	double total = 0.0;

	grid = alloc_grid();
	for (size_t i = 0; i < (size_t)N * N; i++)
		grid[i] = (double)(i & 0xffff);

	t0 = wl_now_ns();
	for (unsigned long p = 0; p < scale; p++)
		total += update_columns(grid, p);
	wl_report_time("loop_order", t0);

	for (size_t i = 0; i < (size_t)N * N; i += 64)
		h = wl_mix(h, (uint64_t)grid[i]);
	printf("loop_order: n %d passes %lu\n", N, scale);
	printf("sum %" PRIu64 "\n", (uint64_t)total);
	printf("checksum %016" PRIx64 "\n", wl_mix(h, (uint64_t)total));
	free(grid);
	return 0;
}
