/*
 * order_sync - threads that block in every way the ordered simulation
 * (monitor/seq.c) must see: barriers, a contended mutex, a condition
 * variable hand-off, a semaphore, sleeps, joins. Each of 3 workers writes
 * its own 4096-word slice of `slices` once per phase (PHASES phases), so
 * the slices' accesses are known exactly: 3 x PHASES x 4096 writes. The
 * program must end, print the same checksum as natively, and lose no
 * access (order.sh checks the oracle). The last worker writes `handed`
 * (a line of its own) as it ends, and main reads it after the joins, just
 * before it exits:
 * the read must come after the write (the line dirty in that worker's
 * core), however far the merger was when exit began.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#define NR_WORKERS 3
#define PHASES 40
#define SLICE 4096

uint64_t slices[NR_WORKERS][SLICE];
uint64_t shared_total;
uint64_t handed[8] __attribute__((aligned(64)));
int turn;
static pthread_barrier_t bar;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static sem_t sem;

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;

	for (int p = 0; p < PHASES; p++) {
		for (int i = 0; i < SLICE; i++)
			slices[id][i] = (uint64_t)(i + p * id);
		pthread_barrier_wait(&bar);
		pthread_mutex_lock(&mu);
		shared_total += (uint64_t)p;
		pthread_mutex_unlock(&mu);
		/* a ring hand-off: worker id waits for its turn */
		pthread_mutex_lock(&mu);
		while (turn % NR_WORKERS != id)
			pthread_cond_wait(&cv, &mu);
		turn++;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
		if (id == 0)
			sem_post(&sem);
		else if (id == 1)
			sem_wait(&sem);
		if (p % 10 == 0)
			usleep(200);
	}
	if (id == NR_WORKERS - 1)
		handed[0] = (uint64_t)id + 1;
	return NULL;
}

int main(void)
{
	pthread_t th[NR_WORKERS];
	uint64_t sum = 0;

	pthread_barrier_init(&bar, NULL, NR_WORKERS);
	sem_init(&sem, 0, 0);
	for (int k = 0; k < NR_WORKERS; k++)
		pthread_create(&th[k], NULL, worker, (void *)(intptr_t)k);
	for (int k = 0; k < NR_WORKERS; k++)
		pthread_join(th[k], NULL);
	for (int k = 0; k < NR_WORKERS; k++)
		for (int i = 0; i < SLICE; i++)
			sum += slices[k][i] * (uint64_t)(k + 1);
	printf("order_sync: total %llu turn %d sum %llu handed %llu\n",
	       (unsigned long long)shared_total, turn, (unsigned long long)sum,
	       (unsigned long long)handed[0]);
	return 0;
}
