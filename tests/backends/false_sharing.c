/*
 * false_sharing.c - uninstrumented (plain cc) false-sharing workload for
 * the watch backend: two threads increment adjacent words of one struct
 * (one cache line), NR_INC times each.
 *
 * With an argument FIFO the program prints its pid, starts its threads,
 * and lets them run only after one byte arrives on FIFO (the test attaches
 * and arms its breakpoints first), so every increment is counted.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct counters {
	volatile uint64_t a;	/* thread 1 */
	volatile uint64_t b;	/* thread 2 */
} __attribute__((aligned(64)));

struct counters shared_counters;
static long nr_inc = 20000;
static pthread_barrier_t go;

static void *worker(void *arg)
{
	volatile uint64_t *w = arg ? &shared_counters.b : &shared_counters.a;

	pthread_barrier_wait(&go);
	for (long i = 0; i < nr_inc; i++)
		*w = *w + 1;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[2];

	if (argc > 2)
		nr_inc = atol(argv[2]);
	pthread_barrier_init(&go, NULL, 3);
	for (long i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i))
			return 3;	/* the monitor must never make this fail */
	if (argc > 1 && argv[1][0]) {
		char c;
		int fd;

		printf("%d\n", (int)getpid());
		fflush(stdout);
		fd = open(argv[1], O_RDONLY);
		if (fd < 0 || read(fd, &c, 1) != 1)
			return 2;
		close(fd);
	}
	pthread_barrier_wait(&go);
	for (long i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("false_sharing: a=%llu b=%llu\n", (unsigned long long)shared_counters.a,
	       (unsigned long long)shared_counters.b);
	return shared_counters.a == (uint64_t)nr_inc && shared_counters.b == (uint64_t)nr_inc ?
	       0 : 1;
}
