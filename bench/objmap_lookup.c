/*
 * objmap_lookup.c - cost of the object map with one million live blocks.
 *
 * Prints `name: value` lines (nanoseconds per operation, best of 3 runs):
 *   objmap_insert_ns_1m_blocks           mon_objmap_add_block, 1M blocks
 *   objmap_lookup_ns_1m_blocks           random addresses, through a thread's
 *                                        cache that misses (the real slow path)
 *   objmap_lookup_ns_1m_blocks_nocache   the same without a thread (index only);
 *                                        lower mostly because independent
 *                                        lookups then overlap their misses,
 *                                        while a cache makes each depend on
 *                                        the one before (as in the runtime)
 *   objmap_lookup_ns_cached              one hot object: first-way cache hits
 *   objmap_lookup_ns_cached_4way         4 hot objects in turn: cache hits
 *   objmap_lookup_ns_global              a global of this executable, uncached
 *   objmap_delete_ns_1m_blocks           mon_objmap_del_block, 1M blocks
 *   objmap_lookup_ns_1m_blocks_2threads  random lookups on 2 threads at once
 *   objmap_lookup_ns_1m_blocks_1thread_churn  random lookups on one thread
 *                                        while another frees and re-adds blocks
 *                                        (seqlock retries, fresh records)
 * The threaded figures assume two idle cores; on a loaded machine they
 * mostly measure the scheduler.
 *
 *   objmap_ref_dram_latency_ns           reference: one dependent random load
 *                                        over 256 MiB (what a cold miss costs)
 *
 * Blocks are synthetic (the map never touches their memory): sizes 16..112
 * bytes with gaps, so ~40 blocks share a 4 KiB page, like a small-object heap.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mon.h"

#define NR_BLOCKS 1000000
#define NR_LOOKUPS 4000000
#define BASE ((uintptr_t)0x200000000000ull)

static uintptr_t *blk_start;
static uint32_t *blk_sz;
static uintptr_t *probe;
static volatile uintptr_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rng(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static double insert_all(void)
{
	uint64_t t0 = now_ns();

	for (uint32_t i = 0; i < NR_BLOCKS; i++)
		mon_objmap_add_block(MON_OBJ_HEAP, blk_start[i], blk_sz[i], 0, 0);
	return (double)(now_ns() - t0) / NR_BLOCKS;
}

static double delete_all(void)
{
	uint64_t t0 = now_ns();

	for (uint32_t i = 0; i < NR_BLOCKS; i++)
		mon_objmap_del_block(blk_start[i]);
	return (double)(now_ns() - t0) / NR_BLOCKS;
}

static double lookup_probes(struct mon_thread *t, const uintptr_t *p, uint32_t nr)
{
	uint64_t t0 = now_ns();
	uintptr_t acc = 0;

	for (uint32_t i = 0; i < nr; i++)
		acc += (uintptr_t)mon_objmap_lookup(t, p[i]);
	sink = acc;
	return (double)(now_ns() - t0) / nr;
}

static double min3(double a, double b, double c)
{
	double m = a < b ? a : b;

	return m < c ? m : c;
}

/* ---- concurrent lookups while a writer churns ---- */

static int churn_stop;
static double thread_ns[4];

static void *reader(void *arg)
{
	int me = (int)(uintptr_t)arg;
	struct mon_thread tt;

	memset(&tt, 0, sizeof(tt));
	thread_ns[me] = lookup_probes(&tt, probe + (size_t)me * (NR_LOOKUPS / 4), NR_LOOKUPS / 4);
	return NULL;
}

static void *writer(void *arg)
{
	uint64_t s = 99;

	/* Frees and re-adds random existing blocks: same ranges, new records. */
	while (!__atomic_load_n(&churn_stop, __ATOMIC_RELAXED)) {
		uint32_t i = (uint32_t)(rng(&s) % NR_BLOCKS);

		mon_objmap_del_block(blk_start[i]);
		mon_objmap_add_block(MON_OBJ_HEAP, blk_start[i], blk_sz[i], 0, 0);
	}
	return NULL;
}

/* Mean ns per lookup of nr_readers threads (1..4), with or without a
 * writer thread churning blocks meanwhile. */
static double lookup_threads(int nr_readers, int with_writer)
{
	pthread_t r[4], w;
	double sum = 0;

	__atomic_store_n(&churn_stop, 0, __ATOMIC_RELAXED);
	if (with_writer)
		pthread_create(&w, NULL, writer, NULL);
	for (int i = 0; i < nr_readers; i++)
		pthread_create(&r[i], NULL, reader, (void *)(uintptr_t)i);
	for (int i = 0; i < nr_readers; i++)
		pthread_join(r[i], NULL);
	__atomic_store_n(&churn_stop, 1, __ATOMIC_RELAXED);
	if (with_writer)
		pthread_join(w, NULL);
	for (int i = 0; i < nr_readers; i++)
		sum += thread_ns[i];
	return sum / nr_readers;
}

