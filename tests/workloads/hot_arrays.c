/*
 * hot_arrays - six arrays with designed shares of the cache misses.
 *
 * Bottleneck: streaming over arrays whose touched lines (12.5 MiB per pass)
 * far exceed L2, so every touched line misses in L1D and L2 on every pass.
 * The share of misses of each array is the number of lines it touches per
 * pass; the designed ranking by L1D / L2 misses (the HotObject* properties,
 * the n-way search, sampling):
 *
 *   rank  object  kind / site                      size      lines/pass   share of misses
 *      1  grid    heap  alloc_grid() (hot_arrays.c)  5.0 MiB   40 units     40%
 *      2  flux    global                            3.1 MiB   25 units     25%
 *      3  coef    heap  alloc_coef()                 3.8 MiB   15 units     15%  (every 2nd line)
 *      4  mask    global                            1.3 MiB   10 units     10%  (read + write)
 *      5  halo    global                            0.8 MiB    6 units      6%
 *      6  tail    heap  alloc_tail()                 0.5 MiB    4 units      4%
 *         lut     global                            4 KiB     -            ~0%  (cache resident)
 *
 * (1 unit = 2,048 lines of 64 B.) The arrays are visited interleaved: chunk j
 * of every array in turn, j = 0..2047, so the shares are the same in every
 * interval of the run longer than ~100 line touches (no phases).
 *
 * The ranking by memory references is different on purpose (a hot-by-
 * references object need not be hot-by-misses): flux 58.5% (all 8 words of
 * each line), lut 16.9% (one read per line touch of grid/coef/halo/tail),
 * grid 11.7%, mask 5.5%, coef 4.4%, halo 1.8%, tail 1.2% of 6.30 M
 * references (whole run, gcc -O2: loop variables live in registers).
 *
 * Numbers at SCALE 1 (8 passes + 1 initialising pass touching the same lines):
 *   touched lines per pass 204,800; L1D and L2 misses ~1.84 M, of which grid
 *   737 K, flux 461 K, coef 276 K, mask 184 K, halo 111 K, tail 74 K.
 *   (Checked with an LRU model of a 48 KiB 12-way L1D and a 2 MiB 16-way
 *   L2: L1D shares 40.00/25.00/15.00/10.00/6.00/4.00%, lut 0.01%.)
 *   The shares hold for any cache smaller than ~12 MiB; a larger last-level
 *   cache sees only the initialising pass (compulsory misses), which has the
 *   same shares because only the touched lines are ever touched.
 *
 * Fixed twin (-DWL_FIXED=1): grid is processed in cache-sized chunks: all
 * passes over one 2.5 KiB chunk happen back to back (in the first pass), so
 * grid misses once per line instead of once per line per pass:
 *   grid 164 K misses (init + one pass); shares become flux 36.3%, coef
 *   21.8%, grid 12.9%, mask 14.5%, halo 8.7%, tail 5.8%.
 * Same output as the bottleneck version (sums are order independent).
 *
 * SCALE multiplies the number of passes (8 x SCALE). Native: ~10 ms.
 */
#include "wl.h"

#define UNIT_LINES 2048 /* lines of one share unit */
#define EPL 8		/* uint64_t elements per 64-byte line */

enum {
	GRID_SHARE = 40,
	FLUX_SHARE = 25,
	COEF_SHARE = 15,
	MASK_SHARE = 10,
	HALO_SHARE = 6,
	TAIL_SHARE = 4,
	LUT_ELEMS = 512,
};

uint64_t flux[FLUX_SHARE * UNIT_LINES * EPL];
uint64_t mask[MASK_SHARE * UNIT_LINES * EPL];
uint64_t halo[HALO_SHARE * UNIT_LINES * EPL];
uint64_t lut[LUT_ELEMS];

static uint64_t *grid, *coef, *tail;

__attribute__((noinline)) static uint64_t *alloc_grid(void)
{
	return wl_check_alloc(malloc((size_t)GRID_SHARE * UNIT_LINES * WL_LINE_SIZE), "grid");
}

/* coef is twice as large as the lines it contributes: only even lines are used. */
__attribute__((noinline)) static uint64_t *alloc_coef(void)
{
	return wl_check_alloc(malloc((size_t)2 * COEF_SHARE * UNIT_LINES * WL_LINE_SIZE), "coef");
}

