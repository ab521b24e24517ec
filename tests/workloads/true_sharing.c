/*
 * true_sharing - one counter written by every thread (atomics).
 *
 * Bottleneck: four worker threads scan their own slice of a private input
 * (`samples`, heap, alloc_samples()) and, for every sample, add its weight
 * to ONE global atomic counter `total_weight` with atomic_fetch_add (relaxed)
 * -- 300,000 read-modify-writes per worker on the same 8-byte word. Every
 * coherence miss on it is TRUE sharing (the word another core wrote is the
 * word this access touches).
 *
 *   object    global `total_weight` (a 64 B line-aligned struct holding
 *             the 8-byte counter); also `nr_samples_seen` (the same kind,
 *             one fetch_add per 64 samples: 1/64 of the traffic)
 *   threads   the four workers
 *   expected  coherence misses on total_weight: up to one per fetch_add
 *             (1.2 M in total) while the workers overlap, all classified
 *             true sharing; interventions ~= coherence misses. The slice
 *             reads of `samples` (4 x 300 K x 4 B, streaming) miss once per
 *             line: 75 K misses in total, not shared.
 *
 * Fixed twin (-DWL_FIXED=1): each worker accumulates in a local variable
 * and merges once (one fetch_add per worker per counter: 4 + 4 coherence
 * misses at most). Same output.
 *
 * SCALE multiplies the samples per worker (300 K x SCALE). Native on the
 * 2-vCPU development VM: ~22 ms, fixed ~1.2 ms (mostly the cost of a locked
 * add; the VM shows no cross-core line transfer cost, the simulator does).
 */
#include <pthread.h>
#include <stdatomic.h>

#include "wl.h"

#define NR_WORKERS 4
#define NR_SAMPLES 300000

/* Each counter fills a line of its own, so that every coherence miss on it
 * is true sharing (nothing else can be placed next to it). */
struct line_counter {
	_Atomic uint64_t n;
	char pad[WL_LINE_SIZE - sizeof(uint64_t)];
};

_Alignas(WL_LINE_SIZE) struct line_counter total_weight;
_Alignas(WL_LINE_SIZE) struct line_counter nr_samples_seen;

static uint32_t *samples;
static unsigned long nr_per_worker;
static pthread_barrier_t start_line;

__attribute__((noinline)) static uint32_t *alloc_samples(size_t nr)
{
	return wl_check_alloc(malloc(nr * sizeof(uint32_t)), "samples");
}

static void *worker(void *arg)
{
	size_t id = (size_t)(intptr_t)arg;
	unsigned long nr = nr_per_worker; /* not re-read after every atomic */
	const uint32_t *mine = samples + id * nr;
#ifdef WL_FIXED
	uint64_t local_weight = 0, local_seen = 0;
#endif

	pthread_barrier_wait(&start_line);
	for (unsigned long i = 0; i < nr; i++) {
		uint64_t w = mine[i] & 1023;
#ifdef WL_FIXED
		local_weight += w;
		if ((i & 63) == 63)
			local_seen += 64;
#else
		atomic_fetch_add_explicit(&total_weight.n, w, memory_order_relaxed);
		if ((i & 63) == 63)
			atomic_fetch_add_explicit(&nr_samples_seen.n, 64, memory_order_relaxed);
#endif
	}
#ifdef WL_FIXED
	atomic_fetch_add_explicit(&total_weight.n, local_weight, memory_order_relaxed);
	atomic_fetch_add_explicit(&nr_samples_seen.n, local_seen, memory_order_relaxed);
#endif
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 10000);
	pthread_t tid[NR_WORKERS];
	uint64_t seed = 42, t0;
	size_t nr;

	nr_per_worker = NR_SAMPLES * scale;
	nr = nr_per_worker * NR_WORKERS;
	samples = alloc_samples(nr);
	for (size_t i = 0; i < nr; i++)
		samples[i] = (uint32_t)wl_rand(&seed);
	pthread_barrier_init(&start_line, NULL, NR_WORKERS);

	t0 = wl_now_ns();
	for (int i = 0; i < NR_WORKERS; i++)
		if (pthread_create(&tid[i], NULL, worker, (void *)(intptr_t)i) != 0) {
			fprintf(stderr, "true_sharing: pthread_create failed\n");
			return 1;
		}
	for (int i = 0; i < NR_WORKERS; i++)
		pthread_join(tid[i], NULL);
	wl_report_time("true_sharing", t0);
	pthread_barrier_destroy(&start_line);

	printf("true_sharing: workers %d samples %lu\n", NR_WORKERS, nr_per_worker);
	printf("total_weight %" PRIu64 "\nnr_samples_seen %" PRIu64 "\n",
	       atomic_load(&total_weight.n), atomic_load(&nr_samples_seen.n));
	free(samples);
	return 0;
}
