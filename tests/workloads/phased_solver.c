/*
 * phased_solver - a solver whose time steps have three phases in which
 * different arrays dominate; some arrays miss not at all in some phases.
 *
 * The unknowns come in 16 Ki blocks. Each of the 3 time steps (SCALE 1):
 *   A  assemble   read the mesh (3 lines per block), write the matrix
 *                 (4 lines per block) and the right-hand side (1 line per
 *                 2 blocks)
 *   B  solve      3 block-Jacobi iterations: each reads the block's 4 mat
 *                 lines and its rhs line and updates its line of x (the
 *                 update is local to the block)
 *   C  output     copy x into one slot of the 2-slot history ring
 *
 * Bottleneck: the solve streams the 4 MiB matrix three times per step. The
 * kernels use the leading word of every 64-byte line (a block record), so
 * each pass misses once per line in L1D and L2: every line is touched again
 * only after at least 2 MiB of other lines. Lines per step:
 *
 *   rank  object  kind / site         size     A       B (3 it.)  C       per step  run     share
 *      1  mat     alloc_matrix()      4 MiB    65,536  196,608    0       262,144   786,432 56.5%
 *      2  x       alloc_solution()    1 MiB    0        49,152    16,384   65,536   229,376 16.5%
 *      3  mesh    global              3 MiB    49,152  0          0        49,152   196,608 14.1%
 *      4  rhs     alloc_rhs()         0.5 MiB   8,192   24,576    0        32,768    98,304  7.1%
 *      5  hist    global (2 slots)    2 MiB    0       0          16,384   16,384    81,920  5.9%
 *
 * (Heap sites in phased_solver.c. "run" is SCALE 1: 3 steps, plus the
 * initialising pass over mesh and x and the final checksum pass over x and
 * both hist slots: 1.39 M L1D and L2 misses with the sim backend, host and
 * skylake-sp presets alike.) Within a phase the shares differ:
 * A: mat 53%, mesh 40%, rhs 7%, x and hist 0; B: mat 73%, x 18%, rhs 9%,
 * mesh and hist 0; C: x 50%, hist 50%, the others 0. A search that drops a
 * region after one silent interval loses mesh and hist; sampling sees each
 * phase in proportion to its length. The last x lines of phase C come back
 * after exactly 2 MiB (x + hist), the edge of a 2 MiB L2: L2 may hit on a
 * few of them (L1D does not).
 *
 * Fixed twin (-DWL_FIXED=1): the three iterations are fused per block (the
 * block is iterated three times while its lines are in L1), so mat and rhs
 * are streamed once per solve: mat 131,072, x 32,768, rhs 16,384 lines per
 * step; over the run (0.85 M misses) mat 46.2%, mesh 23.1%, x 15.4%, hist
 * 9.6%, rhs 5.8%. The update is local to a block, so the result is
 * bit-identical.
 *
 * SCALE multiplies the time steps (3 x SCALE). Native: ~18 ms.
 */
#include "wl.h"

#define EPL 8			/* uint64_t per 64-byte line */
#define NR_BLOCKS 16384
#define MAT_PER_BLOCK 4		/* mat lines per block */
#define MESH_PER_BLOCK 3	/* mesh lines per block */
#define NR_ITERS 3

uint64_t mesh[NR_BLOCKS * MESH_PER_BLOCK * EPL];
uint64_t hist[2][NR_BLOCKS * EPL];

static uint64_t *mat, *x, *rhs;

__attribute__((noinline)) static uint64_t *alloc_matrix(void)
{
	return wl_check_alloc(malloc((size_t)NR_BLOCKS * MAT_PER_BLOCK * WL_LINE_SIZE), "mat");
}

__attribute__((noinline)) static uint64_t *alloc_solution(void)
{
	return wl_check_alloc(malloc((size_t)NR_BLOCKS * WL_LINE_SIZE), "x");
}

__attribute__((noinline)) static uint64_t *alloc_rhs(void)
{
	return wl_check_alloc(malloc((size_t)NR_BLOCKS / 2 * WL_LINE_SIZE), "rhs");
}

/* Phase A. */
static void assemble(uint64_t step)
{
	for (size_t b = 0; b < NR_BLOCKS; b++) {
		const uint64_t *m = &mesh[b * MESH_PER_BLOCK * EPL];
		uint64_t p0 = m[0], p1 = m[EPL], p2 = m[2 * EPL];

		for (size_t k = 0; k < MAT_PER_BLOCK; k++)
			mat[(b * MAT_PER_BLOCK + k) * EPL] = wl_mix(p0 + step, k) ^ (p1 >> k) ^ p2;
		if (!(b & 1))
			rhs[b / 2 * EPL] = p0 ^ (p2 + step);
	}
}

/* One Jacobi update of block b's unknown from its matrix lines and rhs. */
static inline uint64_t relax(uint64_t xv, const uint64_t *m, uint64_t r)
{
	uint64_t acc = r;

	for (size_t k = 0; k < MAT_PER_BLOCK; k++)
		acc += m[k * EPL] * (xv >> k | 1);
	return acc ^ (xv >> 3);
}

/* Phase B. */
static void solve(void)
{
#ifdef WL_FIXED
	for (size_t b = 0; b < NR_BLOCKS; b++) {
		uint64_t v = x[b * EPL];

		for (int it = 0; it < NR_ITERS; it++)
			v = relax(v, &mat[b * MAT_PER_BLOCK * EPL], rhs[b / 2 * EPL]);
		x[b * EPL] = v;
	}
#else
	for (int it = 0; it < NR_ITERS; it++)
		for (size_t b = 0; b < NR_BLOCKS; b++)
			x[b * EPL] = relax(x[b * EPL], &mat[b * MAT_PER_BLOCK * EPL],
					   rhs[b / 2 * EPL]);
#endif
}

/* Phase C. */
static void output(uint64_t step)
{
	uint64_t *h = hist[step & 1];

	for (size_t b = 0; b < NR_BLOCKS; b++)
		h[b * EPL] = x[b * EPL] ^ step;
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 1000);
	unsigned long nr_steps = 3 * scale;
	uint64_t s_x = 0, s_hist = 0, t0;

	mat = alloc_matrix();
	x = alloc_solution();
	rhs = alloc_rhs();
	for (size_t l = 0; l < (size_t)NR_BLOCKS * MESH_PER_BLOCK; l++)
		mesh[l * EPL] = wl_mix(1, l);
	for (size_t b = 0; b < NR_BLOCKS; b++)
		x[b * EPL] = wl_mix(2, b);

	t0 = wl_now_ns();
	for (unsigned long s = 0; s < nr_steps; s++) {
		assemble(s);
		solve();
		output(s);
	}
	wl_report_time("phased_solver", t0);

	for (size_t b = 0; b < NR_BLOCKS; b++) {
		s_x = wl_mix(s_x, x[b * EPL]);
		s_hist = wl_mix(s_hist, hist[0][b * EPL] ^ hist[1][b * EPL]);
	}
	printf("phased_solver: steps %lu iterations %d\n", nr_steps, NR_ITERS);
	printf("x %016" PRIx64 "\nhist %016" PRIx64 "\n", s_x, s_hist);
	free(mat);
	free(x);
	free(rhs);
	return 0;
}
