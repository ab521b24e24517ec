/*
 * wrapper_alloc - blocks allocated through allocation wrappers: xmalloc()
 * (a function of its own here, as in gnulib or git) and CALLOC() (a small
 * static function in a shared header, wrap_alloc.h, as in Phoenix's
 * stddefines.h). A user knows the blocks by the functions that call the
 * wrappers; the runtime must name them so (docs/objmap.md, "Allocation
 * wrappers"), and keep the wrapper as the site's "via".
 *
 * Bottleneck: the table, 2^18 uint64_t (2 MiB), is summed in a scattered
 * order: entry (k * 4099) mod 2^18 for k = 0 .. 2^18 - 1, which visits
 * every entry once, each read 32 KiB past the previous one (a new line and
 * a new page every time). Each read also reads index[entry mod 4096].
 *
 *   objects   heap `table` @ make_table() via xmalloc(), 2 MiB
 *             ("make_table@wrapper_alloc.c:LINE", via "xmalloc@...");
 *             heap `index` @ make_index() via CALLOC() (wrap_alloc.h),
 *             16 KiB; heap `scratch` @ make_scratch() via xmalloc(), 64 KiB
 *   region    sum_table()
 *   expected  per walk 262,144 table reads, every one a new line and a new
 *             page. Exact counts of the run at SCALE 1 (4 walks; count
 *             backend): table 262,144 writes (fill) + 1,048,576 reads;
 *             index 4,096 writes + 1,048,576 reads; scratch 8,192 writes.
 *             sim, skylake-sp (32 KiB 8-way L1D, 1 MiB L2), 4 walks: L1D
 *             misses table 1.08 M (0.82 per access), index 0.20 M (the
 *             lines the table's misses evict), scratch 1 K: table 84.5%;
 *             L2 misses on the table 1.08 M (it does not fit in 1 MiB).
 *             The design geometry (48 KiB L1D, 2 MiB L2) gives the same
 *             L1D figures; its L2 keeps the table after the first walk
 *             (54 K L2 misses).
 *
 * Fixed twin (-DWL_FIXED=1): the table summed in address order, 8 entries
 * per line: one L1D miss per 8 reads (table 164 K L1D misses in the run,
 * 0.125 per access). The same entries are summed, so the output is the
 * same.
 *
 * SCALE: 4 x SCALE walks over the table.
 * Native: ~2 ms for the 4 walks (fixed ~0.5 ms).
 */
#include "wl.h"
#include "wrap_alloc.h"

#define TABLE_BITS 18
#define TABLE_NR (1u << TABLE_BITS)
#define STRIDE 4099u		/* odd: k * STRIDE mod 2^18 visits every entry once */
#define INDEX_NR 4096u
#define SCRATCH_NR 8192u
#define WALKS_PER_SCALE 4

void *xmalloc(size_t sz);

/* Allocates or dies: forwards to malloc, as wrappers do. */
__attribute__((noinline)) void *xmalloc(size_t sz)
{
	return wl_check_alloc(malloc(sz), "xmalloc");
}

__attribute__((noinline)) static uint64_t *make_table(void)
{
	return xmalloc(TABLE_NR * sizeof(uint64_t));
}

__attribute__((noinline)) static uint32_t *make_index(void)
{
	return CALLOC(INDEX_NR, sizeof(uint32_t));
}

__attribute__((noinline)) static uint64_t *make_scratch(void)
{
	return xmalloc(SCRATCH_NR * sizeof(uint64_t));
}

/* The sum from seed (the walk's number: without it the compiler may see
 * two walks as one pure call and make one). */
__attribute__((noinline)) static uint64_t sum_table(const uint64_t *table, const uint32_t *index,
						   uint64_t seed)
{
	uint64_t s = seed;

	for (uint32_t k = 0; k < TABLE_NR; k++) {
#ifdef WL_FIXED
		uint32_t e = k;
#else
		uint32_t e = (k * STRIDE) & (TABLE_NR - 1);
#endif
		s += table[e] * index[e & (INDEX_NR - 1)];
	}
	return s;
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 1000);
	uint64_t *table = make_table(), *scratch = make_scratch(), s = 0, t0;
	uint32_t *index = make_index();

	for (uint32_t i = 0; i < TABLE_NR; i++)
		table[i] = wl_mix(0, i);
	for (uint32_t i = 0; i < INDEX_NR; i++)
		index[i] = (uint32_t)wl_mix(1, i) | 1u;
	for (uint32_t i = 0; i < SCRATCH_NR; i++)
		scratch[i] = i;

	t0 = wl_now_ns();
	for (unsigned long w = 0; w < WALKS_PER_SCALE * scale; w++)
		s = wl_mix(s, sum_table(table, index, w));
	wl_report_time("wrapper_alloc", t0);

	printf("walks %lu checksum %016" PRIx64 " scratch %" PRIu64 "\n", WALKS_PER_SCALE * scale, s,
	       scratch[SCRATCH_NR - 1]);
	free(scratch);
	free(index);
	free(table);
	return 0;
}
