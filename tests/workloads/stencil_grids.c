/*
 * stencil_grids - a multi-physics stencil: three grids of different sizes
 * swept a different number of times per time step, plus two coefficient
 * arrays, with designed shares of the cache misses.
 *
 * Bottleneck: every grid point is a 64-byte cell (8 fields: the field the
 * stencil updates and seven others, as in an array-of-structs code), so an
 * in-place 5-point Gauss-Seidel sweep misses once per cell in L1D and L2
 * (the row below is the streaming front; the rows above and the current row
 * are still in L1). The grids and their coefficients touch far more than L2
 * between two sweeps of one grid, so every sweep misses on every line again.
 * Per time step (SCALE 1: 4 steps; sites in stencil_grids.c):
 *
 *   rank  object  kind / site             size     lines/sweep  sweeps  run (SCALE 1)  share
 *      1  temp    heap alloc_temp()        4 MiB    65,536       2       655,328        39.1%
 *      2  press   heap alloc_press()       2 MiB    32,768       3       458,704        27.3%
 *      3  kappa   heap alloc_kappa()       2 MiB    32,640       2       293,888        17.5%
 *      4  conc    global                   1 MiB    16,384       2       163,808         9.8%
 *      5  rhs     heap alloc_rhs()         0.5 MiB   8,160       3       105,729         6.3%
 *         wts     global (weights)         192 B    -            -       ~100            ~0%
 *
 * kappa holds 32 B of coefficients per temp cell (2 cells per line) and rhs
 * 16 B per press cell (4 per line), read for interior cells only (hence
 * 32,640 = 510 rows x 64 lines rather than 32,768). The run column is 4
 * steps plus the initialising pass and, for the grids, the final checksum
 * pass: 1.68 M L1D and L2 misses, measured with the sim backend (host preset
 * with a 2 MiB L2, and skylake-sp with a 1 MiB L2: the same to 0.01 point).
 * The sweeps go temp, temp, press, conc, press, conc, press: the shortest
 * reuse distance of any grid line is 3.5 MiB, so the shares hold for any L2
 * up to ~3 MiB; a larger last-level cache sees only compulsory misses.
 *
 * Memory references (per interior cell: north, south, east, the store and
 * two coefficient words; west and centre stay in registers): ~6 per miss.
 *
 * Fixed twin (-DWL_FIXED=1): temp's two sweeps are fused (temporal blocking:
 * the second sweep follows one row behind the first), so temp and kappa
 * miss in L2 once per step instead of twice: L2 misses temp 393,200, kappa
 * 163,328 of 1.28 M; press becomes the top object (35.7%, temp 30.6%). The
 * fused sweep keeps 4 temp rows and 2 kappa rows (40 KiB) live, which fits
 * a 48 KiB L1D (host) but not a 32 KiB one (skylake-sp: L1D misses of temp
 * rise). Gauss-Seidel in place gives bit-identical grids either way (sweep
 * 2 on row i-1 needs row i after sweep 1 and row i-2 after sweep 2 - the
 * same values as unfused), so the output is the same.
 *
 * SCALE multiplies the time steps (4 x SCALE). Native: ~40 ms (fixed ~20 ms).
 */
#include "wl.h"

#define NF 8 /* fields per cell: one 64-byte line */

struct cell {
	uint64_t f[NF];
};

struct coef4 {
	uint64_t c[4];
};

struct coef2 {
	uint64_t c[2];
};

enum {
	TEMP_ROWS = 512, TEMP_COLS = 128,	/* 4 MiB */
	PRESS_ROWS = 256, PRESS_COLS = 128,	/* 2 MiB */
	CONC_ROWS = 128, CONC_COLS = 128,	/* 1 MiB */
	TEMP_SWEEPS = 2, PRESS_SWEEPS = 3, CONC_SWEEPS = 2,
};

struct cell conc[CONC_ROWS * CONC_COLS];
uint64_t wts[3][NF];			/* per-grid weights: cache resident */

static struct cell *temp, *press;
static struct coef4 *kappa;		/* temp's coefficients */
static struct coef2 *rhs;		/* press's source term */

__attribute__((noinline)) static struct cell *alloc_temp(void)
{
	return wl_check_alloc(malloc(sizeof(struct cell) * TEMP_ROWS * TEMP_COLS), "temp");
}

__attribute__((noinline)) static struct cell *alloc_press(void)
{
	return wl_check_alloc(malloc(sizeof(struct cell) * PRESS_ROWS * PRESS_COLS), "press");
}

__attribute__((noinline)) static struct coef4 *alloc_kappa(void)
{
	return wl_check_alloc(malloc(sizeof(struct coef4) * TEMP_ROWS * TEMP_COLS), "kappa");
}

__attribute__((noinline)) static struct coef2 *alloc_rhs(void)
{
	return wl_check_alloc(malloc(sizeof(struct coef2) * PRESS_ROWS * PRESS_COLS), "rhs");
}

