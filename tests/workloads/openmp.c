/*
 * openmp - an OpenMP parallel loop over shared arrays with a reduction,
 * scheduled round-robin one iteration at a time (compile with -fopenmp).
 *
 * Bottleneck: `#pragma omp parallel for schedule(static, 1)` over dst[i] =
 * src[i] * 3 + rep with 4 threads: thread t writes dst[t], dst[t + 4], ...
 * so every 64-byte line of `dst` (8 words) is written by all 4 threads,
 * 2 words each: false sharing on every line of an 8 MiB array. Each thread
 * also reads every line of `src` for 2 of its 8 words (read sharing,
 * harmless apart from 4x the line fetches).
 *
 *   objects   heap `dst` @ alloc_dst(), heap `src` @ alloc_src() (openmp.c),
 *             8 MiB each (1 M uint64_t)
 *   region    the parallel loop in scale_rows() (4 parallel regions, one
 *             per repetition; the reduction of `sum` at each region's end)
 *   threads   the OpenMP team of 4 (master + 3 workers)
 *   expected  per repetition, 131,072 lines of dst each written by 4
 *             threads: while the threads overlap, at least 3 and at most 8
 *             ownership transfers per line (0.39-1.05 M coherence misses
 *             per repetition, 1.6-4.2 M for the 4 repetitions), all
 *             classified false sharing (disjoint words); src adds no
 *             coherence misses (never written in the loop).
 *
 * Fixed twin (-DWL_FIXED=1): schedule(static): each thread owns one
 * contiguous quarter (262,144 words, 2 MiB, starting on a line boundary)
 * of dst, so no line is written by two threads: no coherence misses on dst
 * (a handful on the reduction's shared state). Same output.
 *
 * SCALE multiplies the repetitions (4 x SCALE). Native: ~20 ms.
 */
#include <omp.h>

#include "wl.h"

#define NR_THREADS 4
#define NR_ELEMS (1u << 20)

static uint64_t *src, *dst;

__attribute__((noinline)) static uint64_t *alloc_src(void)
{
	return wl_check_alloc(aligned_alloc(WL_LINE_SIZE, NR_ELEMS * sizeof(uint64_t)), "src");
}

__attribute__((noinline)) static uint64_t *alloc_dst(void)
{
	return wl_check_alloc(aligned_alloc(WL_LINE_SIZE, NR_ELEMS * sizeof(uint64_t)), "dst");
}

static uint64_t scale_rows(uint64_t rep)
{
	uint64_t sum = 0;

#ifdef WL_FIXED
#pragma omp parallel for num_threads(NR_THREADS) schedule(static) reduction(+ : sum)
#else
#pragma omp parallel for num_threads(NR_THREADS) schedule(static, 1) reduction(+ : sum)
#endif
	for (size_t i = 0; i < NR_ELEMS; i++) {
		dst[i] = src[i] * 3 + rep;
		sum += dst[i] ^ i;
	}
	return sum;
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 1000);
	unsigned long nr_reps = 4 * scale;
	uint64_t total = 0, check = 0, t0;

	src = alloc_src();
	dst = alloc_dst();
	for (size_t i = 0; i < NR_ELEMS; i++)
		src[i] = wl_mix(17, i);

	t0 = wl_now_ns();
	for (unsigned long rep = 0; rep < nr_reps; rep++)
		total = wl_mix(total, scale_rows(rep));
	wl_report_time("openmp", t0);

	for (size_t i = 0; i < NR_ELEMS; i += 97)
		check = wl_mix(check, dst[i]);
	printf("openmp: threads %d elements %u repetitions %lu\n", NR_THREADS, NR_ELEMS, nr_reps);
	printf("sum %016" PRIx64 "\ndst %016" PRIx64 "\n", total, check);
	free(src);
	free(dst);
	return 0;
}
