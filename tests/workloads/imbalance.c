/*
 * imbalance - threads with unequal memory work.
 *
 * Bottleneck: four workers relax disjoint slices of `cells` (heap,
 * alloc_cells() in imbalance.c, 16 MiB = 2 M words), 3 read-modify-write
 * sweeps each; the partition is skewed: worker 0 gets 5/8 of the cells,
 * workers 1-3 get 1/8 each.
 *
 *   object    heap `cells` @ alloc_cells() (imbalance.c), 16 MiB
 *   region    relax_slice() (the workers' loop)
 *   expected  worker 0 issues 5/8 of all references and misses of the
 *             region (3.93 M of 6.29 M word updates = read + write each;
 *             with caches < 16 MiB, 492 K of 786 K L1D/L2 misses, one per
 *             line per sweep): 2.5x the per-worker mean,
 *             i.e. +150% over the mean; workers 1-3 each 1/8 = 0.5x the mean
 *             (-50%). The region's duration is set by worker 0: with one
 *             core per thread the other workers idle 80% of it.
 *             Natively on the 2-core VM at SCALE 10: ~57 ms vs ~34 ms for
 *             the fixed twin (1.7x); at SCALE 1 the ~6 ms kernel is too
 *             short against thread start-up to show a difference.
 *
 * Fixed twin (-DWL_FIXED=1): equal quarters (1/4 each, every worker 0%
 * over the mean). Every cell gets the same updates, so the output is the
 * same.
 *
 * SCALE multiplies the sweeps (3 x SCALE). Native: ~20 ms in all.
 */
#include <pthread.h>

#include "wl.h"

#define NR_WORKERS 4
#define CELLS_BYTES (16u << 20)
#define NR_CELLS (CELLS_BYTES / sizeof(uint64_t))

static uint64_t *cells;
static unsigned long nr_sweeps;

struct slice {
	size_t first, nr;
};

static struct slice slices[NR_WORKERS];

__attribute__((noinline)) static uint64_t *alloc_cells(void)
{
	return wl_check_alloc(malloc(CELLS_BYTES), "cells");
}

/* The parallel region: nr_sweeps read-modify-write sweeps over one slice. */
__attribute__((noinline)) static void relax_slice(size_t first, size_t nr)
{
	for (unsigned long k = 0; k < nr_sweeps; k++)
		for (size_t i = first; i < first + nr; i++)
			cells[i] = cells[i] * 3 + (i & 15) + k;
}

static void *worker(void *arg)
{
	struct slice *sl = arg;

	relax_slice(sl->first, sl->nr);
	return NULL;
}

/* Splits the cells in eighths: skewed = 5,1,1,1; balanced = 2,2,2,2. */
static void partition(void)
{
#ifdef WL_FIXED
	static const int eighths[NR_WORKERS] = { 2, 2, 2, 2 };
#else
	static const int eighths[NR_WORKERS] = { 5, 1, 1, 1 };
#endif
	size_t first = 0;

	for (int i = 0; i < NR_WORKERS; i++) {
		slices[i].first = first;
		slices[i].nr = NR_CELLS / 8 * (size_t)eighths[i];
		first += slices[i].nr;
	}
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 1000);
	pthread_t tid[NR_WORKERS];
	uint64_t t0, total = 0;

	nr_sweeps = 3 * scale;
	cells = alloc_cells();
	for (size_t i = 0; i < NR_CELLS; i++)
		cells[i] = i;
	partition();

	t0 = wl_now_ns();
	for (int i = 0; i < NR_WORKERS; i++)
		if (pthread_create(&tid[i], NULL, worker, &slices[i]) != 0) {
			fprintf(stderr, "imbalance: pthread_create failed\n");
			return 1;
		}
	for (int i = 0; i < NR_WORKERS; i++)
		pthread_join(tid[i], NULL);
	wl_report_time("imbalance", t0);

	/* Checksum the cells, not per-worker figures: both variants print the same. */
	for (size_t i = 0; i < NR_CELLS; i++)
		total = wl_mix(total, cells[i]);
	printf("imbalance: workers %d sweeps %lu\n", NR_WORKERS, nr_sweeps);
	printf("checksum %016" PRIx64 "\n", total);
	free(cells);
	return 0;
}
