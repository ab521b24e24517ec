/*
 * thread_churn - 10,000 short-lived threads, created and joined four at a
 * time, each touching a little memory.
 *
 * A stress program for the thread registry and per-thread state (no
 * bottleneck, no twin): thread start/exit events, a simulated core per
 * thread (or a mapping when threads outnumber cores), stacks reused by
 * glibc's stack cache, per-thread malloc arenas, TLS. At most 5 threads
 * (main + 4) are alive at any time.
 *
 * Each thread k (k = 0..9,999):
 *   - reads the shared table `weights` (global, 64 x 8 B, read-only);
 *   - writes its TLS counter `tls_nr_touches` (__thread);
 *   - mallocs a 256 B buffer (site scratch_buffer() in thread_churn.c),
 *     fills it, sums it, frees it;
 *   - adds its result to `slots[k % 1024]` (global, 8 KiB). The four
 *     threads alive together write four adjacent slots of one line: a
 *     little false sharing, 4 writes per batch.
 *   expected  10,000 thread starts and exits (+ main), 1.0-1.7 M memory
 *             references in the threads (100-170 per thread, depending on
 *             how much of the TLS counter's traffic the compiler keeps in
 *             a register), 10,000 heap blocks from one site, never more
 *             than 4 live at once.
 *
 * SCALE multiplies the number of threads (10,000 x SCALE). Native: ~0.2 s.
 */
#include <pthread.h>

#include "wl.h"

#define NR_THREADS 10000
#define BATCH 4
#define NR_SLOTS 1024
#define SCRATCH_WORDS 32

uint64_t weights[64];
uint64_t slots[NR_SLOTS];
static __thread uint64_t tls_nr_touches;

__attribute__((noinline)) static uint64_t *scratch_buffer(void)
{
	return wl_check_alloc(malloc(SCRATCH_WORDS * sizeof(uint64_t)), "scratch");
}

static void *churn(void *arg)
{
	uint64_t k = (uint64_t)(uintptr_t)arg;
	uint64_t *buf = scratch_buffer();
	uint64_t s = 0;

	for (int i = 0; i < SCRATCH_WORDS; i++) {
		buf[i] = weights[(k + (uint64_t)i) & 63] * (uint64_t)(i + 1);
		tls_nr_touches++;
	}
	for (int i = 0; i < SCRATCH_WORDS; i++)
		s += buf[i] ^ k;
	free(buf);
	slots[k % NR_SLOTS] += s + tls_nr_touches;
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 100);
	unsigned long nr_threads = NR_THREADS * scale;
	pthread_t tid[BATCH];
	uint64_t sum = 0, t0;

	for (int i = 0; i < 64; i++)
		weights[i] = wl_mix(13, (uint64_t)i);

	t0 = wl_now_ns();
	for (unsigned long k = 0; k < nr_threads; k += BATCH) {
		int n = 0;

		for (; n < BATCH && k + (unsigned long)n < nr_threads; n++)
			if (pthread_create(&tid[n], NULL, churn, (void *)(uintptr_t)(k + (unsigned long)n)) != 0) {
				fprintf(stderr, "thread_churn: pthread_create failed at %lu\n", k + (unsigned long)n);
				return 1;
			}
		for (int i = 0; i < n; i++)
			pthread_join(tid[i], NULL);
	}
	wl_report_time("thread_churn", t0);

	for (int i = 0; i < NR_SLOTS; i++)
		sum = wl_mix(sum, slots[i]);
	printf("thread_churn: threads %lu batch %d\n", nr_threads, BATCH);
	printf("checksum %016" PRIx64 "\n", sum);
	return 0;
}
