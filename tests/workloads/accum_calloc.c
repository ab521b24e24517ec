/*
 * accum_calloc - per-thread accumulators in one calloc'd array, written the
 * way public pthreads benchmarks write them (a histogram, a word count, a
 * parallel sum): `struct acc { sum, count }` x nthreads from calloc(), and
 * each worker updates acc[id] in its loop with plain code.
 *
 * Whether that is false sharing depends on the compiler's optimisation
 * level, so the workload is built twice (workloads.cmake), each with its
 * fixed twin:
 *   accum_calloc_O0   gcc -O0: acc[id].sum and acc[id].count are loaded and
 *                     stored on every element. The four 16-byte structs of
 *                     the 64-byte block lie in one line, or two (calloc()
 *                     aligns to 16 bytes only): every store needs a line
 *                     that other workers also write -- false sharing.
 *   accum_calloc_O2   gcc -O2: the accumulators live in registers for the
 *                     whole loop and are stored once at its end (the input
 *                     is uint32_t, so by the aliasing rules its reads cannot
 *                     change the uint64_t fields; the bounds are locals).
 *                     Checked with objdump -d on wl_accum_calloc_O2 and
 *                     wl_accum_calloc_O2_native (gcc 12): worker()'s inner
 *                     loop holds one load (in[i], __tsan_read4 in the
 *                     instrumented build) and no store; acc[id].sum and
 *                     .count are loaded before it and stored after it, once
 *                     per pass. 16 stores to the block in all: no false
 *                     sharing to find, and a tool must not report any.
 *
 *   objects   heap `acc` @ alloc_accumulators() (accum_calloc.c), 64 B,
 *             calloc(4, sizeof(struct acc));
 *             heap `input` @ alloc_input() (accum_calloc.c), 1 M uint32_t
 *             (4 MiB), written once by T0, read by the workers
 *   threads   the four workers T1..T4, each a contiguous quarter of the
 *             input (262,144 elements)
 *   accesses  per pass, per worker: 262,144 input reads; at -O0 also
 *             262,144 x (load + store of sum, load + store of count) on
 *             acc[id]; at -O2 a load and a store of each field per pass.
 *             2 passes x SCALE
 *   expected  -O0: up to one coherence miss per element on the acc block
 *             while the workers overlap, all false sharing; input: one L1D
 *             miss per 16 reads. At -O0 each element also reads the global
 *             pointer `acc` three times (read shared, L1D hits).
 *             Oracle (sim, skylake-sp), -O0: acc block 4,194,316 reads +
 *             4,194,304 writes (exact), 3.60 M coherence misses, all false
 *             sharing, 97% of the stall cycles; input 2,097,152 reads +
 *             1,048,576 writes (exact), 197 K L1D misses.
 *             est_runtime_cycles 301.5 M, twin 22.8 M (13.2x).
 *             -O2: acc block 28 reads + 16 writes (exact), no coherence
 *             miss; est_runtime_cycles 8.11 M, twin 8.11 M (1.00x).
 *             `ameba run` (skylake-sp): -O0 FalseSharing on the acc block
 *             first (severity 0.67); -O2 no FalseSharing finding at all
 *             (RemoteMemAccess on the input first: the preset has 2 nodes
 *             and T0 filled it).
 *
 * Fixed twin (-DWL_FIXED=1): struct acc aligned (and so padded) to 64
 * bytes. calloc() still aligns the block to 16 bytes only, so an element
 * may straddle two lines, but the 16 bytes each worker touches (sum, count
 * at the start of its element) never share a line with another worker's.
 * Same output.
 *
 * SCALE multiplies the passes (2 x SCALE). Native on the 2-vCPU VM (load
 * 8-9, medians of 7): -O0 5-9 ms, twin 5-6 ms (1.0-1.7x: plain stores, the
 * store buffer hides most of the line transfers); -O2 0.9 ms both.
 */
#include <pthread.h>

#include "wl.h"

#define NR_WORKERS 4
#define NR_INPUT (1u << 20)
#define NR_PASSES 2

#ifdef WL_FIXED
struct acc {
	uint64_t sum;
	uint64_t count;
} __attribute__((aligned(WL_LINE_SIZE)));
#else
struct acc {
	uint64_t sum;
	uint64_t count;
};
#endif

struct work {
	int id;
	size_t first, nr;
};

static struct acc *acc;
static uint32_t *input;
static unsigned long nr_passes;
static pthread_barrier_t start_line; /* all workers start together */

__attribute__((noinline)) static struct acc *alloc_accumulators(int nthreads)
{
	return wl_check_alloc(calloc((size_t)nthreads, sizeof(struct acc)), "accumulators");
}

__attribute__((noinline)) static uint32_t *alloc_input(size_t nr)
{
	return wl_check_alloc(malloc(nr * sizeof(uint32_t)), "input");
}

static void *worker(void *arg)
{
	const struct work *w = arg;
	int id = w->id;
	const uint32_t *in = input + w->first;
	size_t nr = w->nr;
	unsigned long passes = nr_passes;

	pthread_barrier_wait(&start_line);
	for (unsigned long p = 0; p < passes; p++) {
		for (size_t i = 0; i < nr; i++) {
			uint32_t x = in[i];

			acc[id].sum += x;
			acc[id].count++;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 1000);
	pthread_t tid[NR_WORKERS];
	struct work work[NR_WORKERS];
	uint64_t sum = 0, t0;

	nr_passes = NR_PASSES * scale;
	acc = alloc_accumulators(NR_WORKERS);
	input = alloc_input(NR_INPUT);
	for (size_t i = 0; i < NR_INPUT; i++)
		input[i] = (uint32_t)((i * 0x9e3779b97f4a7c15ull) >> 44);
	pthread_barrier_init(&start_line, NULL, NR_WORKERS);

	t0 = wl_now_ns();
	for (int i = 0; i < NR_WORKERS; i++) {
		work[i].id = i;
		work[i].first = (size_t)i * (NR_INPUT / NR_WORKERS);
		work[i].nr = NR_INPUT / NR_WORKERS;
		if (pthread_create(&tid[i], NULL, worker, &work[i]) != 0) {
			fprintf(stderr, "accum_calloc: pthread_create failed\n");
			return 1;
		}
	}
	for (int i = 0; i < NR_WORKERS; i++)
		pthread_join(tid[i], NULL);
	wl_report_time("accum_calloc", t0);
	pthread_barrier_destroy(&start_line);

	printf("accum_calloc: workers %d input %u passes %lu\n", NR_WORKERS, NR_INPUT, nr_passes);
	for (int i = 0; i < NR_WORKERS; i++) {
		printf("worker %d count %" PRIu64 " sum %" PRIu64 "\n", i, acc[i].count, acc[i].sum);
		sum = wl_mix(sum, acc[i].sum);
	}
	printf("checksum %016" PRIx64 "\n", sum);
	free(input);
	free(acc);
	return 0;
}
