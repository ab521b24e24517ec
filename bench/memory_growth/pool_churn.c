/*
 * pool_churn - bench/memory_growth's shared pool: 6 threads pick slots of
 * one pool of 512 blocks at random under 16 striped locks; each step reads
 * the slot's block and, one time in 8 each, frees it and puts a new one of
 * 8-307 bytes, or reallocates it to 8-607 bytes, else writes its first
 * byte. Every block passes through several threads (a record with three
 * holders or more: monitor/fold.c's extra holders). Per thread STEPS steps
 * (argv[1], default 300,000): ~STEPS * 6 / 4 allocations in all, 512 live.
 * (The final figure it prints depends on how the threads interleave.)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 512
struct blk {
	uint32_t len, gen;
	unsigned char data[];
};

static struct blk *pool[SLOTS];
static pthread_mutex_t lk[16];
static long steps;

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static struct blk *mk(uint32_t len, uint32_t gen)
{
	struct blk *b = malloc(sizeof(*b) + len);

	if (!b) {
		fprintf(stderr, "pool_churn: out of memory\n");
		exit(1);
	}
	b->len = len;
	b->gen = gen;
	memset(b->data, (int)(gen & 0xff), len);
	return b;
}

static void *worker(void *arg)
{
	uint64_t s = 0x9e3779b97f4a7c15ull * ((uintptr_t)arg + 1), sum = 0;

	for (long i = 0; i < steps; i++) {
		uint32_t k = (uint32_t)(rnd(&s) % SLOTS);
		pthread_mutex_t *m = &lk[k % 16];

		struct blk *b;
		uint64_t r;

		pthread_mutex_lock(m);
		b = pool[k];
		sum += b->data[b->len - 1] + b->gen;
		r = rnd(&s) % 8;
		if (r == 0) {
			free(b);
			pool[k] = mk(8 + (uint32_t)(rnd(&s) % 300), (uint32_t)i);
		} else if (r == 1) {
			uint32_t nl = 8 + (uint32_t)(rnd(&s) % 600);
			b = realloc(b, sizeof(*b) + nl);
			if (!b) {
				fprintf(stderr, "pool_churn: out of memory\n");
				exit(1);
			}
			if (nl > b->len)
				memset(b->data + b->len, 1, nl - b->len);
			b->len = nl;
			pool[k] = b;
		} else {
			b->data[0]++;
		}
		pthread_mutex_unlock(m);
	}
	return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv)
{
	pthread_t th[6];
	uint64_t fin = 0;

	steps = argc > 1 ? atol(argv[1]) : 300000;
	for (int i = 0; i < 16; i++)
		pthread_mutex_init(&lk[i], NULL);
	for (int k = 0; k < SLOTS; k++)
		pool[k] = mk(16 + (uint32_t)k % 100, 0);
	for (long t = 0; t < 6; t++)
		pthread_create(&th[t], NULL, worker, (void *)t);
	for (int t = 0; t < 6; t++)
		pthread_join(th[t], NULL);
	for (int k = 0; k < SLOTS; k++) {
		fin += pool[k]->len + pool[k]->data[0];
		free(pool[k]);
	}
	printf("pool_churn: %ld steps x 6, final %lu\n", steps, (unsigned long)fin);
	return 0;
}