__attribute__((noinline)) static uint64_t *alloc_tail(void)
{
	return wl_check_alloc(malloc((size_t)TAIL_SHARE * UNIT_LINES * WL_LINE_SIZE), "tail");
}

/* Reads the first word of nr lines starting at line first, stride_lines apart,
 * each together with the first word of one of lut's 64 lines: 2 references,
 * 1 miss per line. A lut line is read again every 64 line touches, long
 * before the streaming lines could push it out of L1D. */
static uint64_t touch_read(const uint64_t *a, size_t first, size_t nr, size_t stride_lines,
			   uint64_t salt)
{
	uint64_t s = 0;

	for (size_t k = 0; k < nr; k++) {
		size_t line = first + k * stride_lines;

		s += a[line * EPL] ^ lut[(line + salt) % (LUT_ELEMS / EPL) * EPL];
	}
	return s;
}

static void init_lines(uint64_t *a, size_t nr_lines, size_t stride_lines, uint64_t seed)
{
	for (size_t line = 0; line < nr_lines; line++)
		a[line * stride_lines * EPL] = wl_mix(seed, line);
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 1000);
	unsigned long nr_passes = 8 * scale;
	uint64_t s_grid = 0, s_flux = 0, s_coef = 0, s_mask = 0, s_halo = 0, s_tail = 0;
	uint64_t t0;

	grid = alloc_grid();
	coef = alloc_coef();
	tail = alloc_tail();

	/* Initialise exactly the words the kernel reads (one pass of misses). */
	for (size_t i = 0; i < LUT_ELEMS; i++)
		lut[i] = wl_mix(7, i);
	init_lines(grid, (size_t)GRID_SHARE * UNIT_LINES, 1, 1);
	for (size_t i = 0; i < sizeof(flux) / sizeof(flux[0]); i++)
		flux[i] = wl_mix(2, i);
	init_lines(coef, (size_t)COEF_SHARE * UNIT_LINES, 2, 3);
	init_lines(mask, (size_t)MASK_SHARE * UNIT_LINES, 1, 4);
	init_lines(halo, (size_t)HALO_SHARE * UNIT_LINES, 1, 5);
	init_lines(tail, (size_t)TAIL_SHARE * UNIT_LINES, 1, 6);

	t0 = wl_now_ns();
	for (unsigned long p = 0; p < nr_passes; p++) {
		for (size_t j = 0; j < UNIT_LINES; j++) {
#ifdef WL_FIXED
			/* All passes over this 2.5 KiB chunk of grid while it is in L1. */
			if (p == 0)
				for (unsigned long q = 0; q < nr_passes; q++)
					s_grid += touch_read(grid, j * GRID_SHARE, GRID_SHARE, 1, q);
#else
			s_grid += touch_read(grid, j * GRID_SHARE, GRID_SHARE, 1, p);
#endif
			/* flux: every word of its 25 lines, in a serial recurrence. */
			uint64_t h = p;
			const uint64_t *f = &flux[j * FLUX_SHARE * EPL];

			for (size_t e = 0; e < (size_t)FLUX_SHARE * EPL; e++)
				h = h * 31 + f[e];
			s_flux += h;

			s_coef += touch_read(coef, 2 * j * COEF_SHARE, COEF_SHARE, 2, p);

			/* mask: read-modify-write of one word per line; the last
			 * pass folds the final values into the checksum. */
			for (size_t k = 0; k < MASK_SHARE; k++) {
				size_t e = (j * MASK_SHARE + k) * EPL;
				uint64_t v = mask[e] * 3 + p;

				mask[e] = v;
				if (p + 1 == nr_passes)
					s_mask += v;
			}
			s_halo += touch_read(halo, j * HALO_SHARE, HALO_SHARE, 1, p);
			s_tail += touch_read(tail, j * TAIL_SHARE, TAIL_SHARE, 1, p);
		}
	}
	wl_report_time("hot_arrays", t0);

	printf("hot_arrays: passes %lu\n", nr_passes);
	printf("grid %016" PRIx64 "\nflux %016" PRIx64 "\ncoef %016" PRIx64 "\n", s_grid, s_flux,
	       s_coef);
	printf("mask %016" PRIx64 "\nhalo %016" PRIx64 "\ntail %016" PRIx64 "\n", s_mask, s_halo,
	       s_tail);
	free(grid);
	free(coef);
	free(tail);
	return 0;
}
