/*
 * merger_filter.c - two workers simulated in time order (monitor/seq.c), for
 * the merger's filter (sim_core.h sim_mf_hit): mostly L1 hits on each
 * worker's own array, reads of a table both share (lines in S in both
 * cores), worker 1 rewriting table entries now and then (the other core's
 * copy invalidated), both bumping their own word of one line (false
 * sharing: M and invalidated in turn) and an atomic add at the end. The
 * threads meet only at their creation and the joins, so the simulated
 * interleaving, and every count, is the same in every run (the arrays are
 * static: malloc would give each thread an arena in the order the host
 * started them); the table's rewrites store the values it holds, so the
 * output is the same too.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#define N 4096
#define ROUNDS 24
#define TABLE 512

static uint64_t table[TABLE];
static struct {
	uint64_t c[2];
} counters __attribute__((aligned(64)));
static uint64_t total;
static uint64_t arrays[2][N];

static void *worker(void *arg)
{
	const int id = (int)(intptr_t)arg;
	uint64_t *a = arrays[id], s = 0;

	for (int i = 0; i < N; i++)
		a[i] = (uint64_t)(i * (id + 3));
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < N; i++) {
			s += a[i] + table[(i * 7 + r) & (TABLE - 1)];
			a[i] = s & 0xffff;
			if ((i & 15) == 0)
				counters.c[id]++;
		}
		if (id == 1)
			for (int j = r; j < TABLE; j += 32)
				table[j] = (uint64_t)j * 3;	/* what it holds */
	}
	__atomic_fetch_add(&total, s, __ATOMIC_RELAXED);
	return NULL;
}

int main(void)
{
	pthread_t t[2];

	for (int j = 0; j < TABLE; j++)
		table[j] = (uint64_t)j * 3;
	for (int k = 0; k < 2; k++)
		if (pthread_create(&t[k], NULL, worker, (void *)(intptr_t)k)) {
			fprintf(stderr, "merger_filter: pthread_create failed\n");
			return 1;
		}
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	printf("merger_filter: total %llu counters %llu %llu\n", (unsigned long long)total,
	       (unsigned long long)counters.c[0], (unsigned long long)counters.c[1]);
	return 0;
}
