/*
 * false_sharing - per-thread counters packed in one heap block.
 *
 * Bottleneck: four worker threads each update their own struct counter
 * (two 8-byte fields: nr_events, nr_bytes) 400,000 times; the four 16-byte
 * counters sit in ONE 64-byte line of the block returned by
 * alloc_counters() (false_sharing.c; aligned_alloc(64, 4 x 16 B)). Thread k
 * writes only bytes [16k, 16k + 16) of the line: every coherence miss on the
 * block is false sharing (the words the other cores wrote are never the
 * words this access touches).
 *
 * The updates are relaxed atomic adds, the usual way to keep statistics
 * that another thread may read while the workers run (a progress reporter,
 * a stats endpoint). Each add is a read-modify-write that needs the line
 * exclusively, so on real cores the packed line moves between them on
 * nearly every add: natively the packed version is ~4x slower than the
 * padded twin on the 2-vCPU development VM (bench-false-sharing-fix). With
 * plain stores the store buffer would hide most of that cost there.
 *
 *   object    heap `counters` @ alloc_counters() (false_sharing.c), 64 B, 1 line
 *   threads   the four workers (main only allocates and joins)
 *   accesses  per worker 400 K iterations x 2 atomic adds (each a read and a
 *             write of the counter word) + 1 read of `sizes`
 *   expected  coherence misses on the line: roughly one per worker
 *             iteration while the workers overlap (~1.6 M in total; more if
 *             they interleave within an iteration), every one classified
 *             false sharing; invalidations sent ~= received ~= coherence
 *             misses; interventions (line dirty in another core) ~=
 *             coherence misses.
 *
 * Fixed twin (-DWL_FIXED=1): struct counter is padded and aligned to 64 bytes
 * (one line per worker, 256 B block): 4 compulsory misses, no coherence
 * misses. Same output.
 *
 * The workers also read a shared read-only table `sizes` (global, 1 KiB):
 * read sharing, which must not be reported as a problem.
 *
 * SCALE multiplies the iterations per worker (400 K x SCALE). Native: ~10 ms
 * packed, ~3 ms padded.
 */
#include <pthread.h>

#include "wl.h"

#define NR_WORKERS 4
#define NR_ITERS 400000

#ifdef WL_FIXED
struct counter {
	uint64_t nr_events;
	uint64_t nr_bytes;
} __attribute__((aligned(WL_LINE_SIZE)));
#else
struct counter {
	uint64_t nr_events;
	uint64_t nr_bytes;
};
#endif

uint32_t sizes[256];

static struct counter *counters;
static unsigned long nr_iters;
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

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	struct counter *me = &counters[id];

	pthread_barrier_wait(&start_line);
	for (unsigned long i = 0; i < nr_iters; i++) {
		__atomic_fetch_add(&me->nr_events, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&me->nr_bytes, sizes[(i * 7 + (unsigned long)id) & 255],
				   __ATOMIC_RELAXED);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 10000);
	pthread_t tid[NR_WORKERS];
	uint64_t sum = 0, t0;

	nr_iters = NR_ITERS * scale;
	for (int i = 0; i < 256; i++)
		sizes[i] = (uint32_t)(wl_mix(11, (uint64_t)i) & 4095);
	counters = alloc_counters(NR_WORKERS);
	pthread_barrier_init(&start_line, NULL, NR_WORKERS);

	t0 = wl_now_ns();
	for (int i = 0; i < NR_WORKERS; i++)
		if (pthread_create(&tid[i], NULL, worker, (void *)(intptr_t)i) != 0) {
			fprintf(stderr, "false_sharing: pthread_create failed\n");
			return 1;
		}
	for (int i = 0; i < NR_WORKERS; i++)
		pthread_join(tid[i], NULL);
	wl_report_time("false_sharing", t0);
	pthread_barrier_destroy(&start_line);

	printf("false_sharing: workers %d iterations %lu\n", NR_WORKERS, nr_iters);
	for (int i = 0; i < NR_WORKERS; i++) {
		printf("worker %d events %" PRIu64 " bytes %" PRIu64 "\n", i, counters[i].nr_events,
		       counters[i].nr_bytes);
		sum = wl_mix(sum, counters[i].nr_bytes);
	}
	printf("checksum %016" PRIx64 "\n", sum);
	free(counters);
	return 0;
}