/* A random cyclic permutation of 32M words: each load depends on the last. */
static double dram_latency(void)
{
	size_t n = (size_t)32 << 20;
	uint32_t *next = malloc(n * sizeof(*next));
	uint64_t s = 7, t0;
	uint32_t p = 0;

	if (!next)
		return 0;
	for (size_t i = 0; i < n; i++)
		next[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) {	/* Sattolo: one cycle */
		size_t j = rng(&s) % i;
		uint32_t x = next[i];

		next[i] = next[j];
		next[j] = x;
	}
	t0 = now_ns();
	for (int k = 0; k < 4000000; k++)
		p = next[p];
	sink = p;
	t0 = now_ns() - t0;
	free(next);
	return (double)t0 / 4000000;
}

static int bench_global[1024];

int main(void)
{
	uintptr_t a = BASE, hot[4];
	struct mon_thread tt;
	double ins[3], del[3], lk[3], lk_nc[3], lk_c[3], lk_c4[3], lk_g[3];
	uint64_t s = 12345;

	memset(&tt, 0, sizeof(tt));
	blk_start = malloc(NR_BLOCKS * sizeof(*blk_start));
	blk_sz = malloc(NR_BLOCKS * sizeof(*blk_sz));
	probe = malloc(NR_LOOKUPS * sizeof(*probe));
	if (!blk_start || !blk_sz || !probe)
		return 1;
	for (uint32_t i = 0; i < NR_BLOCKS; i++) {
		a += 16 * (rng(&s) % 3);
		blk_start[i] = a;
		blk_sz[i] = 16 + 16 * (uint32_t)(rng(&s) % 7);
		a += blk_sz[i];
	}
	for (uint32_t i = 0; i < NR_LOOKUPS; i++) {
		uint32_t b = (uint32_t)(rng(&s) % NR_BLOCKS);

		probe[i] = blk_start[b] + rng(&s) % blk_sz[b];
	}
	for (int i = 0; i < 4; i++)
		hot[i] = blk_start[i * 1000] + 8;

	for (int run = 0; run < 3; run++) {
		uintptr_t hp[4096];

		ins[run] = insert_all();
		/* First touch sets ACCESSED (one CAS per object): not measured. */
		lookup_probes(NULL, blk_start, NR_BLOCKS);
		lk_nc[run] = lookup_probes(NULL, probe, NR_LOOKUPS);
		lk[run] = lookup_probes(&tt, probe, NR_LOOKUPS);
		for (int i = 0; i < 4096; i++)
			hp[i] = hot[0] + (uintptr_t)(i & 7);
		lookup_probes(&tt, hp, 4096);	/* warm the cache */
		lk_c[run] = 0;
		for (int k = 0; k < 1000; k++)
			lk_c[run] += lookup_probes(&tt, hp, 4096);
		lk_c[run] /= 1000;
		for (int i = 0; i < 4096; i++)
			hp[i] = hot[i & 3] + (uintptr_t)(i & 7);
		lookup_probes(&tt, hp, 4096);
		lk_c4[run] = 0;
		for (int k = 0; k < 1000; k++)
			lk_c4[run] += lookup_probes(&tt, hp, 4096);
		lk_c4[run] /= 1000;
		for (int i = 0; i < 4096; i++)
			hp[i] = (uintptr_t)&bench_global[(i * 7) & 1023];
		lk_g[run] = 0;
		for (int k = 0; k < 100; k++)
			lk_g[run] += lookup_probes(NULL, hp, 4096);
		lk_g[run] /= 100;
		if (run < 2)
			del[run] = delete_all();
	}
	printf("objmap_insert_ns_1m_blocks: %.1f\n", min3(ins[0], ins[1], ins[2]));
	printf("objmap_lookup_ns_1m_blocks: %.1f\n", min3(lk[0], lk[1], lk[2]));
	printf("objmap_lookup_ns_1m_blocks_nocache: %.1f\n", min3(lk_nc[0], lk_nc[1], lk_nc[2]));
	printf("objmap_lookup_ns_cached: %.2f\n", min3(lk_c[0], lk_c[1], lk_c[2]));
	printf("objmap_lookup_ns_cached_4way: %.2f\n", min3(lk_c4[0], lk_c4[1], lk_c4[2]));
	printf("objmap_lookup_ns_global: %.1f\n", min3(lk_g[0], lk_g[1], lk_g[2]));
	printf("objmap_lookup_ns_1m_blocks_2threads: %.1f\n", lookup_threads(2, 0));
	printf("objmap_lookup_ns_1m_blocks_1thread_churn: %.1f\n", lookup_threads(1, 1));
	del[2] = delete_all();
	printf("objmap_delete_ns_1m_blocks: %.1f\n", min3(del[0], del[1], del[2]));
	printf("objmap_nr_objs: %u\n", mon_objmap_nr_objs());
	printf("objmap_ref_dram_latency_ns: %.1f\n", dram_latency());
	return 0;
}
