/*
 * tlb_transpose - matrix transpose walking columns with a page-sized stride
 * (the FFT transpose of Gibson's case study, seed 000).
 *
 * Bottleneck: x and trans are 1024 x 1024 doubles (8 MiB each, rows of
 * 8 KiB = 2 pages, page aligned). The program transposes x -> trans ->
 * x -> trans (3 transposes, as FFT calls Transpose three times). The naive
 * transpose writes rows of the destination and reads COLUMNS of the
 * source: consecutive reads are 8 KiB apart, each on a different page and
 * in the same L1D set.
 *
 *   objects   heap `x` @ alloc_x(), heap `trans` @ alloc_trans()
 *             (tlb_transpose.c), 8 MiB each; each is the source of the
 *             column walk in turn (x twice, trans once)
 *   region    transpose()
 *   expected  per transpose, 1,048,576 source reads, each on a page other
 *             than the previous read's: with a 64-entry L1 dTLB every one
 *             misses (1.05 M dTLB misses per transpose, 3.1 M in all, 2/3
 *             on x, 1/3 on trans); a column touches 1,024 pages, so a
 *             second-level TLB of >= 1,024 entries catches most of them.
 *             Caches: the 1,024 lines of one column (64 KiB) map to one
 *             L1D set (4 KiB per way) and to 16 L2 sets (2 MiB 16-way:
 *             128 KiB per way, so 256 lines for the column), so every
 *             source read misses L1D (capacity: 64 KiB > 48 KiB even fully
 *             associative) and L2 (conflict: a fully associative 2 MiB L2
 *             would keep the column) -- 1.05 M each per transpose;
 *             destination writes add ~0.15 M (about one per line).
 *             LRU model (48 KiB/12-way L1D, 2 MiB/16-way L2, 64-entry
 *             dTLB), whole run incl. initialisation: dTLB misses 3.16 M
 *             (x 2.10 M, trans 1.06 M), L1D = L2 misses 3.93 M.
 *
 * Fixed twin (-DWL_FIXED=1): blocked transpose with 8 x 8 blocks (8 source
 * rows = 8 pages, 8 lines, under the L1 associativity and the L1 TLB):
 * ~1 dTLB miss per 8 source reads (131 K per transpose, 8x fewer) and
 * ~0.31 M L1D misses per transpose (4x fewer). LRU model, whole run: dTLB
 * misses 0.41 M, L1D = L2 misses 1.18 M. Same output.
 *
 * SCALE: 2 x SCALE + 1 transposes (the result always ends in trans).
 * Native: ~35 ms in all; transpose kernel ~18 ms, fixed ~7 ms (2.6x).
 */
#include "wl.h"

#define N 1024
#define BLOCK 8

static double *x, *trans;

__attribute__((noinline)) static double *alloc_x(void)
{
	return wl_check_alloc(aligned_alloc(WL_PAGE_SIZE, (size_t)N * N * sizeof(double)), "x");
}

__attribute__((noinline)) static double *alloc_trans(void)
{
	return wl_check_alloc(aligned_alloc(WL_PAGE_SIZE, (size_t)N * N * sizeof(double)),
			      "trans");
}

__attribute__((noinline)) static void transpose(double *restrict dst, const double *restrict src)
{
#ifdef WL_FIXED
	for (size_t ii = 0; ii < N; ii += BLOCK)
		for (size_t jj = 0; jj < N; jj += BLOCK)
			for (size_t i = ii; i < ii + BLOCK; i++)
				for (size_t j = jj; j < jj + BLOCK; j++)
					dst[i * N + j] = src[j * N + i];
#else
	for (size_t i = 0; i < N; i++)
		for (size_t j = 0; j < N; j++)
			dst[i * N + j] = src[j * N + i];
#endif
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 1000);
	unsigned long nr_transposes = 2 * scale + 1;
	uint64_t s = 0, t0;

	x = alloc_x();
	trans = alloc_trans();
	for (size_t i = 0; i < (size_t)N * N; i++) {
		x[i] = (double)i;
		trans[i] = 0.0;
	}

	t0 = wl_now_ns();
	for (unsigned long k = 0; k < nr_transposes; k++) {
		if (k % 2 == 0)
			transpose(trans, x);
		else
			transpose(x, trans);
	}
	wl_report_time("tlb_transpose", t0);

	/* trans[i][j] == i + N * j exactly (integers below 2^53). */
	for (size_t i = 0; i < (size_t)N * N; i++)
		s = wl_mix(s, (uint64_t)trans[i]);
	printf("tlb_transpose: n %d transposes %lu\n", N, nr_transposes);
	printf("checksum %016" PRIx64 "\n", s);
	free(x);
	free(trans);
	return 0;
}
