/*
 * numa_first_touch - the master thread initialises a large array that the
 * workers then read (Gibson's AMMP and VirtualMesh case studies, seed 000).
 *
 * Bottleneck: under first-touch page placement every page of `field` (heap,
 * alloc_field() in numa_first_touch.c, 16 MiB = 4,096 pages, page aligned)
 * is placed on the node of the main thread, which writes it all before the
 * workers start. Four workers then each read their own contiguous quarter
 * (4 MiB, 1,024 pages) twice, word by word.
 *
 *   object    heap `field` @ alloc_field() (numa_first_touch.c), 16 MiB
 *   threads   main (first touch of all 4,096 pages), workers 0-3 (readers)
 *   expected  (simulated with --nodes N > 1) 100% of field's pages first-
 *             touched by the main thread; every memory access (last-level
 *             miss) of a worker that is not on main's node is remote: with
 *             the workers spread evenly over N nodes, ~(N-1)/N of the
 *             workers' memory accesses to field are remote. Per worker per
 *             sweep: 524,288 reads, 65,536 lines; with a last-level cache
 *             smaller than 16 MiB every line of every sweep is a memory
 *             access (2 x 65,536 per worker), with a larger one only the
 *             first sweep's lines (65,536 per worker).
 *
 * Fixed twin (-DWL_FIXED=1): each worker first-touches (initialises) its own
 * quarter, so each page lives on the node of the only thread that uses it:
 * 0% remote. Same values, same output. (This VM has one NUMA node, so there
 * is no native time difference; the effect is for the simulator.)
 *
 * SCALE multiplies the read sweeps per worker (2 x SCALE). Native: ~15 ms.
 */
#include <pthread.h>

#include "wl.h"

#define NR_WORKERS 4
#define FIELD_BYTES (16u << 20)
#define FIELD_ELEMS (FIELD_BYTES / sizeof(uint64_t))
#define PART_ELEMS (FIELD_ELEMS / NR_WORKERS)

static uint64_t *field;
static unsigned long nr_sweeps;
static uint64_t part_sum[NR_WORKERS];

__attribute__((noinline)) static uint64_t *alloc_field(void)
{
	return wl_check_alloc(aligned_alloc(WL_PAGE_SIZE, FIELD_BYTES), "field");
}

static void init_range(uint64_t *a, size_t first, size_t nr)
{
	for (size_t i = first; i < first + nr; i++)
		a[i] = wl_mix(5, i);
}

static void *worker(void *arg)
{
	size_t id = (size_t)(intptr_t)arg;
	const uint64_t *mine = field + id * PART_ELEMS;
	uint64_t s = 0;

#ifdef WL_FIXED
	init_range(field, id * PART_ELEMS, PART_ELEMS);
#endif
	for (unsigned long k = 0; k < nr_sweeps; k++)
		for (size_t i = 0; i < PART_ELEMS; i++)
			s += mine[i] ^ k;
	part_sum[id] = s;
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 1000);
	pthread_t tid[NR_WORKERS];
	uint64_t sum = 0, t0;

	nr_sweeps = 2 * scale;
	field = alloc_field();
	t0 = wl_now_ns();
#ifndef WL_FIXED
	init_range(field, 0, FIELD_ELEMS); /* the master touches every page first */
#endif
	for (int i = 0; i < NR_WORKERS; i++)
		if (pthread_create(&tid[i], NULL, worker, (void *)(intptr_t)i) != 0) {
			fprintf(stderr, "numa_first_touch: pthread_create failed\n");
			return 1;
		}
	for (int i = 0; i < NR_WORKERS; i++)
		pthread_join(tid[i], NULL);
	wl_report_time("numa_first_touch", t0);

	printf("numa_first_touch: workers %d sweeps %lu\n", NR_WORKERS, nr_sweeps);
	for (int i = 0; i < NR_WORKERS; i++) {
		printf("part %d %016" PRIx64 "\n", i, part_sum[i]);
		sum = wl_mix(sum, part_sum[i]);
	}
	printf("checksum %016" PRIx64 "\n", sum);
	free(field);
	return 0;
}