/*
 * One Gauss-Seidel row update of field 0: g[i][j] from its four neighbours,
 * weighted, plus two coefficient words (cw[0] scales, cw[1] adds). The west
 * value is the cell just updated and the centre is the previous east, both
 * kept in registers; north, south and east are loaded.
 */
static void relax_row(struct cell *g, size_t cols, size_t i, const uint64_t *cw,
		      size_t cw_stride, const uint64_t *w)
{
	struct cell *row = &g[i * cols];
	const struct cell *up = row - cols, *down = row + cols;
	uint64_t west = row[0].f[0], centre = row[1].f[0];

	for (size_t j = 1; j + 1 < cols; j++) {
		uint64_t east = row[j + 1].f[0];
		const uint64_t *k = &cw[j * cw_stride];
		uint64_t v = (up[j].f[0] + down[j].f[0]) * w[0] + (west + east) * w[1] +
			     centre * k[0] + k[1];

		row[j].f[0] = v;
		west = v;
		centre = east;
	}
}

static void sweep(struct cell *g, size_t rows, size_t cols, const uint64_t *cw, size_t cw_stride,
		  const uint64_t *w)
{
	for (size_t i = 1; i + 1 < rows; i++)
		relax_row(g, cols, i, &cw[i * cols * cw_stride], cw_stride, w);
}

static void sweep_temp_twice(void)
{
#ifdef WL_FIXED
	/* Fused: sweep 2 runs one row behind sweep 1. */
	for (size_t i = 1; i + 1 < TEMP_ROWS; i++) {
		relax_row(temp, TEMP_COLS, i, kappa[i * TEMP_COLS].c, 4, wts[0]);
		if (i >= 2)
			relax_row(temp, TEMP_COLS, i - 1, kappa[(i - 1) * TEMP_COLS].c, 4, wts[0]);
	}
	relax_row(temp, TEMP_COLS, TEMP_ROWS - 2, kappa[(TEMP_ROWS - 2) * TEMP_COLS].c, 4, wts[0]);
#else
	for (int k = 0; k < TEMP_SWEEPS; k++)
		sweep(temp, TEMP_ROWS, TEMP_COLS, kappa[0].c, 4, wts[0]);
#endif
}

static uint64_t sum_field(const struct cell *g, size_t nr)
{
	uint64_t h = 0;

	for (size_t i = 0; i < nr; i++)
		h = wl_mix(h, g[i].f[0]);
	return h;
}

static void init_cells(struct cell *g, size_t nr, uint64_t seed)
{
	for (size_t i = 0; i < nr; i++)
		g[i].f[0] = wl_mix(seed, i);
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 1000);
	unsigned long nr_steps = 4 * scale;
	uint64_t t0;

	temp = alloc_temp();
	press = alloc_press();
	kappa = alloc_kappa();
	rhs = alloc_rhs();

	/* One initialising pass over every line the sweeps use. */
	for (int g = 0; g < 3; g++)
		for (int f = 0; f < NF; f++)
			wts[g][f] = wl_mix(100 + g, f) | 1;
	init_cells(temp, (size_t)TEMP_ROWS * TEMP_COLS, 1);
	init_cells(press, (size_t)PRESS_ROWS * PRESS_COLS, 2);
	init_cells(conc, (size_t)CONC_ROWS * CONC_COLS, 3);
	for (size_t i = 0; i < (size_t)TEMP_ROWS * TEMP_COLS; i++) {
		kappa[i].c[0] = wl_mix(4, i) | 1;
		kappa[i].c[1] = wl_mix(5, i);
	}
	for (size_t i = 0; i < (size_t)PRESS_ROWS * PRESS_COLS; i++) {
		rhs[i].c[0] = wl_mix(6, i) | 1;
		rhs[i].c[1] = wl_mix(7, i);
	}

	t0 = wl_now_ns();
	for (unsigned long s = 0; s < nr_steps; s++) {
		sweep_temp_twice();		/* temp sweeps 1 and 2 (fused in the twin) */
		sweep(press, PRESS_ROWS, PRESS_COLS, rhs[0].c, 2, wts[1]);
		sweep(conc, CONC_ROWS, CONC_COLS, wts[2], 0, wts[2]);
		sweep(press, PRESS_ROWS, PRESS_COLS, rhs[0].c, 2, wts[1]);
		sweep(conc, CONC_ROWS, CONC_COLS, wts[2], 0, wts[2]);
		sweep(press, PRESS_ROWS, PRESS_COLS, rhs[0].c, 2, wts[1]);
	}
	wl_report_time("stencil_grids", t0);

	printf("stencil_grids: steps %lu\n", nr_steps);
	printf("temp %016" PRIx64 "\n", sum_field(temp, (size_t)TEMP_ROWS * TEMP_COLS));
	printf("press %016" PRIx64 "\n", sum_field(press, (size_t)PRESS_ROWS * PRESS_COLS));
	printf("conc %016" PRIx64 "\n", sum_field(conc, (size_t)CONC_ROWS * CONC_COLS));
	free(temp);
	free(press);
	free(kappa);
	free(rhs);
	return 0;
}
