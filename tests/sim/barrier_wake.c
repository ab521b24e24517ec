/*
 * barrier_wake - two workers that meet at a barrier ROUNDS times and, after
 * each meeting, each bump its own counter of one shared line WRITES times
 * (false sharing right after the barrier). In simulated time both leave
 * each round at the last arrival's clock, so their writes interleave from
 * the first one on and nearly every write takes the line from the other
 * core. The waiter's wake takes the host some microseconds, longer than
 * the last arrival needs for its WRITES writes: a merger that went on
 * without the waiter meanwhile (seq_merge.c await_waiters) merged the
 * arriver's writes alone, and counted a handful of coherence misses a
 * round instead (order.sh checks the count).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#define ROUNDS 200
#define WRITES 64

static struct {
	volatile uint64_t n[2];
} line __attribute__((aligned(64)));
static pthread_barrier_t bar;

static void *worker(void *arg)
{
	const int id = (int)(intptr_t)arg;

	for (int r = 0; r < ROUNDS; r++) {
		pthread_barrier_wait(&bar);
		for (int i = 0; i < WRITES; i++)
			line.n[id]++;
	}
	return NULL;
}

int main(void)
{
	pthread_t th[2];

	pthread_barrier_init(&bar, NULL, 2);
	for (intptr_t i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&bar);
	printf("%llu %llu\n", (unsigned long long)line.n[0], (unsigned long long)line.n[1]);
	return 0;
}
