/*
 * fs_behind_stream - false sharing hidden behind a hot streaming walk.
 *
 * Bottleneck: four workers walk a large matrix by columns (each worker its
 * own quarter of the columns) and, for every two elements read, add their
 * sum to the worker's own counter with a relaxed atomic add. The four
 * 16-byte counters sit in ONE 64-byte line (alloc_counters()): every add is
 * a read-modify-write that needs the line exclusively, so the line moves
 * between the cores on nearly every add -- false sharing, since no two
 * workers touch the same bytes. The matrix walk misses L1D and L2 on every
 * read and holds most of the misses; the counters hold fewer misses, but
 * each costs more (a coherence miss: an intervention from the core that
 * wrote the line last and the invalidation of its copy) than a matrix read
 * served by the last-level cache. A search that ranks by misses alone finds
 * the matrix; the fix that pays is the padding of the counters.
 *
 *   objects   heap `counters` @ alloc_counters() (fs_behind_stream.c), 64 B,
 *             1 line (4 x struct counter {sum, nr_cols});
 *             heap `matrix` @ alloc_matrix() (fs_behind_stream.c),
 *             1024 x 1024 uint64_t (8 MiB, rows of 8 KiB = 2 pages, page
 *             aligned), written once by T0, then read only
 *   threads   the four workers T1..T4 (main allocates, fills and joins)
 *   accesses  per pass, per worker: 256 columns x 1024 reads of the matrix
 *             (262,144) and 256 x 512 atomic adds of the sum + 256 of
 *             nr_cols on its counter (131,328; each one access, a read and
 *             a write); 3 passes x SCALE. Exact (AMEBA_ORACLE): matrix
 *             3,145,728 reads + 1,048,576 writes (the fill), counters
 *             1,575,949 accesses.
 *   expected  matrix: every read misses L1D and L2 (the 1,024 lines of a
 *             column are 8 KiB apart: one L1D set, 16 L2 sets of 16 ways)
 *             and the L1 dTLB (each read on a page other than the previous
 *             one's); the last-level cache holds the matrix after the fill.
 *             counters: up to one coherence miss per atomic add while the
 *             workers run together, all false sharing.
 *             Oracle, sim backend, preset skylake-sp: L1D misses 4.85 M,
 *             matrix 3.28 M (67.5%), counters 1.58 M (32.5%, of which 1.57 M
 *             coherence misses, all false sharing); stall cycles: matrix
 *             350 M, counters 340 M -- a third of the misses, half the
 *             stall. est_runtime_cycles 175.0 M; twin 89.9 M (1.95x).
 *             `ameba run` (skylake-sp): FalseSharing on the counters first
 *             (severity 0.44-0.49), ThreadReadMissRate on the matrix second
 *             (0.28-0.30), TLBThrashing on the matrix lower.
 *
 * Fixed twin (-DWL_FIXED=1): struct counter padded and aligned to 64 bytes
 * (one line per worker): no coherence misses; the matrix walk is unchanged.
 * Same output.
 *
 * SCALE multiplies the passes (3 x SCALE). Native, gcc -O2, on the 2-vCPU
 * development VM at load 8-9: kernel 16-22 ms, twin 7-24 ms (medians of 7;
 * 1.1-1.9x in 3 rounds): the line transfers show only while the vCPUs run
 * the workers together.
 */
#include <pthread.h>

#include "wl.h"

#define NR_WORKERS 4
#define N 1024
#define NR_PASSES 3

#ifdef WL_FIXED
struct counter {
	uint64_t sum;
	uint64_t nr_cols;
} __attribute__((aligned(WL_LINE_SIZE)));
#else
struct counter {
	uint64_t sum;
	uint64_t nr_cols;
};
#endif

static struct counter *counters;
static uint64_t *matrix;
static unsigned long nr_passes;
static pthread_barrier_t start_line; /* all workers start together */

__attribute__((noinline)) static struct counter *alloc_counters(int nr)
{
	size_t sz = (size_t)nr * sizeof(struct counter);
	struct counter *c;

	/* Round up to the alignment as C11 aligned_alloc() requires. */
	sz = (sz + WL_LINE_SIZE - 1) / WL_LINE_SIZE * WL_LINE_SIZE;
	c = wl_check_alloc(aligned_alloc(WL_LINE_SIZE, sz), "counters");
	memset(c, 0, sz);
	return c;
}

__attribute__((noinline)) static uint64_t *alloc_matrix(void)
{
	return wl_check_alloc(aligned_alloc(WL_PAGE_SIZE, (size_t)N * N * sizeof(uint64_t)),
			      "matrix");
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	struct counter *me = &counters[id];
	const uint64_t *m = matrix; /* a local: the atomics would reload a global */
	size_t first = (size_t)id * (N / NR_WORKERS);

	pthread_barrier_wait(&start_line);
	for (unsigned long p = 0; p < nr_passes; p++) {
		for (size_t j = first; j < first + N / NR_WORKERS; j++) {
			for (size_t i = 0; i < N; i += 2) {
				uint64_t a = m[i * N + j], b = m[(i + 1) * N + j];

				__atomic_fetch_add(&me->sum, a + b, __ATOMIC_RELAXED);
			}
			__atomic_fetch_add(&me->nr_cols, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 1000);
	pthread_t tid[NR_WORKERS];
	uint64_t sum = 0, t0;

	nr_passes = NR_PASSES * scale;
	counters = alloc_counters(NR_WORKERS);
	matrix = alloc_matrix();
	for (size_t i = 0; i < (size_t)N * N; i++)
		matrix[i] = (i * 0x9e3779b97f4a7c15ull) >> 40;
	pthread_barrier_init(&start_line, NULL, NR_WORKERS);

	t0 = wl_now_ns();
	for (int i = 0; i < NR_WORKERS; i++)
		if (pthread_create(&tid[i], NULL, worker, (void *)(intptr_t)i) != 0) {
			fprintf(stderr, "fs_behind_stream: pthread_create failed\n");
			return 1;
		}
	for (int i = 0; i < NR_WORKERS; i++)
		pthread_join(tid[i], NULL);
	wl_report_time("fs_behind_stream", t0);
	pthread_barrier_destroy(&start_line);

	printf("fs_behind_stream: workers %d n %d passes %lu\n", NR_WORKERS, N, nr_passes);
	for (int i = 0; i < NR_WORKERS; i++) {
		printf("worker %d columns %" PRIu64 " sum %" PRIu64 "\n", i, counters[i].nr_cols,
		       counters[i].sum);
		sum = wl_mix(sum, counters[i].sum);
	}
	printf("checksum %016" PRIx64 "\n", sum);
	free(matrix);
	free(counters);
	return 0;
}
